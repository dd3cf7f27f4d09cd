"""The autoscaler's status: built from the decision core's ``Decision.status``, written only when it changed.

Upstream's updateStatusIfNeeded compares old and new status and skips the write when they are
equal; here the comparison is on the JSON form the API server stores (times as RFC 3339 seconds,
metav1.Time), and a ``409 Conflict`` (the object changed since the informer saw it) is retried with
the fresh resourceVersion unless the spec changed meanwhile (then the sync is redone).
"""

from __future__ import annotations

from typing import Any, Protocol, Sequence

from ...adapters.errors import InputError
from ...adapters.parse import timestamp
from ...adapters.printers import reference
from ...api.status import condition_dict, render_status
from ...core import HPA, Condition, Decision, Event, HPAStatus, HPAWarning, Memory, set_condition, with_status
from ..cache.autoscaler import API_VERSION, KIND, MEMORY_KEY, Autoscaler, packed
from ..kube.api import ApiFailure
from .writer import Writer


def status_from_decision(decision: Decision, generation: int, hpa: HPA | None = None,
                         fit: dict | None = None) -> dict:
    """The status a sync writes (``pyhpa.api.status.render_status``: ``observedGeneration`` is the spec generation
    synced), and ``status.prediction`` with ``hpa.prediction``'s ``leadSeconds`` and ``fit`` (the figures of the fitted model:
    ``pyhpa.controller.sync.prediction.LivePredictions.fit``)."""
    st: HPAStatus = decision.status
    lead = hpa.prediction.lead_seconds if hpa is not None and hpa.prediction is not None else None
    return render_status(st, generation, lead_seconds=lead, fit=fit)


def with_columns(status: dict, a: Autoscaler, statuses: Sequence[Any]) -> dict:
    """``status`` with ``reference`` and ``targets``: the texts ``kubectl get`` shows in the REFERENCE and TARGETS
    columns, as kubectl prints them for an HPA (``pyhpa.adapters.printers``); ``statuses[i]`` is the MetricStatus of
    the i-th metric (None: none). Each is left out when the spec cannot be read. They change only when the spec or
    ``status.currentMetrics`` do, so they cost no status write of their own."""
    ref = a.scale_target_ref
    if ref is not None:
        shown = f"{ref.kind}/{ref.name}"
    else:  # a spec that cannot be read: its scaleTargetRef as written, when it has a kind and a name
        spec = a.spec
        shown = reference(spec.get("scaleTargetRef") if isinstance(spec, dict) else None)
    for key, value in (("reference", shown or None),
                       ("targets", None if a.targets is None else a.targets.text(statuses))):
        if value is None:
            status.pop(key, None)
        else:
            status[key] = value
    return status


def conditions_of(status: dict) -> list[Condition]:
    """The stored conditions as the core's Conditions (malformed times and malformed entries are dropped)."""
    out = []
    conds = status.get("conditions")
    for c in conds if isinstance(conds, list) else []:
        if not isinstance(c, dict):
            continue
        try:
            t = timestamp(c["lastTransitionTime"]) if c.get("lastTransitionTime") else None
        except InputError:
            t = None
        out.append(Condition(c.get("type", ""), c.get("status", ""), c.get("reason", ""), c.get("message", ""), t))
    return out


def status_with_condition(a: Autoscaler, ctype: str, cstatus: str, reason: str, message: str, now: float) -> dict:
    """The stored status with one condition set (upstream: setCondition + updateStatusIfNeeded on failures), and the
    texts of the printer columns (``with_columns``: the stored ``currentMetrics`` matched to the metrics by name)."""
    conds = conditions_of(a.status)
    set_condition(conds, ctype, cstatus, reason, message, now)
    out = {k: v for k, v in a.status.items() if k != "conditions"}
    out.setdefault("desiredReplicas", 0)
    out["observedGeneration"] = a.generation
    out["conditions"] = [condition_dict(c) for c in conds]
    stored = out.get("currentMetrics")
    matched = a.targets.matched(stored if isinstance(stored, list) else []) if a.targets is not None else []
    return with_columns(out, a, matched)


# ----- Warning events said, remembered in status.warnings -----------------------------------------------------
#: ``status.warnings``: the Warning events sent whose cause lasts (deploy/crd.yaml describes it)
WARNINGS_KEY = "warnings"


def warning_entry(event: Event, check: HPAWarning | None = None) -> dict:
    """The ``status.warnings`` entry of a Warning event (of a check's warning: with its metric and container)."""
    out: dict = {"reason": event.reason, "message": event.message[:1024]}
    if check is not None:
        out["metric"] = check.index
        if check.container:
            out["container"] = check.container
    return out


def _cause(entry: dict) -> tuple:
    """What makes two entries the same cause: a check's reason, metric and container (its figures move); an
    event's reason and message."""
    if "metric" in entry:
        return entry.get("reason"), entry.get("metric"), entry.get("container", "")
    return entry.get("reason"), entry.get("message")


def said_before(status: dict) -> set[tuple]:
    """The causes of the Warning events remembered in a stored ``status`` (malformed entries are ignored)."""
    entries = status.get(WARNINGS_KEY)
    if not isinstance(entries, list):
        return set()
    return {_cause(e) for e in entries if isinstance(e, dict)}


def remember_warnings(status: dict, stored: dict, entries: list[dict]) -> list[dict]:
    """Set ``status.warnings`` to this sync's ``entries`` (a cause already stored keeps its stored entry, as it
    was said; none: no key) and return the entries whose cause was not said before (to send)."""
    before = stored.get(WARNINGS_KEY)
    kept = {_cause(e): e for e in before if isinstance(e, dict)} if isinstance(before, list) else {}
    out, new = [], []
    for e in entries:
        cause = _cause(e)
        if cause in kept:
            out.append(kept[cause])
        elif all(_cause(o) != cause for o in out):
            out.append(e)
            new.append(e)
    if out:
        status[WARNINGS_KEY] = out
    else:
        status.pop(WARNINGS_KEY, None)
    return new


class StaleSpec(Exception):
    """The spec changed while syncing (status write conflicted): sync again."""


class MemorySections(Protocol):
    """What a status write asks of the memory store (``pyhpa.controller.sync.memory.MemoryStore``)."""

    def status_section(self, a: Autoscaler, memory: Memory | None) -> dict | None:
        """What to write into ``status.pyhpa`` of ``a`` with ``memory``."""


class StatusWriter:
    """Writes ``status`` of an autoscaler through the Writer when it differs from the stored one."""

    def __init__(self, writer: Writer, memory: MemorySections, retries: int = 3):
        self._writer = writer
        self._memory = memory
        self._retries = retries
        self.writes = 0
        self.conflicts = 0

    async def write(self, a: Autoscaler, status: dict, memory: Memory | None = None,
                    decision: Decision | None = None, stored: dict | None = None) -> bool:
        """PUT ``/status`` if it changed; True when written. Raises ApiFailure, StaleSpec or WritesDisabled.

        ``status.pyhpa`` is what the memory store says (``MemoryStore.status_section``: for ``memory`` None,
        a write without a decision, the status-backed store keeps the stored section). ``stored``: ``a.status``
        when the caller unpacked it already."""
        section = self._memory.status_section(a, memory)
        if a.same_status(status, section, stored=stored):
            return False
        body = {"apiVersion": API_VERSION, "kind": KIND,
                "metadata": {"name": a.name, "namespace": a.namespace, "resourceVersion": a.resource_version},
                "status": status if section is None else dict(status, **{MEMORY_KEY: section})}
        written = (packed(status), None if section is None else packed(section))
        a.writing = written
        try:
            for attempt in range(self._retries):
                try:
                    answer = await self._writer.replace_status(a.namespace, a.name, body)
                    break
                except ApiFailure as err:
                    if err.code != 409 or attempt == self._retries - 1:
                        raise
                    self.conflicts += 1
                    body["metadata"]["resourceVersion"] = await self._fresh_version(a)
        finally:
            a.writing = None
        self.writes += 1
        _remember(a, answer, written, decision)
        return True

    async def _fresh_version(self, a: Autoscaler) -> str:
        fresh = await self._writer.get_autoscaler(a.namespace, a.name)
        meta = fresh.get("metadata") or {}
        if int(meta.get("generation") or 0) != a.generation:
            raise StaleSpec(f"{a.key}: spec changed (generation {meta.get('generation')}) while syncing")
        return meta.get("resourceVersion", "")


def _remember(a: Autoscaler, answer: dict, written: tuple[bytes, bytes | None], decision: Decision | None) -> None:
    """Keep what was written (``written``: the status and memory, packed) in the cached Autoscaler until the
    informer delivers it (the next sync must compare against, and carry condition times from, the status just
    written)."""
    a.resource_version = (answer.get("metadata") or {}).get("resourceVersion", a.resource_version)
    a.status_packed, a.memory_packed = written
    if decision is not None and a.hpa is not None:
        a.hpa = with_status(a.hpa, decision.status)
