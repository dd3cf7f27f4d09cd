"""What every metric type provides (``MetricType``), the query the controller asks with (``MetricQuery``), and the
pieces the types' modules share: how a ``kubectl get`` TARGETS column shows one metric (``Shown``, ``quantity_text``)
and how a snapshot holds one named answer (``snapshot_named_samples``).

This module knows no metric type by name: the types are the modules beside it, collected in ``REGISTRY``
(``pyhpa.adapters.metric_types``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from ...core.model import AVERAGE_VALUE, MetricSamples, MetricSpec
from ..errors import InputError
from ..metrics_api import fetch_failed
from ..parse import go_quantity_text, number_text
from ..selectors import selector_go, selector_json, selector_text


@dataclass(frozen=True, slots=True)
class MetricQuery:
    """How to ask for one ``spec.metrics[]`` item's values: built once when the autoscaler is read, used every sync.

    ``type`` is the metric type as written (``spec.metrics[].type``: the ``REGISTRY`` key); ``name`` the resource
    (cpu, memory) or metric name; ``container`` for ContainerResource; ``metric_selector`` the metric's label selector
    as text; ``described`` (apiVersion, kind, name) of an Object metric's ``describedObject``; ``params`` what else a
    type needs to ask (the ``Prometheus`` type: its ``pyhpa.adapters.promql.PromQuery``), None for the others.
    """

    type: str
    name: str = ""
    container: str = ""
    metric_selector: str = ""
    described: tuple[str, str, str] | None = None
    params: Any = None


@dataclass(frozen=True, slots=True, kw_only=True)
class MetricType:
    """One metric type (a ``spec.metrics[].type``): how it is read, fetched, recorded and shown. Built by keyword in
    the type's own module; the registry (``pyhpa.adapters.metric_types.REGISTRY``) holds one per type name.

    What it is:

    - ``name``: the ``type`` as written (``Resource``, ``Prometheus``);
    - ``field``: the key of its source in a ``spec.metrics[]`` item (and ``status.currentMetrics[]`` entry), as
      written (``containerResource``);
    - ``api``: where its values come from, as upstream's REST metrics client names the metrics API in errors
      (``resource``, ``custom``, ``external``), or pyhpa's own source (``prometheus``);
    - ``resource``: its values are a resource of the pods (cpu, memory) from metrics.k8s.io, read per pod, with
      Utilization targets and ``utilizationBasis``; ``container``: of one named container; ``per_pod``: one value
      per pod (Resource, ContainerResource, Pods), else one value for the whole target (Object, External).

    Read from the spec (exactly one of the two is set):

    - ``spec(source, target_type, utilization, average_milli, value_milli) -> MetricSpec``, for a type of
      autoscaling/v2: the core's spec from the lightkube model's source (``item.<field>``) and its target, read and
      checked by ``pyhpa.adapters.objects``; ``query(item) -> MetricQuery`` from the lightkube model's
      ``spec.metrics[]`` item;
    - ``extension(item, field, server) -> (MetricSpec, MetricQuery, v2 item)``, for a type autoscaling/v2 lacks: read
      from the item as written (a dict; ``field`` names it in errors, ``server`` the default server, the controller's
      ``--prometheus-url``, a placeholder offline), the core's spec of what it acts as, its query, and the
      autoscaling/v2 item it acts as (what the rest of the HPA is parsed with). Raises InputError naming the field.

    Fetched (exactly one of the two is set):

    - ``ask(client, namespace, query, selector) -> awaitable answer``: its metrics API's call through the
      controller's ``MetricsClient`` (``pyhpa.controller.kube.api``; raises as the client does), the pods' label
      ``selector`` as text; ``shared``: every metric of this ``api`` takes the same answer (one metrics.k8s.io list
      per sync); ``samples(query, answer) -> MetricSamples``: the decoded JSON answer as the core's samples (raises
      InputError naming the field of a malformed answer);
    - ``fetch(http, query) -> awaitable (MetricSamples, answer)``: asks its own server over ``http`` (an
      ``httpx2.AsyncClient``), within the query's own timeout; never raises for the server's trouble (the samples
      carry the error, the answer is the decoded JSON or the error text).

    Recorded in and read from a snapshot (tests/data/conformance/FORMAT.md): its answer is kept under
    ``metrics.<snapshot_key>``, by metric name when ``snapshot_named`` (else one answer for all metrics of the type);
    ``from_snapshot(spec, query, metrics, errors) -> MetricSamples`` reads it back (``query`` None for a type of
    autoscaling/v2, whose ``spec`` says all; ``errors`` the set of ``metrics.errors``; raises InputError naming the
    field of a malformed answer).

    Shown and simulated: ``shown(item) -> Shown``: how ``kubectl get``'s TARGETS column shows the ``spec.metrics[]``
    item as written (kubectl's ``formatHPAMetrics``); ``identity(source) -> (type, name, container)``: what names
    a ``status.currentMetrics[]`` entry of the type (``source`` its ``<field>`` dict; None: the status never holds the
    type); ``title(spec, utilization) -> str``: the metric as a plot's panel names it; ``history(query, namespace,
    pods) -> (PromQL, unit) | None``: the default history query of its workload total (``spec.prediction``;
    ``namespace`` and ``pods`` are PromQL matcher text: the namespace's value and the target's pods' matchers).
    """

    name: str
    field: str
    api: str
    resource: bool = False
    container: bool = False
    per_pod: bool = False
    spec: Callable[[Any, str, int | None, int | None, int | None], MetricSpec] | None = None
    query: Callable[[Any], MetricQuery] | None = None
    extension: Callable[[dict, str, str | None], tuple[MetricSpec, MetricQuery, dict]] | None = None
    ask: Callable[[Any, str, MetricQuery, str], Awaitable[Any]] | None = None
    shared: bool = False
    samples: Callable[[MetricQuery, Any], MetricSamples] | None = None
    fetch: Callable[[Any, MetricQuery], Awaitable[tuple[MetricSamples, Any]]] | None = None
    snapshot_key: str
    snapshot_named: bool = True
    from_snapshot: Callable[[MetricSpec, MetricQuery | None, dict, set], MetricSamples]
    shown: Callable[[dict], Shown]
    identity: Callable[[dict], tuple[str, str, str]] | None = None
    title: Callable[[MetricSpec, bool], str]
    history: Callable[[MetricQuery, str, str], tuple[str, str] | None]

    def container_of(self, metric: Any) -> str:
        """``metric.container`` (a MetricSpec or MetricQuery) for a type of one container, else ""."""
        return metric.container if self.container else ""

    def snapshot_label(self, name: str) -> str:
        """The ``metrics.errors`` entry of a failed call of metric ``name``: ``<snapshot_key>:<name>``, or the key
        alone for a type whose one answer serves all its metrics (``resource``)."""
        return f"{self.snapshot_key}:{name}" if self.snapshot_named else self.snapshot_key

    def readable(self, query: MetricQuery, answer: Any) -> bool:
        """Whether a snapshot can keep ``answer`` as this metric's answer (the loader reads it back): a JSON object
        that ``samples`` reads (a type that fetches itself keeps any JSON answer, its errors too)."""
        if not isinstance(answer, dict):
            return False
        if self.samples is None:
            return True
        try:
            self.samples(query, answer)
        except InputError:
            return False
        return True


#: The ``from_snapshot`` error of a call the snapshot lists in ``metrics.errors``
SNAPSHOT_FAILED = "the metrics API call failed (listed in the snapshot's metrics.errors)"


def named_type(*, read: Callable[[Any, str], MetricSamples], what: str, **fields: Any) -> MetricType:
    """A type whose answers are one per metric name (Pods, Object, External), built by keyword as ``MetricType``
    with its ``samples`` and ``from_snapshot`` made from ``read(answer, field)``, the metrics API answer's reader
    (``pyhpa.adapters.metrics_api``): ``samples`` names the call ``<what> <metric name>`` in errors (as upstream's
    REST metrics client does), ``from_snapshot`` reads ``metrics.<snapshot_key>.<name>`` (``snapshot_named_samples``)."""
    made: list[MetricType] = []

    def samples(q: MetricQuery, answer: Any) -> MetricSamples:
        return read(answer, f"{what} {q.name}")

    def from_snapshot(spec: MetricSpec, q: MetricQuery | None, metrics: dict, errors: set) -> MetricSamples:
        return snapshot_named_samples(made[0], spec.name, metrics, errors, read)

    made.append(MetricType(samples=samples, from_snapshot=from_snapshot, **fields))
    return made[0]


def snapshot_named_samples(t: MetricType, name: str, metrics: dict, errors: set,
                           read: Callable[[Any, str], MetricSamples]) -> MetricSamples:
    """``from_snapshot`` of a type whose answers are kept by metric name (``metrics.<key>.<name>``): the failed call
    as upstream's client reports it, a missing answer, or ``read(answer, field)``."""
    if t.snapshot_label(name) in errors:
        return MetricSamples(error=fetch_failed(t.api, SNAPSHOT_FAILED))
    key = t.snapshot_key
    answer = (metrics.get(key) or {}).get(name)
    if answer is None:
        return MetricSamples(error=f"no {key} metric {name!r} in the snapshot")
    return read(answer, f"metrics.{key}.{name}")


# ----- TARGETS (kubectl's formatHPAMetrics, pyhpa.adapters.printers) --------------------------------------------
#: what kubectl prints for a current value the status lacks
UNKNOWN = "<unknown>"
#: what Go prints for a nil *Quantity
NIL = "<nil>"


def quantity_text(value: Any) -> str:
    """A quantity of the object as kubectl prints it (``Quantity.String()``); ``<nil>`` when absent."""
    if value is None:
        return NIL
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            value = number_text(value)
        except InputError:  # NaN or infinite: no quantity kubectl could read
            return str(value)
    if not isinstance(value, str):
        return str(value)
    return go_quantity_text(value) or value  # text Go does not parse: the API server refused it already


def metric_name(source: Any, key: str = "metric") -> str:
    """The metric name of a source (``metric.name``; ``key`` None: the resource ``name``)."""
    if not isinstance(source, dict):
        return ""
    named = source.get(key) if key else source
    return named.get("name", "") if isinstance(named, dict) else ""


def written_source(item: dict, field: str) -> tuple[dict, dict] | None:
    """(source, target) of a ``spec.metrics[]`` item as written: ``item[field]`` and its ``target`` ({} when not a
    mapping); None when the source is not a mapping."""
    source = item.get(field)
    if not isinstance(source, dict):
        return None
    return source, source.get("target") if isinstance(source.get("target"), dict) else {}


@dataclass(frozen=True, slots=True)
class Shown:
    """How TARGETS shows one metric: its current value is ``current`` of ``status[source].current`` (``percent``:
    an averageUtilization, printed ``N%``; ``required``: ``<unknown>`` unless that value is there, else only
    unless ``status[source]`` is), after ``label`` and before ``/target`` and ``suffix``; ``identity``: what names
    its entry in ``status.currentMetrics`` (type, metric or resource name, container). ``Shown("", "", "")``: a type
    kubectl does not know."""

    source: str
    current: str
    target: str
    label: str = ""
    suffix: str = ""
    percent: bool = False
    required: bool = False
    identity: tuple[str, str, str] = ("", "", "")

    def text(self, status: Any) -> str:
        """This metric's ``current/target`` with ``status`` its ``MetricStatus`` (None: no current value)."""
        if not self.source:
            return "<unknown type>"
        section = status.get(self.source) if isinstance(status, dict) else None
        if not isinstance(section, dict):
            return f"{self.label}{UNKNOWN}/{self.target}{self.suffix}"
        value = (section.get("current") or {}).get(self.current) if isinstance(section.get("current"), dict) else None
        if self.required and value is None:
            current = UNKNOWN
        elif self.percent:
            current = f"{int(value) if isinstance(value, float) and value.is_integer() else value}%"
        else:
            current = quantity_text(value)
        return f"{self.label}{current}/{self.target}{self.suffix}"


#: a metric TARGETS cannot show (no source of its type)
NOT_SHOWN = Shown("", "", "")


def shown_by_value(kind: str, field: str, item: dict) -> Shown:
    """TARGETS of an Object or External metric (and of what acts as one): its AverageValue target (`` (avg)``
    after it, ``<unknown>`` unless the status has the value) or its Value target."""
    found = written_source(item, field)
    if found is None:
        return NOT_SHOWN
    source, target = found
    identity = (kind, metric_name(source), "")
    average = target.get("averageValue")
    if average is not None:
        return Shown(field, "averageValue", quantity_text(average), suffix=" (avg)", required=True, identity=identity)
    return Shown(field, "value", quantity_text(target.get("value")), identity=identity)


def metric_identity(kind: str) -> Callable[[dict], tuple[str, str, str]]:
    """``identity`` of a type whose source names a metric (``metric.name``): Pods, Object, External."""
    def identity(source: dict) -> tuple[str, str, str]:
        return kind, metric_name(source), ""
    return identity


def value_title(spec: MetricSpec, utilization: bool) -> str:
    """``title`` of a metric of one value (Object, External): ``NAME per pod`` for an AverageValue target."""
    return f"{spec.name} per pod" if spec.target_type == AVERAGE_VALUE else spec.name


def named_spec(kind: str, source: Any, target_type: str, utilization: int | None, average: int | None,
               value: int | None, described: tuple[str, str] | None = None, described_api_version: str = "") -> MetricSpec:
    """``spec`` of a type whose source names a metric (``source.metric``: name and label selector, the selector
    also as the API's JSON for ``status.currentMetrics``)."""
    metric = source.metric
    return MetricSpec(kind, metric.name, target_type, utilization, average, value, "", selector_text(metric.selector),
                      described, selector_go=selector_go(metric.selector), selector_json=selector_json(metric.selector),
                      described_api_version=described_api_version)
