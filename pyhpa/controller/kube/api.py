"""What the controller asks of Kubernetes, as two small ports, and their lightkube implementation.

``Cluster``: list/watch autoscalers and pods, the target's scale subresource, the autoscaler's
status subresource and events.k8s.io/v1 Events. ``MetricsClient``: the metrics.k8s.io,
custom.metrics.k8s.io and external.metrics.k8s.io APIs. ``LightkubeCluster`` uses
``lightkube.AsyncClient``; paths lightkube has no resources for (API discovery, the metrics APIs)
go through ``RawApi``, lightkube's httpx2 adapter client built from the same KubeConfig. Tests and
benchmarks can substitute in-memory implementations of both ports.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, AsyncIterator, Protocol
from urllib.parse import quote, urlencode

import httpx2
import msgspec
from lightkube import ApiError, AsyncClient
from lightkube.config.client_adapter import AsyncClient as AdapterClient
from lightkube.config.client_adapter import ConnectionParams, verify_cluster
from lightkube.config.kubeconfig import SingleConfig
from lightkube.core.resource_registry import resource_registry
from lightkube.generic_resource import create_namespaced_resource
from lightkube.resources.autoscaling_v2 import HorizontalPodAutoscaler as HpaResource
from lightkube.resources.events_v1 import Event as EventResource
from lightkube.types import PatchType

from ...core import Scale
from .resources import API_VERSION, PLURAL, HorizontalAutoscaler, PodView, TargetRef
from .transport import AiohttpTransport, CountedTransport

RESOURCE_METRICS = "/apis/metrics.k8s.io/v1beta1"
CUSTOM_METRICS_GROUP = "custom.metrics.k8s.io"
EXTERNAL_METRICS = "/apis/external.metrics.k8s.io/v1beta1"


class ApiFailure(Exception):
    """A failed API call. ``code`` is the HTTP status, 0 when there was no answer (timeout, connection)."""

    def __init__(self, code: int, message: str, reason: str = ""):
        super().__init__(message)
        self.code = code
        self.message = message
        self.reason = reason


class SpecError(Exception):
    """The autoscaler's spec cannot work (unknown target kind, no scale subresource): upstream's errSpec."""


def as_failure(err: BaseException, what: str = "") -> ApiFailure:
    """``err`` (lightkube ApiError, httpx2 error, timeout) as an ApiFailure; ``what`` prefixes the message."""
    prefix = f"{what}: " if what else ""
    if isinstance(err, ApiFailure):
        return err
    if isinstance(err, ApiError):
        st = err.status
        return ApiFailure(st.code or err.response.status_code, prefix + (st.message or str(err)), st.reason or "")
    if isinstance(err, httpx2.HTTPStatusError):
        return ApiFailure(err.response.status_code, prefix + _status_message(err.response))
    if isinstance(err, (httpx2.TimeoutException, asyncio.TimeoutError, TimeoutError)):
        return ApiFailure(0, prefix + f"timed out{': ' + str(err) if str(err) else ''}", "Timeout")
    if isinstance(err, httpx2.HTTPError):
        return ApiFailure(0, prefix + (str(err) or repr(err)), "ConnectionError")
    return ApiFailure(0, prefix + repr(err), "InternalError")


def _status_message(response: httpx2.Response) -> str:
    """The Status message of an error answer; "HTTP <code>" when there is none, or when the body was not
    read (a streamed watch answer: reading ``content`` would raise, and kill the informer that asked)."""
    try:
        body = msgspec.json.decode(response.content)
        return str(body.get("message") or f"HTTP {response.status_code}")
    except (msgspec.DecodeError, AttributeError, httpx2.ResponseNotRead):
        return f"HTTP {response.status_code}"


_JSON = {"Content-Type": "application/json", "Accept": "application/json"}
_ACCEPT = {"Accept": "application/json"}


def _status_reason(response: httpx2.Response) -> str:
    try:
        return str(msgspec.json.decode(response.content).get("reason") or "")
    except (msgspec.DecodeError, AttributeError, httpx2.ResponseNotRead):
        return ""


class ListWatch(Protocol):
    """One resource type's LIST (items and the list's resourceVersion) and WATCH from a resourceVersion."""

    async def list(self) -> tuple[list, str]: ...

    def watch(self, resource_version: str) -> AsyncIterator[tuple[str, Any]]: ...


class Cluster(Protocol):
    """The Kubernetes API calls of the controller (all but the metrics APIs)."""

    def autoscalers(self, namespace: str | None) -> ListWatch: ...

    def pods(self, namespace: str | None) -> ListWatch: ...

    def hpas(self, namespace: str | None) -> ListWatch:
        """autoscaling/v2 HorizontalPodAutoscalers (``--preview`` only)."""

    async def get_scale(self, namespace: str, ref: TargetRef) -> tuple[Scale, Any]: ...

    async def update_scale(self, namespace: str, ref: TargetRef, handle: Any, replicas: int) -> None: ...

    async def get_autoscaler(self, namespace: str, name: str) -> dict: ...

    async def replace_status(self, namespace: str, name: str, body: dict) -> dict: ...

    async def create_event(self, event: Any) -> None: ...

    async def patch_event(self, namespace: str, name: str, patch: dict) -> None: ...

    async def close(self) -> None: ...


class MetricsClient(Protocol):
    """The three metrics APIs; each returns the decoded JSON answer or raises ApiFailure."""

    async def resource_metrics(self, namespace: str, selector: str) -> dict: ...

    async def pods_metric(self, namespace: str, metric: str, selector: str, metric_selector: str) -> dict: ...

    async def object_metric(self, namespace: str, described: tuple[str, str, str], metric: str,
                            metric_selector: str) -> dict: ...

    async def external_metric(self, namespace: str, metric: str, selector: str) -> dict: ...


@dataclass(frozen=True, slots=True)
class ResourceInfo:
    """A served resource found by discovery: ``plural``, ``namespaced``, whether it has ``/scale``."""

    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool
    scalable: bool

    @property
    def group_resource(self) -> str:
        """``deployments.apps`` (core resources: ``services``), as the custom metrics API names them."""
        return f"{self.plural}.{self.group}" if self.group else self.plural


class RawApi:
    """JSON GETs on paths lightkube has no resource for, and the hot PUT of the status subresource, via
    lightkube's httpx2 adapter client (same KubeConfig, authentication and transport as lightkube's)."""

    def __init__(self, config: SingleConfig, timeout: float, transport: httpx2.AsyncBaseTransport | None = None,
                 trust_env: bool = True):
        params = ConnectionParams(timeout=httpx2.Timeout(timeout), trust_env=trust_env, transport=transport)
        self._http = AdapterClient(config, params)
        self._base = str(self._http.base_url).rstrip("/")
        self._timeout = httpx2.Timeout(timeout).as_dict()
        self._urls: dict[tuple, httpx2.URL] = {}

    def _url(self, path: str, params: dict | None, keep: bool = True) -> httpx2.URL:
        """The request URL (base URL + ``path`` + the non-empty ``params``), built once per (path, query) and
        kept (``keep``): every sync of an autoscaler asks the same metrics URLs, and httpx2 spends most of a
        request's CPU parsing them (its ``build_request`` parses each URL twice). A URL of one object's
        status is not kept (about 0.5 KB each, and written only when the status changes)."""
        query = tuple((k, v) for k, v in (params or {}).items() if v)
        key = (path, query)
        url = self._urls.get(key)
        if url is None:
            text = self._base + path + ("?" + urlencode(query, quote_via=quote) if query else "")
            url = httpx2.URL(text)
            if keep:
                if len(self._urls) >= 100_000:
                    self._urls.clear()
                self._urls[key] = url
        return url

    async def _send(self, method: str, url: httpx2.URL, timeout: float | None = None, content: bytes | None = None,
                    headers: dict | None = None) -> httpx2.Response:
        """Send one request through the client (its authentication and transport), without ``build_request``;
        raises ApiFailure for transport errors and error answers (with the Status message and reason)."""
        extensions = {"timeout": self._timeout if timeout is None else httpx2.Timeout(timeout).as_dict()}
        request = httpx2.Request(method, url, headers=headers, content=content, extensions=extensions)
        try:
            response = await self._http.send(request)
        except httpx2.HTTPError as err:
            raise as_failure(err) from None
        if response.status_code >= 400:
            raise ApiFailure(response.status_code, _status_message(response), _status_reason(response))
        return response

    async def get_json(self, path: str, params: dict | None = None, timeout: float | None = None) -> Any:
        """GET ``path`` (``timeout`` seconds, default the client's); raises ApiFailure with the Status message."""
        response = await self._send("GET", self._url(path, params), timeout, headers=_ACCEPT)
        return msgspec.json.decode(response.content)

    async def put_json(self, path: str, body: dict, params: dict | None = None) -> Any:
        """PUT ``body`` (JSON) to ``path``; the decoded answer, or ApiFailure with the Status message and reason."""
        response = await self._send("PUT", self._url(path, params, keep=False), content=msgspec.json.encode(body),
                                    headers=_JSON)
        return msgspec.json.decode(response.content)

    async def send_json(self, method: str, path: str, body: dict | None = None,
                        content_type: str = "application/json") -> Any:
        """``method`` (POST, PATCH, DELETE, ...) on ``path`` with ``body`` as JSON (``content_type``: a patch's
        ``application/merge-patch+json``); the decoded answer, or ApiFailure with the Status message and reason."""
        content = None if body is None else msgspec.json.encode(body)
        response = await self._send(method, self._url(path, None, keep=False), content=content,
                                    headers={**_ACCEPT, "Content-Type": content_type})
        return msgspec.json.decode(response.content) if response.content else None

    async def close(self) -> None:
        await self._http.aclose()


class Discovery:
    """API discovery (``/api/v1``, ``/apis/{group}/{version}``), cached per group-version.

    Upstream resolves the scale target with a RESTMapper over discovery; a group-version that does not
    know the kind is fetched again at most every ``refresh_seconds``.
    """

    def __init__(self, raw: RawApi, refresh_seconds: float = 30.0):
        self._raw = raw
        self._refresh = refresh_seconds
        self._lists: dict[str, tuple[float, dict]] = {}
        self._inflight: dict[str, asyncio.Future] = {}
        self._preferred: dict[str, str] = {}

    async def _resource_list(self, api_version: str, force: bool) -> dict:
        loop = asyncio.get_running_loop()
        hit = self._lists.get(api_version)
        if hit is not None and not (force and loop.time() - hit[0] > self._refresh):
            return hit[1]
        pending = self._inflight.get(api_version)
        if pending is None:  # one request per group-version, however many syncs ask at once
            pending = self._inflight[api_version] = asyncio.ensure_future(self._fetch(api_version))
            pending.add_done_callback(lambda _: self._inflight.pop(api_version, None))
        return await asyncio.shield(pending)

    async def _fetch(self, api_version: str) -> dict:
        path = f"/api/{api_version}" if "/" not in api_version else f"/apis/{api_version}"
        try:
            doc = await self._raw.get_json(path)
        except ApiFailure as err:
            if err.code == 404:
                raise SpecError(f"no matches for API version {api_version!r}") from None
            raise
        self._lists[api_version] = (asyncio.get_running_loop().time(), doc)
        return doc

    async def resource_for(self, api_version: str, kind: str) -> ResourceInfo:
        """The resource of ``kind`` in ``api_version`` ("" means core "v1"); SpecError when not served."""
        api_version = api_version or "v1"
        for force in (False, True):
            info = _find_kind(await self._resource_list(api_version, force), api_version, kind)
            if info is not None:
                return info
        raise SpecError(f'no matches for kind "{kind}" in version "{api_version}"')

    async def preferred_version(self, group: str, default: str) -> str:
        """The preferred version of ``group`` (``default`` when discovery does not answer)."""
        if group not in self._preferred:
            try:
                doc = await self._raw.get_json(f"/apis/{group}")
                self._preferred[group] = doc["preferredVersion"]["version"]
            except (ApiFailure, KeyError, TypeError):
                return default
        return self._preferred[group]


def _find_kind(doc: dict, api_version: str, kind: str) -> ResourceInfo | None:
    resources = doc.get("resources") or []
    names = {r.get("name") for r in resources}
    group, _, version = api_version.rpartition("/")
    for r in resources:
        if r.get("kind") == kind and "/" not in r.get("name", ""):
            plural = r["name"]
            return ResourceInfo(group, version, kind, plural, bool(r.get("namespaced")), f"{plural}/scale" in names)
    return None


def scale_resource(info: ResourceInfo) -> Any:
    """The lightkube resource class of a scale target (built-in when lightkube has it, else generic)."""
    api_version = f"{info.group}/{info.version}" if info.group else info.version
    res = resource_registry.get(api_version, info.kind)
    if res is None:
        try:
            res = resource_registry.load(api_version, info.kind)
        except Exception:  # noqa: BLE001 - not a lightkube built-in: a custom resource
            res = create_namespaced_resource(info.group, info.version, info.kind, info.plural)
    if getattr(res, "Scale", None) is None:
        raise SpecError(f"{info.kind}.{info.group or 'core'} has no scale subresource in lightkube")
    return res


class LightkubeListWatch:
    """LIST (in chunks) and WATCH of one lightkube resource in one namespace or all (``None``)."""

    def __init__(self, client: AsyncClient, res: Any, namespace: str | None, chunk_size: int, watch_timeout: int):
        self._client = client
        self._res = res
        self._ns = namespace or "*"
        self._chunk = chunk_size
        self._timeout = watch_timeout

    async def list(self) -> tuple[list, str]:
        it = self._client.list(self._res, namespace=self._ns, chunk_size=self._chunk or None)
        items = [item async for item in it]
        return items, it.resourceVersion

    def stream(self) -> Any:
        """The list as it is read, page by page (``chunk_size`` objects per request): an async iterable of
        objects whose ``resourceVersion`` (the list's) is known once iterated."""
        return self._client.list(self._res, namespace=self._ns, chunk_size=self._chunk or None)

    def watch(self, resource_version: str) -> AsyncIterator[tuple[str, Any]]:
        return self._client.watch(self._res, namespace=self._ns, resource_version=resource_version,
                                  server_timeout=self._timeout)


def transport_for(config: SingleConfig, http: str, user_agent: str | None = None) -> httpx2.AsyncBaseTransport:
    """``http`` "aiohttp": an ``AiohttpTransport``; "httpx": httpx2's own transport; both with the kubeconfig's
    TLS settings, counting requests per sync (``pyhpa.controller.outputs.load``) and sending ``user_agent``."""
    ctx = None
    if config.cluster.server.startswith("https"):
        ctx = verify_cluster(config.cluster, config.user, config.abs_file)
    if http == "httpx":
        return CountedTransport(httpx2.AsyncHTTPTransport(verify=ctx if ctx is not None else True), user_agent)
    return AiohttpTransport(ctx, user_agent=user_agent)


class LightkubeCluster:
    """``Cluster`` and ``MetricsClient`` over lightkube's AsyncClient (one KubeConfig, one client each)."""

    def __init__(self, config: SingleConfig, api_timeout: float, field_manager: str, chunk_size: int = 500,
                 watch_timeout: int = 300, http: str = "aiohttp", trust_env: bool = True, user_agent: str | None = None):
        self.client = AsyncClient(config, timeout=httpx2.Timeout(api_timeout), field_manager=field_manager,
                                  trust_env=trust_env, transport=transport_for(config, http, user_agent))
        self.raw = RawApi(config, api_timeout, transport_for(config, http, user_agent), trust_env)
        self.discovery = Discovery(self.raw)
        self._chunk, self._watch_timeout = chunk_size, watch_timeout
        self._write_params = {"fieldManager": field_manager} if field_manager else None

    def autoscalers(self, namespace: str | None) -> ListWatch:
        return LightkubeListWatch(self.client, HorizontalAutoscaler, namespace, self._chunk, self._watch_timeout)

    def pods(self, namespace: str | None) -> ListWatch:
        """Pods decoded as ``PodView`` (``pyhpa.controller.cache.pods``): only the fields a sync reads."""
        return LightkubeListWatch(self.client, PodView, namespace, self._chunk, self._watch_timeout)

    def hpas(self, namespace: str | None) -> ListWatch:
        return LightkubeListWatch(self.client, HpaResource, namespace, self._chunk, self._watch_timeout)

    def listwatch(self, res: Any, namespace: str | None) -> ListWatch:
        """LIST/WATCH of any lightkube resource class (the Scale cache's workload kinds)."""
        return LightkubeListWatch(self.client, res, namespace, self._chunk, self._watch_timeout)

    async def get_scale(self, namespace: str, ref: TargetRef) -> tuple[Scale, Any]:
        """GET the target's ``autoscaling/v1`` Scale; SpecError when the kind has no scale subresource."""
        info = await self.discovery.resource_for(ref.api_version, ref.kind)
        if not info.scalable:
            raise SpecError(f"{ref.kind} {ref.name} has no scale subresource")
        res = scale_resource(info)
        try:
            obj = await self.client.get(res.Scale, ref.name, namespace=namespace)
        except Exception as err:  # noqa: BLE001 - every failure becomes FailedGetScale
            raise as_failure(err) from None
        status = obj.status
        return Scale((obj.spec.replicas or 0) if obj.spec else 0, status.replicas if status else 0,
                     (status.selector or "") if status else ""), obj

    async def update_scale(self, namespace: str, ref: TargetRef, handle: Any, replicas: int) -> None:
        """PUT the Scale read this sync with ``spec.replicas`` changed (409 when the target moved since)."""
        handle.spec.replicas = replicas
        try:
            await self.client.replace(handle, ref.name, namespace=namespace)
        except Exception as err:  # noqa: BLE001
            raise as_failure(err) from None

    async def get_autoscaler(self, namespace: str, name: str) -> dict:
        try:
            return dict(await self.client.get(HorizontalAutoscaler, name, namespace=namespace))
        except Exception as err:  # noqa: BLE001
            raise as_failure(err) from None

    async def replace_status(self, namespace: str, name: str, body: dict) -> dict:
        """PUT ``/status`` (``body`` carries metadata.resourceVersion: 409 when stale). Sent as JSON by ``RawApi``
        rather than through a lightkube model: every autoscaler's first sync writes it (a third of the
        controller's CPU in that round went to lightkube's request building and response parsing)."""
        path = f"/apis/{API_VERSION}/namespaces/{namespace}/{PLURAL}/{name}/status"
        return await self.raw.put_json(path, body, self._write_params)

    async def create_event(self, event: Any) -> None:
        try:
            await self.client.create(event)
        except Exception as err:  # noqa: BLE001
            raise as_failure(err) from None

    async def patch_event(self, namespace: str, name: str, patch: dict) -> None:
        try:
            await self.client.patch(EventResource, name, patch, namespace=namespace, patch_type=PatchType.MERGE)
        except Exception as err:  # noqa: BLE001
            raise as_failure(err) from None

    async def close(self) -> None:
        await self.client.close()
        await self.raw.close()


class HttpMetrics:
    """``MetricsClient`` over ``RawApi`` (the metrics APIs have no lightkube resources).

    Paths follow upstream's metrics clients: ``metrics.k8s.io/v1beta1 .../pods?labelSelector=``,
    ``custom.metrics.k8s.io/<preferred> .../pods/*/<metric>`` and ``.../<group-resource>/<name>/<metric>``
    (a Namespace: ``/namespaces/<ns>/metrics/<metric>``), ``external.metrics.k8s.io/v1beta1 .../<metric>``.
    """

    def __init__(self, raw: RawApi, discovery: Discovery, timeout: float | None = None):
        self._raw = raw
        self._discovery = discovery
        self._timeout = timeout

    async def _get(self, path: str, params: dict) -> Any:
        return await self._raw.get_json(path, params, self._timeout)

    async def _custom_base(self) -> str:
        version = await self._discovery.preferred_version(CUSTOM_METRICS_GROUP, "v1beta2")
        return f"/apis/{CUSTOM_METRICS_GROUP}/{version}"

    async def resource_metrics(self, namespace: str, selector: str) -> dict:
        return await self._get(f"{RESOURCE_METRICS}/namespaces/{namespace}/pods", {"labelSelector": selector})

    async def pods_metric(self, namespace: str, metric: str, selector: str, metric_selector: str) -> dict:
        path = f"{await self._custom_base()}/namespaces/{namespace}/pods/*/{quote(metric, safe='')}"
        return await self._get(path, {"labelSelector": selector, "metricLabelSelector": metric_selector})

    async def object_metric(self, namespace: str, described: tuple[str, str, str], metric: str,
                            metric_selector: str) -> dict:
        api_version, kind, name = described
        base, m = await self._custom_base(), quote(metric, safe="")
        if kind == "Namespace" and api_version in ("", "v1"):
            path = f"{base}/namespaces/{namespace}/metrics/{m}"
        else:
            try:
                info = await self._discovery.resource_for(api_version, kind)
            except SpecError as err:
                raise ApiFailure(404, str(err)) from None
            path = f"{base}/namespaces/{namespace}/{info.group_resource}/{quote(name, safe='')}/{m}"
        return await self._get(path, {"metricLabelSelector": metric_selector})

    async def external_metric(self, namespace: str, metric: str, selector: str) -> dict:
        path = f"{EXTERNAL_METRICS}/namespaces/{namespace}/{quote(metric, safe='')}"
        return await self._get(path, {"labelSelector": selector})
