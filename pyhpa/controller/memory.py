"""The controller memory of each autoscaler (``pyhpa.core.Memory``) behind a small interface.

Upstream keeps recommendations and scale events in the controller's process, so a restarted or new
leader starts with none. ``InProcessMemory`` does the same; a store that keeps the memory in the
object's ``status.pyhpa`` (schema already in the CRD) can implement ``MemoryStore`` with
``memory_to_status`` / ``memory_from_status`` so that a new leader continues where the old one stopped.
"""

from __future__ import annotations

from typing import Protocol

from ..adapters.snapshot import memory_from_dict, memory_to_dict
from ..core import Memory
from .autoscaler import Autoscaler


class MemoryStore(Protocol):
    """Where the memory of each autoscaler lives between syncs."""

    def load(self, a: Autoscaler) -> Memory:
        """The memory of ``a`` (``Memory()`` when there is none yet)."""

    def save(self, a: Autoscaler, memory: Memory) -> None:
        """Keep ``memory`` after a sync of ``a``."""

    def forget(self, key: str) -> None:
        """``key`` was deleted."""

    def status_section(self, memory: Memory) -> dict | None:
        """What to write into ``status.pyhpa`` (None: nothing)."""


class InProcessMemory:
    """Memory in a dict keyed by ``namespace/name`` (upstream's behaviour: lost on restart)."""

    def __init__(self) -> None:
        self._by_key: dict[str, Memory] = {}

    def __len__(self) -> int:
        return len(self._by_key)

    def load(self, a: Autoscaler) -> Memory:
        return self._by_key.get(a.key) or Memory()

    def save(self, a: Autoscaler, memory: Memory) -> None:
        self._by_key[a.key] = memory

    def forget(self, key: str) -> None:
        self._by_key.pop(key, None)

    def status_section(self, memory: Memory) -> dict | None:
        return None


def memory_to_status(memory: Memory) -> dict:
    """``status.pyhpa`` of a Memory (the snapshot ``history`` format of tests/data/conformance/FORMAT.md)."""
    return memory_to_dict(memory)


def memory_from_status(section: dict | None) -> Memory:
    """The Memory kept in ``status.pyhpa`` (None: no memory yet); raises InputError when malformed."""
    return memory_from_dict(section)
