"""Label selectors in their text form (``labels.Parse`` of apimachinery).

A selector is a comma-separated list of requirements: ``k``, ``!k``, ``k=v``, ``k==v``,
``k!=v``, ``k in (a,b)``, ``k notin (a,b)``, ``k>n``, ``k<n``. Parsing is memoized: it is
a pure function of the text and the controller parses the same selector every sync.
"""

from __future__ import annotations

import re
from functools import lru_cache

__all__ = ["SelectorError", "matches", "parse_selector"]


_SET = re.compile(r"^\s*(!?)\s*([A-Za-z0-9_./-]+)\s+(in|notin)\s+\(([^)]*)\)\s*$")
_CMP = re.compile(r"^\s*([A-Za-z0-9_./-]+)\s*(==|=|!=|>|<)\s*([A-Za-z0-9_.-]*)\s*$")
_EXISTS = re.compile(r"^\s*(!?)\s*([A-Za-z0-9_./-]+)\s*$")


class SelectorError(ValueError):
    """The selector text is not valid."""


def _split(text: str) -> list[str]:
    parts, depth, cur = [], 0, []
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return parts


def _requirement(part: str) -> tuple:
    m = _SET.match(part)
    if m and not m.group(1):
        values = frozenset(v.strip() for v in m.group(4).split(",") if v.strip())
        return (m.group(3), m.group(2), values)
    m = _CMP.match(part)
    if m:
        op = {"==": "=", "=": "="}.get(m.group(2), m.group(2))
        if op in (">", "<") and not m.group(3).lstrip("-").isdigit():
            raise SelectorError(f"for '{op}' operator, the value must be an integer: {part.strip()!r}")
        return (op, m.group(1), m.group(3))
    m = _EXISTS.match(part)
    if m:
        return ("!" if m.group(1) else "exists", m.group(2), None)
    raise SelectorError(f"unable to parse requirement: {part.strip()!r}")


@lru_cache(maxsize=4096)
def parse_selector(text: str) -> tuple:
    """Parse selector text into requirements; raises SelectorError. Empty text selects everything."""
    if not text.strip():
        return ()
    return tuple(_requirement(p) for p in _split(text))


def matches(requirements: tuple, labels: dict[str, str]) -> bool:
    """Whether ``labels`` satisfy every requirement."""
    for op, key, value in requirements:
        if op == "=":
            if labels.get(key) != value:
                return False
            continue
        have = labels.get(key)
        if op == "=":
            ok = have == value
        elif op == "!=":
            ok = have != value
        elif op == "in":
            ok = have in value
        elif op == "notin":
            ok = have not in value
        elif op == "exists":
            ok = have is not None
        elif op == "!":
            ok = have is None
        else:
            ok = have is not None and have.lstrip("-").isdigit() and (
                int(have) > int(value) if op == ">" else int(have) < int(value)
            )
        if not ok:
            return False
    return True
