"""The pod cache: what a sync reads about each pod, in compact shared records, decoded straight from the API.

A sync reads little of a pod: its name and labels, phase, deletion, start time, the first Ready condition and
its time, and the requests and limits of its containers. ``PodView`` is a lightkube resource whose msgspec
structure has those fields only: lightkube decodes list pages and watch events directly into it, and msgspec
skips every other field of the JSON (no whole Pod object is ever built, however large the pod). The informer
handler turns a ``PodView`` into the decision core's ``core.Pod`` (``pyhpa.adapters.objects.pod_from_model``,
the reading ``explain`` uses), then ``Records`` shares what pods have in common: pods of one template have
equal labels, requests, limits and container names, so they share one dict or tuple of each (interned while
any pod uses it); the phase is an interned string and the times are memoized floats. A cached pod is then its
``core.Pod`` (a slotted object) and its name, plus its entries in the namespace's name table and in its
template's group (the label index holds groups, not pods): about 330 bytes in all
(``tests/test_controller_lean.py`` bounds it at 400).

Records are shared, so they are read-only: nothing may change a cached pod's labels or amounts in place (the
decision core never does: it is pure).
"""

from __future__ import annotations

import logging
import sys
from typing import Any

from ...adapters.errors import InputError
from ...adapters.objects import pod_from_model
from ...core import Pod
from ...core.selector import SelectorError, matches, parse_selector
from ..kube.resources import PodView

log = logging.getLogger("pyhpa.controller.pods")


# ----- shared parts --------------------------------------------------------------------------------------------
class Records:
    """Equal labels, amounts and container-name tuples shared between pod records (``share``).

    A part is kept while a cached pod uses it: ``prune`` (run as the table doubles) drops the parts no pod
    refers to any more (a rollout's old ``pod-template-hash`` labels, for example).
    """

    def __init__(self) -> None:
        self._parts: dict[Any, Any] = {}
        self._prune_at = 1024

    def __len__(self) -> int:
        return len(self._parts)

    def _dict(self, d: dict) -> dict:
        if not d:
            d = {}
        key = (dict, tuple(d.items()))
        try:
            return self._parts.setdefault(key, d)
        except TypeError:  # an unhashable value (never from pod_from_model): not shared
            return d

    def _tuple(self, t: tuple) -> tuple:
        return self._parts.setdefault((tuple, t), t)

    def share(self, pod: Pod) -> Pod:
        """``pod`` with its labels, amounts and container names replaced by equal shared ones (a new Pod; the
        decision core's Pod is frozen)."""
        if len(self._parts) >= self._prune_at:
            self.prune()
        return Pod(name=pod.name, phase=sys.intern(pod.phase), labels=self._dict(pod.labels), deleted=pod.deleted,
                   start_time=pod.start_time, ready=pod.ready, ready_transition_time=pod.ready_transition_time,
                   requests=self._dict(pod.requests), missing_request=self._dict(pod.missing_request),
                   containers=self._tuple(pod.containers), pod_level_requests=pod.pod_level_requests,
                   limits=self._dict(pod.limits), pod_level_limits=pod.pod_level_limits,
                   ready_unknown=pod.ready_unknown)

    def prune(self) -> int:
        """Drop the parts no pod uses (referenced by this table only); returns how many were dropped."""
        parts, unused = self._parts, []
        for k in list(parts):
            v = parts[k]
            # references: the table, ``v`` and getrefcount's argument (a tuple part: its key too)
            if sys.getrefcount(v) <= (4 if k[0] is tuple else 3):
                unused.append(k)
            del v
        for k in unused:
            del parts[k]
        self._prune_at = max(1024, 2 * len(self._parts))
        return len(unused)


# ----- the cache -----------------------------------------------------------------------------------------------
class _Group:
    """The cached pods of one namespace whose labels are one shared dict (``Records``): the pods of a template."""

    __slots__ = ("labels", "names")

    def __init__(self, labels: dict):
        self.labels = labels
        self.names: list[str] = []


#: selector texts ``PodCache.select`` keeps parsed (forgotten all at once past this: a bound, not a working set)
MAX_PARSED_SELECTORS = 100_000
_UNPARSED = object()


class PodCache:
    """Pods as the decision core sees them (``core.Pod``, shared parts), per namespace, grouped by their labels.

    ``select(namespace, selector)`` answers from memory: the pods of a namespace are grouped by their (shared)
    label dict — one group per template, not per pod — and an index from each ``key=value`` label to the
    groups that have it gives the candidates of the selector's smallest equality requirement; each candidate
    group is matched once for all its pods. No pod LIST per sync, no scan of a large namespace for the usual
    ``matchLabels`` selectors, and about 8 bytes of index per pod (a name in its group's list).
    """

    def __init__(self) -> None:
        self._pods: dict[str, dict[str, Pod]] = {}
        self._groups: dict[str, dict[int, _Group]] = {}  # namespace -> id(labels) -> group
        self._index: dict[str, dict[tuple[str, str], Any]] = {}  # namespace -> label -> group, or set of groups
        self._parsed: dict[str, tuple | None] = {}  # selector text -> its requirements (None: invalid)
        self.records = Records()

    def __len__(self) -> int:
        return sum(len(p) for p in self._pods.values())

    def upsert(self, key: str, obj: Any) -> None:
        """Informer handler: read the pod (a ``PodView`` or a lightkube Pod) once and index it."""
        ns = sys.intern(key.partition("/")[0])
        try:
            pod = self.records.share(pod_from_model(obj))
        except InputError as err:
            log.warning("ignoring pod %s: %s", key, err)
            self.delete(key, None)
            return
        pods = self._pods.setdefault(ns, {})
        old = pods.get(pod.name)
        if old is not None and old.labels is pod.labels:
            pods[pod.name] = pod  # same group
            return
        self._remove(ns, pod.name)
        pods[pod.name] = pod
        groups = self._groups.setdefault(ns, {})
        group = groups.get(id(pod.labels))
        if group is None:
            group = groups[id(pod.labels)] = _Group(pod.labels)
            index = self._index.setdefault(ns, {})
            for label in pod.labels.items():
                held = index.get(label)
                if held is None:
                    index[label] = group
                elif isinstance(held, _Group):
                    index[label] = {held, group}
                else:
                    held.add(group)
        group.names.append(pod.name)

    def delete(self, key: str, obj: Any) -> None:
        """Informer handler: forget the pod."""
        ns, _, name = key.partition("/")
        self._remove(ns, name)

    def _remove(self, ns: str, name: str) -> None:
        old = self._pods.get(ns, {}).pop(name, None)
        if old is None:
            return
        groups = self._groups[ns]
        group = groups.get(id(old.labels))
        if group is None:
            return
        group.names.remove(name)
        if group.names:
            return
        del groups[id(old.labels)]
        index = self._index[ns]
        for label in group.labels.items():
            held = index.get(label)
            if held is group:
                del index[label]
            elif isinstance(held, set):
                held.discard(group)
                if len(held) == 1:
                    index[label] = next(iter(held))

    def get(self, namespace: str, name: str) -> Pod | None:
        """The cached pod (None when the cache does not have it)."""
        return self._pods.get(namespace, {}).get(name)

    def count(self, namespace: str) -> int:
        """Pods cached in ``namespace``."""
        return len(self._pods.get(namespace, ()))

    def labels(self, namespace: str, name: str) -> dict | None:
        """The labels of a cached pod (None when the cache does not have it)."""
        pod = self._pods.get(namespace, {}).get(name)
        return None if pod is None else pod.labels

    def select(self, namespace: str, selector: str) -> list[Pod]:
        """The pods of ``namespace`` matching ``selector`` text, sorted by name ([] for an empty or bad selector:
        the decision core reports SelectorRequired / InvalidSelector itself)."""
        if not selector:
            return []
        reqs = self._parsed.get(selector, _UNPARSED)
        if reqs is _UNPARSED:  # each autoscaler's selector is parsed once, not at every sync
            try:
                reqs = parse_selector(selector)
            except SelectorError:
                reqs = None
            if len(self._parsed) >= MAX_PARSED_SELECTORS:
                self._parsed.clear()
            self._parsed[selector] = reqs
        if reqs is None:
            return []
        pods = self._pods.get(namespace)
        if not pods:
            return []
        index = self._index.get(namespace, {})
        candidates: Any = None
        size = -1
        for op, key, value in reqs:
            if op == "=":
                held = index.get((key, value))
                if held is None:
                    return []
                n = 1 if isinstance(held, _Group) else len(held)
                if candidates is None or n < size:
                    candidates, size = ((held,) if isinstance(held, _Group) else held), n
        if candidates is None:
            candidates = self._groups.get(namespace, {}).values()
        names: list[str] = []
        for group in candidates:
            if matches(reqs, group.labels):
                names.extend(group.names)
        names.sort()
        return [pods[n] for n in names]


__all__ = ["PodCache", "PodView", "Records"]
