"""The last known pod selector of every autoscaler (upstream: the controller's ``hpaSelectors``).

Upstream refuses to scale when the pods an HPA selects are also selected by another HPA
(AmbiguousSelector). The decision core makes that check given candidate selectors; this
index finds the candidates in O(pods x labels) per sync instead of O(autoscalers): each
selector is filed under its first equality requirement ``key=value`` (selectors without
one are scanned per namespace). A bucket holds its one key as is (most selectors are alone under their first
requirement) and a set only once it has two.
"""

from __future__ import annotations

from collections import defaultdict

from ...core import Pod
from ...core.selector import SelectorError, parse_selector


class SelectorIndex:
    """``put`` after reading each target's Scale, ``remove`` when the autoscaler is deleted."""

    def __init__(self) -> None:
        self._entries: dict[str, tuple[str, str, tuple | None]] = {}  # key -> (namespace, text, bucket)
        self._by_label: dict[tuple, str | set[str]] = {}  # (namespace, label, value) -> key, or keys
        self._scan: dict[str, set[str]] = defaultdict(set)  # namespace -> keys without an equality

    def put(self, key: str, namespace: str, selector: str) -> None:
        """Record ``key``'s current selector text (empty or unparsable: selects nothing)."""
        old = self._entries.get(key)
        if old is not None and old[:2] == (namespace, selector):
            return
        self.remove(key)
        try:
            reqs = parse_selector(selector) if selector else ()
        except SelectorError:
            reqs = ()
        if not reqs:
            return
        first = next(((k, v) for op, k, v in reqs if op == "="), None)
        bucket = (namespace, *first) if first else None
        if bucket is None:
            self._scan[namespace].add(key)
        else:
            held = self._by_label.get(bucket)
            if held is None:
                self._by_label[bucket] = key
            elif isinstance(held, str):
                self._by_label[bucket] = {held, key}
            else:
                held.add(key)
        self._entries[key] = (namespace, selector, bucket)

    def knows(self, key: str) -> bool:
        """``key``'s selector is filed."""
        return key in self._entries

    def remove(self, key: str) -> None:
        entry = self._entries.pop(key, None)
        if entry is None:
            return
        namespace, _, bucket = entry
        if bucket is None:
            self._scan[namespace].discard(key)
            return
        held = self._by_label.get(bucket)
        if held == key:
            del self._by_label[bucket]
        elif isinstance(held, set):
            held.discard(key)
            if len(held) == 1:
                self._by_label[bucket] = next(iter(held))

    def candidates(self, key: str, namespace: str, pods: list[Pod]) -> list[tuple[str, str]]:
        """(``namespace/name``, selector) of other autoscalers that may select one of ``pods``
        (the core checks them exactly), sorted by key."""
        keys = set(self._scan.get(namespace, ()))
        by_label = self._by_label
        for pod in pods:
            for label, value in pod.labels.items():
                found = by_label.get((namespace, label, value))
                if found is None:
                    continue
                if isinstance(found, str):
                    keys.add(found)
                else:
                    keys |= found
        keys.discard(key)
        return [(k, self._entries[k][1]) for k in sorted(keys)]
