"""Label and field selectors: parsing, matching, and rendering ``LabelSelector`` objects as strings. Label selectors
are parsed by pyhpa's one parser (``pyhpa.core.selector``, apimachinery's ``labels.Parse`` ported)."""

from __future__ import annotations

import re
from typing import Any, Iterable, Optional

from pyhpa.core.selector import SelectorError, matches, parse_selector

from .errors import bad_request

Requirement = tuple[str, str, tuple[str, ...]]  # a field requirement: (path, op, (value,)); op = or !=

_BIN_RE = re.compile(r"^\s*([^\s!=(),]+)\s*(==|!=|=)\s*([^\s!=(),]*)\s*$")


def _split_terms(text: str) -> list[str]:
    """Split on commas that are not inside parentheses."""
    terms, depth, cur = [], 0, []
    for ch in text:
        depth += ch == "("
        depth -= ch == ")"
        if ch == "," and depth == 0:
            terms.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    terms.append("".join(cur))
    return [t for t in terms if t.strip()]


def parse_label_selector(text: Optional[str]) -> tuple:
    """Parse a ``labelSelector`` query string with pyhpa's port of apimachinery's ``labels.Parse``
    (``pyhpa.core.selector``: =, ==, !=, in, notin, key, !key, >, <; upstream's error texts, as the real API
    server answers them in a 400). Requirements are ``(op, key, value)``."""
    try:
        return parse_selector(text or "")
    except SelectorError as err:
        raise bad_request(str(err), record=False) from None


def labels_match(reqs: Iterable, labels: Optional[dict]) -> bool:
    """True when every label requirement (``parse_label_selector``) holds for ``labels``."""
    return matches(reqs, labels or {})


def parse_field_selector(text: Optional[str], allowed: Iterable[str]) -> list[Requirement]:
    """Parse a ``fieldSelector`` (=, ==, != only); fields outside ``allowed`` are a 400 like the real server."""
    allowed = set(allowed)
    reqs = []
    for term in _split_terms(text or ""):
        m = _BIN_RE.match(term)
        if not m:
            raise bad_request(f'invalid selector: "{text}"; can\'t understand "{term}"', record=False)
        if m.group(1) not in allowed:
            raise bad_request(f'field label not supported: {m.group(1)}', record=False)
        reqs.append((m.group(1), "!=" if m.group(2) == "!=" else "=", (m.group(3),)))
    return reqs


def get_field(obj: Any, dotted: str) -> Any:
    """Read ``a.b.c`` from nested dicts; missing → None."""
    for part in dotted.strip(".").split("."):
        if not isinstance(obj, dict):
            return None
        obj = obj.get(part)
    return obj


def fields_match(reqs: Iterable[Requirement], obj: dict) -> bool:
    """True when every field requirement holds (missing fields compare as empty string)."""
    for path, op, (value,) in reqs:
        actual = get_field(obj, path)
        actual = "" if actual is None else str(actual)
        if (actual == value) != (op == "="):
            return False
    return True


def _expr_string(expr: dict) -> tuple[str, str]:
    key, op = expr.get("key", ""), expr.get("operator", "")
    values = ",".join(sorted(expr.get("values") or []))
    rendered = {"In": f"{key} in ({values})", "NotIn": f"{key} notin ({values})",
                "Exists": key, "DoesNotExist": f"!{key}"}.get(op)
    if rendered is None:
        raise ValueError(f"unknown label selector operator {op!r}")
    return key, rendered


def selector_string(selector: Optional[dict]) -> str:
    """Render a ``LabelSelector`` (matchLabels/matchExpressions) the way the API server does: sorted by key."""
    selector = selector or {}
    reqs = [(k, f"{k}={v}") for k, v in (selector.get("matchLabels") or {}).items()]
    reqs += [_expr_string(e) for e in selector.get("matchExpressions") or []]
    return ",".join(text for _, text in sorted(reqs, key=lambda r: r[0]))


def selector_object(reqs: Iterable) -> dict:
    """Render parsed label requirements (``parse_label_selector``) back into a ``LabelSelector`` object (used in
    custom metrics answers)."""
    match_labels, exprs = {}, []
    ops = {"in": "In", "notin": "NotIn", "exists": "Exists", "!": "DoesNotExist", "!=": "NotIn", ">": "Gt", "<": "Lt"}
    for op, key, value in reqs:
        if op == "=":
            match_labels[key] = value
            continue
        expr = {"key": key, "operator": ops[op]}
        if value is not None:
            expr["values"] = sorted(value) if isinstance(value, frozenset) else [str(value)]
        exprs.append(expr)
    out: dict = {}
    if match_labels:
        out["matchLabels"] = match_labels
    if exprs:
        out["matchExpressions"] = exprs
    return out
