"""The aiohttp application: URL parsing, verbs, watch streams, the request log and fault middleware."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Optional

from aiohttp import web

from . import discovery
from .errors import KubeError, bad_request, json_response, path_not_found
from .faults import apply_fault, hang
from .metrics import METRICS_VERSIONS
from .ops import int_param, parse_body
from .registry import ResourceType
from .selectors import parse_field_selector, parse_label_selector
from .store import ABORT, BOOKMARK, CUT, STOP, Event, Watcher

if TYPE_CHECKING:
    from .server import KubeDouble

log = logging.getLogger("kubedouble")
TRUE = ("true", "1")


@dataclass(frozen=True)
class LoggedRequest:
    """One request as received: ``at`` is the wall-clock time (epoch seconds) it reached the double."""

    method: str
    path: str
    query: dict
    user_agent: str
    at: float


@dataclass
class Target:
    """A parsed resource URL."""

    rt: ResourceType
    version: str
    ns: Optional[str]
    name: Optional[str]
    sub: Optional[str]
    watch_prefix: bool = False


class Routes:
    """Builds the ``web.Application`` for one ``KubeDouble``."""

    def __init__(self, kd: "KubeDouble"):
        self.kd = kd

    def app(self) -> web.Application:
        """The application with discovery, resource and metrics routes."""
        app = web.Application(middlewares=[self.middleware], client_max_size=64 * 1024 * 1024)
        app.router.add_get("/version", self.version)
        for path in ("/healthz", "/readyz", "/livez"):
            app.router.add_get(path, self.healthz)
        app.router.add_get("/api", self.api_root)
        app.router.add_get("/apis", self.apis_root)
        app.router.add_route("*", "/api/{tail:.*}", self.dispatch)
        app.router.add_route("*", "/apis/{tail:.*}", self.dispatch)
        return app

    # ----- middleware: request log, faults, errors as Status ------------------------------------------
    @web.middleware
    async def middleware(self, request: web.Request, handler: Any) -> web.StreamResponse:
        """Log the request, apply a matching fault, and turn every failure into a ``Status``."""
        self.kd.requests.append((request.method, request.path, dict(request.query)))
        self.kd.request_log.append(LoggedRequest(request.method, request.path, dict(request.query),
                                                 request.headers.get("User-Agent", ""), time.time()))
        try:
            fault = self.kd.faults.take(request)
            if fault is not None and fault.lost:
                await handler(request)  # carried out; its answer is lost
                await hang(request, self.kd._stopping)
            if fault is not None:
                await apply_fault(fault, request, self.kd._stopping)
            return await handler(request)
        except KubeError as e:
            if e.record:
                await self._record_invalid(request, e)
            return e.response()
        except web.HTTPException as e:
            if e.status < 400:
                raise
            return KubeError(e.status, e.reason or "error").response()
        except Exception as e:  # noqa: BLE001 - a double must answer, not crash
            log.exception("kubedouble internal error")
            return KubeError(500, f"kubedouble internal error: {e!r}").response()

    async def _record_invalid(self, request: web.Request, err: KubeError) -> None:
        raw = await request.read()
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode(errors="replace")
        self.kd.invalid_requests.append({"method": request.method, "path": request.path,
                                         "query": dict(request.query), "code": err.code, "reason": err.reason,
                                         "message": err.message, "body": body})

    # ----- discovery ----------------------------------------------------------------------------------
    async def version(self, request: web.Request) -> web.Response:
        """``/version``."""
        return json_response(discovery.version_doc(self.kd.k8s_minor))

    async def healthz(self, request: web.Request) -> web.Response:
        """Liveness endpoints answer ``ok``."""
        return web.Response(text="ok")

    async def api_root(self, request: web.Request) -> web.Response:
        """``/api``."""
        return json_response(discovery.api_versions())

    async def apis_root(self, request: web.Request) -> web.Response:
        """``/apis``."""
        return json_response(discovery.api_group_list(self.kd.registry))

    def _discover(self, group: str, version: Optional[str]) -> web.Response:
        if version is None:
            doc = discovery.api_versions() if not group else discovery.api_group(self.kd.registry, group)
        else:
            doc = discovery.resource_list(self.kd.registry, self.kd.metrics, group, version)
        if doc is None:
            raise path_not_found()
        return json_response(doc)

    # ----- dispatch -----------------------------------------------------------------------------------
    async def dispatch(self, request: web.Request) -> web.StreamResponse:
        """Route ``/api/...`` and ``/apis/...`` to discovery, metrics or resource verbs."""
        parts = [p for p in request.path.split("/") if p]
        if parts[0] == "api":
            group, rest = "", parts[1:]
        else:
            group, rest = parts[1], parts[2:]
        version, rest = (rest[0], rest[1:]) if rest else (None, [])
        if not rest:
            if request.method != "GET":
                raise KubeError(405, "the server does not allow this method on the requested resource")
            return self._discover(group, version)
        if group in METRICS_VERSIONS:
            return self._metrics(request, group, version, rest)
        return await self._resource(request, self._target(group, version, rest))

    def _metrics(self, request: web.Request, group: str, version: str, rest: list[str]) -> web.Response:
        if METRICS_VERSIONS[group] != version:
            raise path_not_found()
        if request.method != "GET":
            raise KubeError(405, "the server does not allow this method on the requested resource")
        return json_response(self.kd.metrics.handle(group, rest, dict(request.query)))

    def _target(self, group: str, version: str, rest: list[str]) -> Target:
        watch_prefix = rest[0] == "watch"
        rest = rest[1:] if watch_prefix else rest
        ns = None
        if len(rest) >= 3 and rest[0] == "namespaces" and self.kd.registry.lookup(group, version, rest[2]):
            ns, rest = rest[1], rest[2:]
        rt = self.kd.registry.lookup(group, version, rest[0]) if rest else None
        if rt is None or len(rest) > 3:
            raise path_not_found()
        name, sub = (rest[1:] + [None, None])[:2]
        scoped_wrong = (ns is not None and not rt.namespaced) or (name and rt.namespaced and ns is None)
        bad_sub = sub is not None and not ((sub == "status" and rt.status) or (sub == "scale" and rt.scale))
        if scoped_wrong or bad_sub:
            raise path_not_found()
        return Target(rt, version, ns, name, sub, watch_prefix)

    async def _resource(self, request: web.Request, t: Target) -> web.StreamResponse:
        query, api, m = dict(request.query), self.kd.api, request.method
        dry_run = bool(query.get("dryRun"))
        if m == "GET" and t.name is None:
            if t.watch_prefix or query.get("watch") in TRUE:
                return await self.watch(request, t, query)
            return json_response(api.list(t.rt, t.version, t.ns, query))
        if m == "GET":
            if t.sub == "scale":
                return json_response(api.get_scale(t.rt, t.ns, t.name))
            return json_response(api.get(t.rt, t.version, t.ns, t.name))
        if m == "POST" and t.name is None and (t.ns or not t.rt.namespaced):
            body = parse_body(await request.read())
            return json_response(api.create(t.rt, t.version, t.ns, body, dry_run), 201)
        if m == "PUT" and t.name:
            body = parse_body(await request.read())
            return json_response(api.update(t.rt, t.version, t.ns, t.name, body, t.sub, dry_run))
        if m == "PATCH" and t.name:
            obj, created = api.patch(t.rt, t.version, t.ns, t.name, request.headers.get("Content-Type", ""),
                                     await request.read(), query, t.sub)
            return json_response(obj, 201 if created else 200)
        if m == "DELETE" and t.sub is None:
            return await self._delete(request, t, query, dry_run)
        raise KubeError(405, "the server does not allow this method on the requested resource")

    async def _delete(self, request: web.Request, t: Target, query: dict, dry_run: bool) -> web.Response:
        raw = await request.read()
        options = parse_body(raw) if raw.strip() else None
        if t.name is None:
            return json_response(self.kd.api.delete_collection(t.rt, t.version, t.ns, query))
        return json_response(self.kd.api.delete(t.rt, t.ns, t.name, options, dry_run))

    # ----- watch --------------------------------------------------------------------------------------
    async def watch(self, request: web.Request, t: Target, query: dict) -> web.StreamResponse:
        """Chunked newline-delimited watch events, replaying history after ``resourceVersion``."""
        since = self._since(query.get("resourceVersion"))
        w = Watcher(t.rt.key, t.ns, parse_label_selector(query.get("labelSelector")),
                    parse_field_selector(query.get("fieldSelector"), t.rt.field_selectors), request.path,
                    query.get("allowWatchBookmarks") in TRUE, asyncio.get_running_loop())
        timeout = float(int_param(query, "timeoutSeconds")) if query.get("timeoutSeconds") else None
        resp = web.StreamResponse(headers={"Content-Type": "application/json"})
        resp.enable_chunked_encoding()
        await resp.prepare(request)
        try:
            first = self.kd.store.open_watch(w, since)
        except KubeError as e:  # 410 Expired travels inside the stream, like the real server
            await self._send(resp, "ERROR", e.body())
            await resp.write_eof()
            return resp
        try:
            for etype, obj in first:
                await self._send(resp, etype, self.kd.api.render(t.rt, t.version, obj))
            if await self._pump(request, resp, w, t, timeout):
                await resp.write_eof()
        except (ConnectionError, RuntimeError):
            pass
        finally:
            self.kd.store.close_watch(w)
        return resp

    @staticmethod
    def _since(rv: Optional[str]) -> Optional[int]:
        if rv in (None, "", "0"):
            return None
        try:
            return int(rv)
        except ValueError as e:
            raise bad_request(f"invalid resource version: {rv}", record=False) from e

    @staticmethod
    async def _send(resp: web.StreamResponse, etype: str, obj: dict) -> None:
        await resp.write(json.dumps({"type": etype, "object": obj}).encode() + b"\n")

    async def _pump(self, request: web.Request, resp: web.StreamResponse, w: Watcher, t: Target,
                    timeout: Optional[float]) -> bool:
        """Forward queued events until timeout/cut/stop; returns False when the stream was aborted."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout if timeout is not None else None
        while deadline is None or loop.time() < deadline:
            wait = 1.0 if deadline is None else min(1.0, max(0.0, deadline - loop.time()))
            try:
                item = await asyncio.wait_for(w.queue.get(), wait)
            except asyncio.TimeoutError:
                if request.transport is None or request.transport.is_closing():
                    return False
                continue
            if not await self._forward(request, resp, w, t, item):
                return item != ABORT
        return True

    async def _forward(self, request: web.Request, resp: web.StreamResponse, w: Watcher, t: Target,
                       item: Any) -> bool:
        """Write one queued item; False means the stream must end."""
        if item in (STOP, CUT):
            return False
        if item == ABORT:
            if request.transport is not None:
                request.transport.close()
            return False
        if isinstance(item, tuple) and item[0] == BOOKMARK:
            if w.bookmarks:
                meta = {"resourceVersion": str(item[1])}
                await self._send(resp, "BOOKMARK", {"kind": t.rt.kind, "apiVersion": t.rt.api_version(t.version),
                                                    "metadata": meta})
            return True
        if isinstance(item, Event) and (etype := w.translate(item)):
            await self._send(resp, etype, self.kd.api.render(t.rt, t.version, dict(item.obj)))
        return True
