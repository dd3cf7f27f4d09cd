"""The fleet file: workloads (each an autoscaler, its Deployment, a workload profile and a trace) on node pools,
a scheduler and a node autoscaler, as typed structs; ``load_fleet`` reads and checks it.

::

    apiVersion: pyhpa.dev/v1alpha1
    kind: Fleet
    metadata: {name: shop}
    spec:
      scheduler: {scoringStrategy: LeastAllocated}
      nodeAutoscaler:
        model: cluster-autoscaler            # or karpenter
        cluster-autoscaler: {scale-down-unneeded-time: 10m}
      nodePools:
      - name: general
        labels: {pool: general}
        instanceTypes: [{name: m5.xlarge, cpu: "4", memory: 16Gi, pricePerHour: 0.192}]
        daemonSetOverhead: {cpu: 200m, memory: 512Mi}
        minNodes: 1
        maxNodes: 50
        provisioningSeconds: {median: 90, p90: 150}
      workloads:
      - name: web
        autoscaler: hpa/web.yaml            # HorizontalAutoscaler or autoscaling/v2 HPA
        target: deploy/web.yaml             # its Deployment (requests, nodeSelector)
        profile: profiles/web.yaml          # optional: pyhpa simulate's workload profile
        trace: {file: traces/nasa.csv, column: requests, scale: 1.0, shift: 0s}   # where: [vm=rnd-411]
        nodePool: general                   # optional: else the pool whose labels the nodeSelector matches

Names are the projects' own: Cluster Autoscaler's flags (``scan-interval``, ``scale-down-unneeded-time``, ...) with
the defaults of its ``config/const.go`` and ``config/flags/flags.go``; Karpenter's NodePool ``disruption`` fields
(``consolidationPolicy``, ``consolidateAfter``, ``budgets``) with the defaults of its ``pkg/apis/v1/nodepool.go``,
and its settings ``batchIdleDuration`` and ``batchMaxDuration`` (``pkg/operator/options``); kube-scheduler's
``NodeResourcesFitArgs.scoringStrategy.type`` (``LeastAllocated``, the default profile's, or ``MostAllocated``).
Units: CPU in millicores and memory in bytes once read (quantities in the file: ``"4"``, ``200m``, ``16Gi``),
prices in dollars per node-hour, durations in seconds (Go durations in the file: ``10s``, ``10m``).

Relative file names are relative to the fleet file's folder. Every count has a bound (``MAX_WORKLOADS``,
``MAX_NODE_POOLS``, ``MAX_INSTANCE_TYPES``, ``MAX_NODES``).
"""

from __future__ import annotations

import copy
import dataclasses
import math
import re
from dataclasses import dataclass
from datetime import timezone
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, Mapping, Sequence

import msgspec
import numpy as np
from msgspec import Meta, Struct, field

from ..adapters.autoscaler import find_autoscaler
from ..adapters.errors import InputError
from ..adapters.parse import duration, format_time, milli, object_name, quantity
from ..adapters.snapshot import read_document
from ..simulate import Autoscaler, Settings, load_autoscaler
from ..simulate.prediction import history_start
from ..simulate.profile import Profile, load_profile
from ..simulate.target import KINDS, Target, load_target
from ..simulate.trace import Gap, Trace, bound_time, iso, load_trace, scaled_load
from .gaps import TraceGaps
from .scheduler import Node, PodRequests, ScoringStrategy, defaulted_spec, fits, pod_requests

API_VERSION = "pyhpa.dev/v1alpha1"
KIND = "Fleet"
#: bounds of what a fleet file may ask for (a fleet of thousands is tuned overnight; these keep one run bounded)
MAX_WORKLOADS = 10_000
MAX_NODE_POOLS = 100
MAX_INSTANCE_TYPES = 100
MAX_NODES = 100_000
MAX_PODS_PER_NODE = 10_000
MAX_BUDGETS = 50  # Karpenter's own MaxItems of disruption.budgets
#: the longest provisioning delay a pool may state (an hour: longer is a stuck node, which max-node-provision-time
#: ends)
MAX_PROVISIONING_SECONDS = 3600.0
#: the longest duration a setting takes (a year: a model's timer, a backoff; longer means never, which Karpenter's
#: ``consolidateAfter: Never`` says), and the farthest a trace is moved (``trace.shift``: a century, either way; the
#: benchmark moves 1995's NASA trace to 2013); every duration, whatever its YAML type, within them and finite
MAX_DURATION_SECONDS = 366 * 86400.0
MAX_SHIFT_SECONDS = 100 * 366 * 86400.0
#: Cluster Autoscaler's shortest ``scan-interval`` here: the simulator's bound, not the project's (its default is
#: 10s); a loop of 0 s would never let the clock move
MIN_SCAN_INTERVAL_SECONDS = 1.0
#: the highest CPU (millicores) and memory (bytes) a pool's instance type or overhead states: int64, as upstream's
#: quantities are (``MilliValue()``, ``Value()``; ``quantity`` refuses more than int64 milli-units of either)
MAX_INT64 = 2**63 - 1
#: the highest price per node-hour a fleet takes (dollars; the largest cloud instances cost some hundreds)
MAX_PRICE_PER_HOUR = 100_000.0
#: ``load_trace``'s errors name ``pyhpa simulate``'s flags; in a fleet file they are fields of a workload's ``trace``
TRACE_FLAGS = {"--column": "column", "--load-scale": "scale", "--where": "where"}


class Seconds(float):
    """A duration in seconds; in the file a Go duration (``10s``, ``1m30s``) or a number of seconds."""

    __slots__ = ()


class SecondsOrNever(float):
    """A duration in seconds, or ``Never`` (infinite: Karpenter's ``consolidateAfter: Never``)."""

    __slots__ = ()


class ShiftSeconds(float):
    """A trace's move in seconds, later or (negative) earlier; in the file a Go duration (``3h``, ``-1h30m``) or a
    number of seconds."""

    __slots__ = ()


class Millicores(int):
    """CPU in millicores; in the file a quantity (``"4"``, ``500m``), read as upstream's ``MilliValue()``."""

    __slots__ = ()


class Bytes(int):
    """Memory in bytes; in the file a quantity (``16Gi``, ``512Mi``), read as upstream's ``Value()`` (rounded up)."""

    __slots__ = ()


class Model(StrEnum):
    """The node autoscaler a fleet runs (``spec.nodeAutoscaler.model``)."""

    CLUSTER_AUTOSCALER = "cluster-autoscaler"
    KARPENTER = "karpenter"


class Expander(StrEnum):
    """Cluster Autoscaler's ``--expander`` values a fleet simulates (its default: ``least-waste``)."""

    LEAST_WASTE = "least-waste"
    RANDOM = "random"
    MOST_PODS = "most-pods"
    PRICE = "price"


class ConsolidationPolicy(StrEnum):
    """Karpenter's NodePool ``disruption.consolidationPolicy``."""

    WHEN_EMPTY = "WhenEmpty"
    WHEN_EMPTY_OR_UNDERUTILIZED = "WhenEmptyOrUnderutilized"


NonNegative = Annotated[float, Meta(ge=0)]
Price = Annotated[float, Meta(ge=0, le=MAX_PRICE_PER_HOUR)]


class Scheduler(Struct, rename="camel", forbid_unknown_fields=True, frozen=True):
    """How pods are placed: kube-scheduler's default profile (NodeResourcesFit) with this scoring."""

    scoring_strategy: ScoringStrategy = ScoringStrategy.LEAST_ALLOCATED


class ClusterAutoscaler(Struct, forbid_unknown_fields=True, frozen=True):
    """Cluster Autoscaler's flags, spelled and defaulted as in kubernetes/autoscaler ``cluster-autoscaler/config``:
    ``scan-interval`` 10s, ``expander`` least-waste, ``scale-down-unneeded-time`` 10m, ``scale-down-delay-after-add``
    10m, ``scale-down-utilization-threshold`` 0.5 (a node's max of CPU and memory requests over allocatable below
    which it may be removed), ``max-node-provision-time`` 15m (a node not Ready by then: the scale-up failed),
    ``initial-node-group-backoff-duration`` 5m, ``max-node-group-backoff-duration`` 30m and
    ``node-group-backoff-reset-timeout`` 3h (how long a node group is left out of scale-ups after that)."""

    scan_interval: Seconds = field(default=Seconds(10.0), name="scan-interval")
    expander: Expander = Expander.LEAST_WASTE
    scale_down_unneeded_time: Seconds = field(default=Seconds(600.0), name="scale-down-unneeded-time")
    scale_down_delay_after_add: Seconds = field(default=Seconds(600.0), name="scale-down-delay-after-add")
    scale_down_utilization_threshold: Annotated[float, Meta(ge=0, le=1)] = field(
        default=0.5, name="scale-down-utilization-threshold")
    max_node_provision_time: Seconds = field(default=Seconds(900.0), name="max-node-provision-time")
    initial_node_group_backoff_duration: Seconds = field(default=Seconds(300.0),
                                                         name="initial-node-group-backoff-duration")
    max_node_group_backoff_duration: Seconds = field(default=Seconds(1800.0), name="max-node-group-backoff-duration")
    node_group_backoff_reset_timeout: Seconds = field(default=Seconds(10800.0), name="node-group-backoff-reset-timeout")


class Budget(Struct, forbid_unknown_fields=True, frozen=True):
    """A Karpenter disruption budget: at most ``nodes`` (a count, or a percent of the pool's nodes: ``10%``)
    disrupted at once."""

    nodes: Annotated[str, Meta(pattern=r"^((100|[0-9]{1,2})%|[0-9]+)$")] = "10%"


class Karpenter(Struct, rename="camel", forbid_unknown_fields=True, frozen=True):
    """Karpenter's batching settings (``--batch-idle-duration`` 1s, ``--batch-max-duration`` 10s) and NodePool
    ``disruption`` (``consolidationPolicy`` WhenEmptyOrUnderutilized, ``consolidateAfter`` 0s, ``budgets``
    ``[{nodes: 10%}]``), defaulted as kubernetes-sigs/karpenter's ``pkg/operator/options`` and
    ``pkg/apis/v1/nodepool.go`` do. ``consolidateAfter: Never`` turns consolidation off (infinite seconds)."""

    batch_idle_duration: Seconds = Seconds(1.0)
    batch_max_duration: Seconds = Seconds(10.0)
    consolidation_policy: ConsolidationPolicy = ConsolidationPolicy.WHEN_EMPTY_OR_UNDERUTILIZED
    consolidate_after: SecondsOrNever = SecondsOrNever(0.0)
    budgets: Annotated[tuple[Budget, ...], Meta(min_length=1, max_length=MAX_BUDGETS)] = (Budget(),)


class NodeAutoscaler(Struct, forbid_unknown_fields=True, frozen=True):
    """``model`` and the settings of each model (only the chosen one's are used)."""

    model: Model = Model.CLUSTER_AUTOSCALER
    cluster_autoscaler: ClusterAutoscaler = field(default_factory=ClusterAutoscaler, name="cluster-autoscaler")
    karpenter: Karpenter = field(default_factory=Karpenter)


class Resources(Struct, forbid_unknown_fields=True, frozen=True):
    """CPU (millicores) and memory (bytes)."""

    cpu: Millicores = Millicores(0)
    memory: Bytes = Bytes(0)


class InstanceType(Struct, rename="camel", forbid_unknown_fields=True, frozen=True):
    """A machine a pool's nodes may be: allocatable ``cpu`` (millicores), ``memory`` (bytes) and ``pods`` (the
    kubelet's ``--max-pods``, 110 by default), and its price (dollars per node-hour)."""

    name: Annotated[str, Meta(min_length=1, max_length=253)]
    cpu: Millicores
    memory: Bytes
    price_per_hour: Price
    pods: Annotated[int, Meta(ge=1, le=MAX_PODS_PER_NODE)] = 110


class ProvisioningSeconds(Struct, forbid_unknown_fields=True, frozen=True):
    """How long a new node takes from the node autoscaler's request to Ready: log-normal with this ``median`` and
    90th percentile ``p90`` (seconds; equal for a fixed delay). Our default (90 s median, 150 s p90) is within the
    one to three minutes cloud VMs typically take; set yours from your nodes' creation-to-Ready times."""

    median: Annotated[float, Meta(ge=0, le=MAX_PROVISIONING_SECONDS)] = 90.0
    p90: Annotated[float, Meta(ge=0, le=MAX_PROVISIONING_SECONDS)] = 150.0


class NodePool(Struct, rename="camel", forbid_unknown_fields=True, frozen=True):
    """Nodes of one kind: their ``labels`` (a workload's nodeSelector picks the pool by them), the
    ``instanceTypes`` (Cluster Autoscaler: a node group of each, the ``expander`` choosing; Karpenter: the cheapest
    that fits), ``daemonSetOverhead`` (requested by DaemonSet pods on every node), ``minNodes``/``maxNodes`` and
    ``provisioningSeconds``."""

    name: Annotated[str, Meta(min_length=1, max_length=253)]
    instance_types: Annotated[tuple[InstanceType, ...], Meta(min_length=1, max_length=MAX_INSTANCE_TYPES)]
    labels: dict[str, str] = {}
    daemon_set_overhead: Resources = field(default_factory=Resources)
    min_nodes: Annotated[int, Meta(ge=0, le=MAX_NODES)] = 0
    max_nodes: Annotated[int, Meta(ge=1, le=MAX_NODES)] = 1000
    provisioning_seconds: ProvisioningSeconds = field(default_factory=ProvisioningSeconds)


class TraceRef(Struct, forbid_unknown_fields=True, frozen=True):
    """A workload's load: ``column`` of the CSV ``file``, times ``scale``, moved ``shift`` later (seconds); of a
    long-format file, only the rows ``where`` says (``COLUMN=VALUE`` items, as ``pyhpa simulate --where``); a gap
    in the span replayed refused or held (``gaps``, ``TraceGaps``)."""

    file: Annotated[str, Meta(min_length=1)]
    column: Annotated[str, Meta(min_length=1)]
    scale: Annotated[float, Meta(gt=0, le=1e6)] = 1.0
    shift: ShiftSeconds = ShiftSeconds(0.0)
    where: Annotated[tuple[str, ...], Meta(max_length=20)] = ()
    gaps: TraceGaps = TraceGaps.ERROR


class Workload(Struct, rename="camel", forbid_unknown_fields=True, frozen=True):
    """One autoscaler with its Deployment (``target``), ``profile`` (optional: the built-in one) and ``trace``,
    on ``nodePool`` (optional: the pool whose labels the pod template's nodeSelector matches)."""

    name: Annotated[str, Meta(min_length=1, max_length=253)]
    autoscaler: Annotated[str, Meta(min_length=1)]
    target: Annotated[str, Meta(min_length=1)]
    trace: TraceRef
    profile: str = ""
    node_pool: str = ""


class Metadata(Struct, forbid_unknown_fields=False, frozen=True):
    name: Annotated[str, Meta(max_length=253)] = ""  # a Kubernetes object's name is at most 253 characters


class FleetSpec(Struct, rename="camel", forbid_unknown_fields=True, frozen=True):
    node_pools: Annotated[tuple[NodePool, ...], Meta(min_length=1, max_length=MAX_NODE_POOLS)]
    workloads: Annotated[tuple[Workload, ...], Meta(min_length=1, max_length=MAX_WORKLOADS)]
    scheduler: Scheduler = field(default_factory=Scheduler)
    node_autoscaler: NodeAutoscaler = field(default_factory=NodeAutoscaler)


class FleetFile(Struct, rename="camel", forbid_unknown_fields=True, frozen=True):
    api_version: str
    kind: str
    spec: FleetSpec
    metadata: Metadata = field(default_factory=Metadata)


@dataclass(slots=True, frozen=True)
class LoadedWorkload:
    """A workload with everything it names read: the autoscaler, its target, profile and trace (times already
    moved by ``trace.shift``), its pool, and what one of its pods requests of a node."""

    spec: Workload
    autoscaler: Autoscaler
    target: Target
    profile: Profile
    trace: Trace
    pool: NodePool
    requests: PodRequests  # one pod's, as kube-scheduler counts them (pyhpa.fleet.scheduler.pod_requests)


@dataclass(slots=True, frozen=True)
class Fleet:
    """A fleet file read and checked: its ``spec``, each workload loaded, the span every trace covers
    (``start``, ``end``: epoch seconds) and its ``metadata.name`` (``name``; "" when it has none)."""

    file: str
    spec: FleetSpec
    workloads: tuple[LoadedWorkload, ...]
    start: float
    end: float
    name: str = ""


def _dec_hook(kind: type, value: Any) -> Any:
    """The file's text for the fleet's own scalar types (msgspec.convert's hook: a ValueError names the path)."""
    try:
        if kind is Seconds:
            return Seconds(_bounded(duration(value), 0.0, MAX_DURATION_SECONDS, value))
        if kind is SecondsOrNever:
            if value == "Never":
                return SecondsOrNever(math.inf)
            return SecondsOrNever(_bounded(duration(value), 0.0, MAX_DURATION_SECONDS, value))
        if kind is ShiftSeconds:
            negative = isinstance(value, str) and value.strip().startswith("-")
            seconds = duration(value.strip()[1:]) if negative else duration(value)
            return ShiftSeconds(_bounded(-seconds if negative else seconds, -MAX_SHIFT_SECONDS, MAX_SHIFT_SECONDS,
                                         value))
        if kind is Millicores:
            text = value if not isinstance(value, float) else repr(value)
            _amount(quantity(text) * 1000, value, "millicores")
            return Millicores(milli(text))
        if kind is Bytes:
            amount = quantity(value if not isinstance(value, float) else repr(value))
            _amount(amount, value, "bytes")
            return Bytes(math.ceil(amount))
    except InputError as err:
        raise ValueError(err.message) from None
    raise NotImplementedError(kind)


def _bounded(seconds: float, low: float, high: float, given: Any) -> float:
    """A duration within [low, high] seconds and finite, else ValueError saying the range."""
    if not (low <= seconds <= high):  # NaN too
        if low:
            raise ValueError(f"a shift of at most {high / 86400:,.0f} days either way, got {given!r}")
        raise ValueError(f"a duration from 0 to {high / 86400:g} days, got {given!r}")
    return seconds


def _amount(value, given: Any, unit: str) -> None:
    """A CPU or memory amount (millicores or bytes, a Decimal; ``quantity`` bounds it by int64 milli-units, as upstream
    reads quantities) that is not negative, else ValueError."""
    if not (value.is_finite() and 0 <= value <= MAX_INT64):
        raise ValueError(f"must not be negative (a quantity of {unit}), got {given!r}")


_PATH = re.compile(r" - at `\$\.?(.*)`$")


def _structure_error(err: msgspec.ValidationError, raw: Any, file: str, root: str = "spec.") -> InputError:
    """msgspec's message (``Expected `float` >= 0.0, got -1 - at `$.spec.nodePools[0]...```) as one InputError
    naming the file, the node pool or workload (by its name), and the field path."""
    text = str(err)
    m = _PATH.search(text)
    path = m.group(1) if m else ""
    message = text[:m.start()] if m else text
    obj = ""
    where = re.match(re.escape(root) + r"(nodePools|workloads)\[(\d+)\]", path)
    if where:
        items = ((raw.get("spec") or {}).get(where.group(1)) or []) if isinstance(raw, dict) else []
        index = int(where.group(2))
        name = items[index].get("name") if index < len(items) and isinstance(items[index], dict) else None
        kind = "node pool" if where.group(1) == "nodePools" else "workload"
        obj = f"{kind} {name}" if name else f"{kind} #{index + 1}"
    return InputError(message[:1].lower() + message[1:], file=file, obj=obj, field=path)


def read_fleet_file(path: str | Path, raw: Any = None) -> FleetSpec:
    """The fleet file's ``spec`` (``read_fleet_document``'s)."""
    return read_fleet_document(path, raw).spec


def read_fleet_document(path: str | Path, raw: Any = None) -> FleetFile:
    """The fleet file as typed structs (defaults filled in: ``spec``, ``metadata``); ``raw``: its document already read (and
    changed: a what-if's), else the file is read. Raises InputError naming the file, the node pool or workload and
    the field: a value of the wrong type or out of its bounds (a negative price, more than ``MAX_WORKLOADS``
    workloads), an unknown field, another ``kind``, or two pools, workloads or instance types of one pool with one
    name."""
    file = str(path)
    raw = read_document(path) if raw is None else raw
    if isinstance(raw, list):
        raise InputError(f"holds {len(raw)} YAML documents; a fleet file is one (kind: {KIND})", file=file)
    if not isinstance(raw, dict):
        raise InputError(f"must be a mapping with apiVersion: {API_VERSION} and kind: {KIND}", file=file)
    if raw.get("kind") != KIND or raw.get("apiVersion") != API_VERSION:
        raise InputError(f"is apiVersion {raw.get('apiVersion')!r}, kind {raw.get('kind')!r}: a fleet file is "
                         f"apiVersion: {API_VERSION}, kind: {KIND}", file=file, field="kind")
    try:
        doc = msgspec.convert(raw, FleetFile, dec_hook=_dec_hook)
    except msgspec.ValidationError as err:
        raise _structure_error(err, raw, file) from None
    spec = doc.spec
    for i, w in enumerate(spec.workloads):  # names become file names (fleet tune's recommended/NAME.yaml): no path
        try:
            object_name(w.name, f"spec.workloads[{i}].name")
        except InputError as err:
            raise InputError(err.message, file=file, obj=f"workload #{i + 1}", field=err.field) from None
    _unique(file, "spec.workloads", [w.name for w in spec.workloads], "workload")
    check_pools(spec.node_pools, file, "spec.nodePools")
    scan = spec.node_autoscaler.cluster_autoscaler.scan_interval
    if scan < MIN_SCAN_INTERVAL_SECONDS:
        raise InputError(f"must be at least {MIN_SCAN_INTERVAL_SECONDS:g}s (the simulator's bound; Cluster "
                         f"Autoscaler's default is 10s), got {scan:g}s", file=file,
                         field="spec.nodeAutoscaler.cluster-autoscaler.scan-interval")
    return doc


class _Pools(Struct, rename="camel", forbid_unknown_fields=True, frozen=True):
    node_pools: Annotated[tuple[NodePool, ...], Meta(min_length=1, max_length=MAX_NODE_POOLS)]


def read_node_pools(raw: Any, file: str) -> tuple[NodePool, ...]:
    """A YAML list of node pools (as ``spec.nodePools``; a what-if's ``nodePools=FILE``) as typed structs, checked as
    a fleet file's are (``check_pools``). Raises InputError naming ``file``, the pool and its field (``[i]...``)."""
    if not isinstance(raw, list):
        raise InputError("must be a YAML list of node pools (as spec.nodePools)", file=file)
    try:
        pools = msgspec.convert({"nodePools": raw}, _Pools, dec_hook=_dec_hook).node_pools
    except msgspec.ValidationError as err:
        e = _structure_error(err, {"spec": {"nodePools": raw}}, file, root="")
        raise InputError(e.message, file=file, obj=e.obj, field=e.field.removeprefix("nodePools")) from None
    check_pools(pools, file, "")
    return pools


def check_pools(pools: tuple[NodePool, ...], file: str, at: str) -> None:
    """Node pools as a fleet needs them: names and each pool's instance types' names unique, ``minNodes`` at most
    ``maxNodes``, the provisioning p90 not below its median. InputError naming ``file``, the pool and the field
    (under ``at``)."""
    _unique(file, at, [p.name for p in pools], "node pool")
    for i, pool in enumerate(pools):
        _unique(file, f"{at}[{i}].instanceTypes", [t.name for t in pool.instance_types], "instance type",
                obj=f"node pool {pool.name}")
        if pool.min_nodes > pool.max_nodes:
            raise InputError(f"is {pool.min_nodes}, above maxNodes {pool.max_nodes}", file=file,
                             obj=f"node pool {pool.name}", field=f"{at}[{i}].minNodes")
        if pool.provisioning_seconds.p90 < pool.provisioning_seconds.median:
            raise InputError(f"is {pool.provisioning_seconds.p90:g}, below the median "
                             f"{pool.provisioning_seconds.median:g}", file=file, obj=f"node pool {pool.name}",
                             field=f"{at}[{i}].provisioningSeconds.p90")


def _unique(file: str, field_path: str, names: list[str], what: str, obj: str = "") -> None:
    seen: dict[str, int] = {}
    for i, name in enumerate(names):
        if name in seen:
            raise InputError(f"{what} {name!r} is named twice ({field_path}[{seen[name]}] and [{i}]): names must "
                             "differ", file=file, obj=obj or f"{what} {name}", field=f"{field_path}[{i}].name")
        seen[name] = i


def load_fleet(path: str | Path, settings: Settings = Settings(), start: str | None = None,
               end: str | None = None, *, raw: Any = None, autoscalers: Mapping[str, dict] | None = None,
               gaps: TraceGaps | None = None) -> Fleet:
    """Read a fleet file and every file it names (``read_fleet_document``, then each workload's autoscaler, target,
    profile and trace as ``pyhpa simulate`` reads them), and check what needs them together: each workload's pool
    (named, or the one pool its nodeSelector matches), that its pod fits a node of that pool (requests plus the
    pool's DaemonSet overhead within an instance type's allocatable), and that the traces, shifted, overlap in
    time. ``start``/``end`` (ISO 8601, as ``pyhpa simulate --start/--end``: without an offset, the traces' offset,
    which then must be one; ``_fleet_offset``) narrow the span to a part of that overlap. A what-if's fleet is loaded from memory: ``raw`` (the fleet's document, changed, its
    file names absolute; ``path`` then only names it in errors: the fleet file and the overlays) and
    ``autoscalers`` (the autoscaler documents it changed, by the file named). ``gaps`` (``fleet simulate --gaps``):
    every workload's gap policy, instead of its ``trace.gaps``. Raises InputError: one line naming the workload (or
    node pool) and the field, or the flag; a gap in the span a workload replays with the policy ``error``."""
    file = str(path)
    document = read_fleet_document(file, raw)
    spec = document.spec
    changed = autoscalers or {}
    folder = Path(path).resolve().parent
    pools = {p.name: p for p in spec.node_pools}
    read: dict[tuple, Trace] = {}  # each (file, column, where) read once, however many workloads replay it
    loaded = []
    for i, w in enumerate(spec.workloads):
        obj, at = f"workload {w.name}", f"spec.workloads[{i}]"
        try:
            profile = load_profile(str(under(folder, w.profile)) if w.profile else None)
            target = load_target(under(folder, w.target), profile.container)
            hpa_file = str(under(folder, w.autoscaler))
            doc = changed.get(hpa_file)
            autoscaler = load_autoscaler(find_autoscaler(read_document(hpa_file), hpa_file) if doc is None else doc,
                                         hpa_file, target, settings)
            trace = _read(read, under(folder, w.trace.file), w.trace)
            requests = _pod_requests(under(folder, w.target))
        except InputError as err:
            if err.field in TRACE_FLAGS:  # a setting of the fleet's trace reference, which simulate takes as a flag
                raise InputError(f"{err.message} ({err.file or w.trace.file})", file=file, obj=obj,
                                 field=f"{at}.trace.{TRACE_FLAGS[err.field]}") from None
            raise InputError(err.message, file=err.file or file, obj=err.obj or obj,
                             field=err.field or at, line=err.line) from None
        pool = _pool_of(file, w, at, target, spec.node_pools, pools)
        _check_fits(file, obj, at, target, requests, pool)
        loaded.append(LoadedWorkload(w, autoscaler, target, profile, trace, pool, requests))  # the rows as read
    starts = [w.trace.start + w.spec.trace.shift for w in loaded]
    ends = [w.trace.end + w.spec.trace.shift for w in loaded]
    first, last = max(starts), min(ends)
    if first >= last:
        late = max(range(len(loaded)), key=lambda k: starts[k])
        early = min(range(len(loaded)), key=lambda k: ends[k])
        raise InputError(
            f"its trace starts at {_iso(starts[late])}, after the trace of workload "
            f"{loaded[early].spec.name} ends ({_iso(ends[early])}): the traces of a fleet must overlap "
            "in time (move one with trace.shift)", file=file, obj=f"workload {loaded[late].spec.name}",
            field=f"spec.workloads[{late}].trace.shift")
    tz, no_offset = _fleet_offset(loaded)
    lo, hi = (bound_time(text, tz, False, flag, no_offset) for text, flag in ((start, "--start"), (end, "--end")))
    if lo is not None:
        if not first <= lo < last:
            raise InputError(f"{_iso(lo)} is outside the span every trace covers ({_iso(first)} to {_iso(last)})",
                             field="--start")
        first = lo
    if hi is not None:
        if not first < hi <= last:
            raise InputError(f"{_iso(hi)} is not after the start ({_iso(first)}) and within the span every trace "
                             f"covers (to {_iso(last)})", field="--end")
        last = hi
    replayed = tuple(_replayed(w, first, last) for w in loaded)
    for i, w in enumerate(replayed):
        _check_gaps(file, i, w, gaps)
    return Fleet(file, spec, replayed, first, last, document.metadata.name)


def _fleet_offset(loaded: Sequence[LoadedWorkload]) -> tuple[timezone | None, str]:
    """The UTC offset a ``--start``/``--end`` without one is read in: the offset of the fleet's traces, as ``pyhpa
    simulate`` reads its trace's (``bound_time``); None, and why, when the traces are in different offsets."""
    by_offset: dict[timezone, str] = {}
    for w in loaded:
        by_offset.setdefault(w.trace.tz, w.spec.name)
    if len(by_offset) == 1:
        return next(iter(by_offset)), ""
    shown = ", ".join(f"{iso(0.0, tz)[19:] or 'Z'} (workload {name})" for tz, name in list(by_offset.items())[:3])
    return None, f"the fleet's traces are in different UTC offsets: {shown}"


def _check_gaps(file: str, i: int, w: LoadedWorkload, flag: TraceGaps | None) -> None:
    """Refuse a gap in the span workload ``i`` replays when its policy (``flag``, else its ``trace.gaps``) is
    ``error``, as ``pyhpa simulate`` refuses one: the trace file's line after it, the gap's times and length."""
    policy = w.spec.trace.gaps if flag is None else flag
    gaps = w.trace.report.gaps
    if policy is not TraceGaps.ERROR or not gaps:
        return
    g = gaps[0]
    how = "--gaps hold" if flag is not None else "trace.gaps: hold (or fleet simulate --gaps hold)"
    raise InputError(f"line {g.line} of {w.spec.trace.file}: gap of {g.seconds:g} s in the span it replays "
                     f"({_iso(g.start)} to {_iso(g.end)}, shifted; {len(gaps)} gap(s) in all); hold the load over "
                     f"gaps with {how}", file=file, obj=f"workload {w.spec.name}",
                     field="--gaps" if flag is not None else f"spec.workloads[{i}].trace.gaps")


def under(folder: Path, name: str) -> Path:
    """``name`` as the fleet file at ``folder`` means it: absolute as given, else relative to ``folder``."""
    p = Path(name)
    return p if p.is_absolute() else folder / p


def with_absolute_paths(doc: dict, folder: Path) -> dict:
    """A copy of a fleet file's document (read from ``folder``) whose workloads name their files by absolute paths,
    so that it can be written and read anywhere (what-if's second fleet, fleet tune's recommended one)."""
    doc = copy.deepcopy(doc)
    for w in (doc.get("spec") or {}).get("workloads") or []:
        for key in ("autoscaler", "target", "profile"):
            if w.get(key):
                w[key] = str(under(folder, w[key]).resolve())
        if isinstance(w.get("trace"), dict) and w["trace"].get("file"):
            w["trace"]["file"] = str(under(folder, w["trace"]["file"]).resolve())
    return doc


def _pool_of(file: str, w: Workload, at: str, target: Target, ordered, pools: dict) -> NodePool:
    """The workload's pool: ``nodePool`` when given, else the one pool whose labels its pod template's
    nodeSelector matches (the only pool when there is one and the selector is empty)."""
    obj = f"workload {w.name}"
    if w.node_pool:
        if w.node_pool not in pools:
            raise InputError(f"names node pool {w.node_pool!r}, which the fleet has not (its pools: "
                             f"{', '.join(pools)})", file=file, obj=obj, field=f"{at}.nodePool")
        pool = pools[w.node_pool]
        selector = target.node_selector
        if any(pool.labels.get(k) != v for k, v in selector.items()):
            raise InputError(f"is {w.node_pool}, whose labels {pool.labels} do not match the nodeSelector {selector} "
                             f"of {target.label}", file=file, obj=obj, field=f"{at}.nodePool")
        return pool
    selector = target.node_selector
    matching = [p for p in ordered if all(p.labels.get(k) == v for k, v in selector.items())]
    if len(matching) == 1:
        return matching[0]
    what = f"the nodeSelector {selector} of {target.label}" if selector else f"{target.label} (no nodeSelector)"
    problem = "matches no node pool" if not matching else f"matches {len(matching)} node pools"
    raise InputError(f"names no pool: {what} {problem} ({', '.join(p.name for p in ordered)}); give nodePool",
                     file=file, obj=obj, field=f"{at}.nodePool")


def _pod_requests(path: Path) -> PodRequests:
    """What a pod of the target manifest at ``path`` requests of a node: its pod template's spec as the API server
    stores a pod made from it (``defaulted_spec``), counted as kube-scheduler counts it (``pod_requests``)."""
    doc = read_document(path)
    found = next(d for d in (doc if isinstance(doc, list) else [doc]) if isinstance(d, dict) and d.get("kind") in KINDS)
    return pod_requests(defaulted_spec(found["spec"]["template"]["spec"]))


def _check_fits(file: str, obj: str, at: str, target: Target, requests: PodRequests, pool: NodePool) -> None:
    """A pod of ``target`` plus the pool's DaemonSet overhead must pass NodeResourcesFit's Filter on an empty node
    of one of the pool's instance types (``pyhpa.fleet.scheduler.fits``); else no node can ever run it."""
    over = pool.daemon_set_overhead
    if any(not fits(empty_node(t, over), requests) for t in pool.instance_types):
        return
    largest = max(pool.instance_types, key=lambda t: (t.cpu, t.memory))
    raise InputError(f"a pod of {target.label} requests {requests.cpu}m CPU and {requests.memory} bytes of memory; "
                     f"with the pool's DaemonSet overhead ({over.cpu}m, {over.memory} bytes) it fits no node of node "
                     f"pool {pool.name} (largest: {largest.name}, {largest.cpu}m, {largest.memory} bytes)", file=file,
                     obj=obj, field=f"{at}.target")


def empty_node(kind: InstanceType, overhead: Resources, name: str = "", pool: str = "") -> Node:
    """A new node of instance type ``kind``: its allocatable, with the DaemonSet pods' ``overhead`` requested."""
    node = Node(name, kind.cpu, kind.memory, kind.pods, pool, kind.name)
    node.requested_cpu = node.nonzero_cpu = overhead.cpu
    node.requested_memory = node.nonzero_memory = overhead.memory
    return node


def _read(read: dict[tuple, Trace], path: Path, ref: TraceRef) -> Trace:
    """The rows of ``ref.file`` (``path``) as ``load_trace`` reads them (gaps held, unscaled, not shifted), read once
    per (file, column, where) into ``read`` for the whole fleet. Raises InputError as ``load_trace``, with
    ``ref.scale`` checked over every row (``scaled_load``)."""
    key = (str(path.resolve()), ref.column, tuple(ref.where))
    base = read.get(key)
    if base is None:
        base = read[key] = load_trace(path, ref.column, gaps="hold", where=ref.where)
    # the largest row decides (scaling by a positive factor keeps the order, rounding included): no whole-column copy
    scaled_load(base.values[ref.column].max(keepdims=True), ref.column, ref.scale)
    return base


def _replayed(w: LoadedWorkload, start: float, end: float) -> LoadedWorkload:
    """``w`` with the trace it replays: the rows it was read with (``_read``), moved ``trace.shift`` seconds later,
    the load column times ``trace.scale`` (as ``load_trace``'s ``load_scale``: holding a gap commutes with it),
    cut to what a run from ``start`` to ``end`` reads (the row in force at ``start`` to the last before ``end``;
    when its autoscaler predicts, the rows before too from where the forecaster's history begins,
    ``pyhpa.simulate.prediction.history_start``: ``spec.prediction.historySeconds`` before the last of them), in
    arrays of its own, so that a fleet of thousands does not hold each file whole per workload. Its report
    (summary.json's ``trace``) describes the span replayed: ``rows_used`` the rows of the span (the one in force at
    ``start`` to the last before ``end``), ``rows_outside_slice`` the others that matched ``where``, and the gaps
    that overlap the span, at their shifted times."""
    ref, tr = w.spec.trace, w.trace
    times = tr.times + ref.shift
    first = max(int(np.searchsorted(times, start, side="right")) - 1, 0)
    prediction = w.autoscaler.hpa.prediction
    if prediction is not None:
        first = history_start(times[:first], prediction.history_seconds)
    keep = slice(first, max(int(np.searchsorted(times, end, side="left")), first + 1))
    values = {k: v[keep].copy() for k, v in tr.values.items()}
    values[ref.column] = scaled_load(tr.values[ref.column][keep], ref.column, ref.scale)
    span_first = max(int(np.searchsorted(times, start, side="right")) - 1, 0)
    used = max(int(np.searchsorted(times, end, side="left")), span_first + 1) - span_first
    r = tr.report
    gaps = [Gap(g.start + ref.shift, g.end + ref.shift, g.line) for g in r.gaps
            if g.end + ref.shift > start and g.start + ref.shift < end]
    report = dataclasses.replace(r, load_scale=ref.scale, rows_used=used, gaps=gaps,
                                 rows_outside_slice=max(r.rows_in_file - r.rows_not_matching_where - used, 0))
    cut = dataclasses.replace(tr, times=times[keep].copy(), values=values, end=tr.end + ref.shift, report=report)
    return dataclasses.replace(w, trace=cut)


def _iso(ts: float) -> str:
    return format_time(ts) or ""
