"""An httpx2 transport over aiohttp, for lightkube's ``transport=`` option.

lightkube builds, authenticates and decodes every request as usual (``lightkube.AsyncClient`` and
``lightkube.config.client_adapter.AsyncClient``); this class only moves the bytes, with aiohttp's
connection pool instead of httpcore's. On a 2-core machine httpcore spends about 0.7 ms of CPU per
request (its pool scans every connection on each request), aiohttp about a third of that, which is
what lets one controller process sync thousands of autoscalers per second. ``pyhpa run --http
httpx`` uses lightkube's stock transport instead. Proxies are not supported by this transport.
"""

from __future__ import annotations

import asyncio
import functools
import ssl
from contextvars import ContextVar
from dataclasses import dataclass
from typing import AsyncIterator

import aiohttp
import httpx2
import yarl


# ----- the sync a request is made for (``pyhpa.controller.outputs.load`` counts them per sync) -----
@dataclass(slots=True)
class SyncContext:
    """The sync running in this asyncio context: the autoscaler's key and the API requests made so far."""

    key: str
    requests: int = 0


_CURRENT: ContextVar[SyncContext | None] = ContextVar("pyhpa_current_sync", default=None)


def current_sync() -> SyncContext | None:
    """The sync of the running task (tasks a sync starts inherit it); None outside syncs (informers, events,
    Lease renewals)."""
    return _CURRENT.get()


def set_current_sync(sync: SyncContext | None) -> None:
    """Make ``sync`` the sync of the running task (None: no sync), as ``SyncLoad.begin`` and ``end`` do."""
    _CURRENT.set(sync)


def note_request() -> None:
    """Count one API request for the current sync (called by the transport for every request)."""
    sync = _CURRENT.get()
    if sync is not None:
        sync.requests += 1



_SKIP_HEADERS = frozenset({b"content-length", b"transfer-encoding", b"host"})


@functools.lru_cache(maxsize=64)
def _client_timeout(connect: float | None, read: float | None) -> aiohttp.ClientTimeout:
    return aiohttp.ClientTimeout(total=None, connect=connect, sock_connect=connect, sock_read=read)


def _timeout(request: httpx2.Request) -> aiohttp.ClientTimeout:
    """httpx2's per-request timeouts (``extensions["timeout"]``, seconds; read None = no limit, as watches use)."""
    t = request.extensions.get("timeout") or {}
    return _client_timeout(t.get("connect"), t.get("read"))


@functools.lru_cache(maxsize=256)
def _headers(raw: tuple) -> list[tuple[str, str]]:
    """httpx2's header bytes as aiohttp's strings (requests of one client repeat the same few header sets)."""
    return [(k.decode("latin-1"), v.decode("latin-1")) for k, v in raw if k.lower() not in _SKIP_HEADERS]


class _Body(httpx2.AsyncByteStream):
    """The response body, streamed (watches are read line by line while the server writes)."""

    def __init__(self, response: aiohttp.ClientResponse):
        self._response = response

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self._response.content.iter_any():
                yield chunk
        except asyncio.TimeoutError as err:
            raise httpx2.ReadTimeout(f"read timed out: {err}") from err
        except aiohttp.ClientError as err:
            raise httpx2.RemoteProtocolError(f"connection broken while reading the response: {err!r}") from err

    async def aclose(self) -> None:
        self._response.release()


class AiohttpTransport(httpx2.AsyncBaseTransport):
    """Sends httpx2 requests with one aiohttp session (created on first use, on the running loop).

    ``ssl_context`` is the kubeconfig's (``lightkube.config.client_adapter.verify_cluster``), so CA and
    client certificates apply; ``limit`` caps open connections. Errors become httpx2's exception types
    (ConnectError, ConnectTimeout, ReadTimeout, RemoteProtocolError), as lightkube expects.
    """

    def __init__(self, ssl_context: ssl.SSLContext | None = None, limit: int = 100, user_agent: str | None = None):
        self._ssl = ssl_context
        self._limit = limit
        self._user_agent = user_agent
        self._session: aiohttp.ClientSession | None = None

    def _get_session(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            connector = aiohttp.TCPConnector(limit=self._limit, ssl=self._ssl if self._ssl is not None else False)
            self._session = aiohttp.ClientSession(connector=connector, auto_decompress=False, cookie_jar=aiohttp.DummyCookieJar())
        return self._session

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        note_request()
        if self._user_agent:
            request.headers["User-Agent"] = self._user_agent
        headers = _headers(tuple(request.headers.raw))
        body = await request.aread() if request.method in ("POST", "PUT", "PATCH", "DELETE") else None
        try:
            response = await self._get_session().request(
                request.method, yarl.URL(str(request.url), encoded=True), headers=headers, data=body or None,
                timeout=_timeout(request), allow_redirects=False,
            )
        except asyncio.TimeoutError as err:
            kind = httpx2.ConnectTimeout if isinstance(err, aiohttp.ConnectionTimeoutError) else httpx2.ReadTimeout
            raise kind(f"timed out: {request.method} {request.url.path}") from err
        except aiohttp.ClientConnectionError as err:
            raise httpx2.ConnectError(f"{request.method} {request.url.path}: {err}") from err
        except aiohttp.ClientError as err:
            raise httpx2.RemoteProtocolError(f"{request.method} {request.url.path}: {err!r}") from err
        return httpx2.Response(response.status, headers=list(response.raw_headers), stream=_Body(response),
                               extensions={"http_version": b"HTTP/1.1"})

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None


class CountedTransport(httpx2.AsyncBaseTransport):
    """Another httpx2 transport (``--http httpx``: httpx2's own), with the same accounting as
    ``AiohttpTransport``: each request counts for the current sync and carries ``user_agent``."""

    def __init__(self, inner: httpx2.AsyncBaseTransport, user_agent: str | None = None):
        self._inner = inner
        self._user_agent = user_agent

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        note_request()
        if self._user_agent:
            request.headers["User-Agent"] = self._user_agent
        return await self._inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self._inner.aclose()
