"""Fault injection: requests matching a rule are delayed, answered with an error, or never answered (before or after
they are carried out)."""

from __future__ import annotations

import asyncio
import re
import threading
from dataclasses import dataclass, field
from typing import Optional

from aiohttp import web

from .errors import KubeError


@dataclass(eq=False)
class Fault:
    """One rule. ``status`` None with a ``delay`` only slows requests down; ``lost``: the request is carried out,
    then its answer never comes (as when a response is lost on the way back); ``hits`` counts applications."""

    method: Optional[str]
    path_regex: str
    status: Optional[int]
    delay: float = 0.0
    hang: bool = False
    times: Optional[int] = None
    query_regex: Optional[str] = None
    message: Optional[str] = None
    lost: bool = False
    hits: int = 0
    _path: re.Pattern = field(init=False, repr=False)
    _query: Optional[re.Pattern] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._path = re.compile(self.path_regex)
        self._query = re.compile(self.query_regex) if self.query_regex else None

    def matches(self, request: web.Request) -> bool:
        """Method (None = any), ``re.search`` of the path, and of the raw query string when given."""
        if self.method and self.method.upper() != request.method:
            return False
        if not self._path.search(request.path):
            return False
        return self._query is None or bool(self._query.search(request.query_string))

    @property
    def exhausted(self) -> bool:
        """True once the rule has been applied ``times`` times."""
        return self.times is not None and self.hits >= self.times


class Faults:
    """The active rules, consulted in insertion order; the first matching rule applies."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._rules: list[Fault] = []

    def add(self, fault: Fault) -> Fault:
        """Install a rule."""
        with self._lock:
            self._rules.append(fault)
        return fault

    def remove(self, fault: Fault) -> None:
        """Uninstall a rule (no-op when already gone)."""
        with self._lock:
            if fault in self._rules:
                self._rules.remove(fault)

    def clear(self) -> None:
        """Uninstall every rule."""
        with self._lock:
            self._rules.clear()

    def take(self, request: web.Request) -> Optional[Fault]:
        """The rule that applies to ``request`` (counting the hit), or None."""
        with self._lock:
            for fault in self._rules:
                if not fault.exhausted and fault.matches(request):
                    fault.hits += 1
                    if fault.exhausted:
                        self._rules.remove(fault)
                    return fault
        return None


async def apply_fault(fault: Fault, request: web.Request, stopping: asyncio.Event) -> None:
    """Delay, hang (until the client goes away or the double stops) and/or raise the rule's error (before the
    request is carried out; a ``lost`` rule's hang comes after it: ``hang``)."""
    if fault.delay:
        await asyncio.sleep(fault.delay)
    if fault.hang:
        await hang(request, stopping)
    if fault.status and not fault.lost:
        raise KubeError(fault.status, fault.message or f"kubedouble: injected fault {fault.status}")


async def hang(request: web.Request, stopping: asyncio.Event) -> None:
    """Answer nothing until the client goes away or the double stops, then raise 503."""
    while not stopping.is_set():
        transport = request.transport
        if transport is None or transport.is_closing():
            break
        try:
            await asyncio.wait_for(stopping.wait(), 0.1)
        except asyncio.TimeoutError:
            pass
    raise KubeError(503, "kubedouble: hanging request released")
