"""``/healthz``, ``/readyz`` and ``/metrics`` (Prometheus text format) on aiohttp, on the controller's loop.

``/healthz`` answers 200 while the controller's loop runs (a blocked loop cannot answer: that is the
liveness signal); ``/readyz`` answers 200 once the informers have synced and until shutdown begins,
503 otherwise; ``/metrics`` exposes the controller's registry (``pyhpa.controller.outputs.monitor``; ``exposition``: how its text
is written, ``Monitor.exposition`` for the controller).
"""

from __future__ import annotations

import errno
from typing import Callable

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from ...adapters.errors import InputError


class HealthServer:
    """Serves the three endpoints on ``host:port`` (port 0: an ephemeral port, see ``port`` after start)."""

    def __init__(self, registry: CollectorRegistry, ready: Callable[[], bool], host: str = "0.0.0.0", port: int = 8080,
                 exposition: Callable[[], bytes] | None = None):
        self._registry = registry
        self._exposition = exposition or (lambda: generate_latest(registry))
        self._ready = ready
        self.host = host
        self.port = port
        self._runner: web.AppRunner | None = None

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/healthz", self._healthz)
        app.router.add_get("/readyz", self._readyz)
        app.router.add_get("/metrics", self._metrics)
        return app

    async def start(self) -> None:
        """Listen; raises InputError naming ``--health-port`` when the address cannot be bound (in use,
        not allowed, unknown host)."""
        self._runner = web.AppRunner(self.app(), access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port)
        try:
            await site.start()
        except OSError as err:
            await self.stop()
            problem = "already in use" if err.errno == errno.EADDRINUSE else (err.strerror or str(err))
            raise InputError(f"cannot serve /healthz, /readyz and /metrics on {self.host}:{self.port}: {problem}",
                             field="--health-port") from None
        self.port = self._runner.addresses[0][1]

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def _healthz(self, request: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def _readyz(self, request: web.Request) -> web.Response:
        if self._ready():
            return web.Response(text="ok")
        return web.Response(status=503, text="not ready: informers not synced or shutting down")

    async def _metrics(self, request: web.Request) -> web.Response:
        body = self._exposition()
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})
