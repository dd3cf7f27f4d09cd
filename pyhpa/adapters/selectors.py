"""Label selectors (``metav1.LabelSelector``, a lightkube model or a dict) as text: the selector text pyhpa's
messages and metric queries carry (``selector_text``), what upstream prints (``selector_go``) and the API's JSON of it
(``selector_json``)."""

from __future__ import annotations

import json
from typing import Any


def selector_text(sel: Any) -> str:
    """A metav1.LabelSelector (model or dict) as selector text (``a=b,c in (x,y)``)."""
    if sel is None:
        return ""
    if not isinstance(sel, dict):
        sel = sel.to_dict()
    parts = [f"{k}={v}" for k, v in sorted((sel.get("matchLabels") or {}).items())]
    for e in sel.get("matchExpressions") or []:
        op, key, values = e.get("operator"), e.get("key"), e.get("values") or []
        if op == "In":
            parts.append(f"{key} in ({','.join(values)})")
        elif op == "NotIn":
            parts.append(f"{key} notin ({','.join(values)})")
        elif op == "Exists":
            parts.append(key)
        elif op == "DoesNotExist":
            parts.append(f"!{key}")
    return ",".join(parts)


def selector_go(sel: Any) -> str:
    """A metav1.LabelSelector (model or dict, or None) as Go's ``%+v`` prints a ``*LabelSelector`` (its generated
    ``String()``): what upstream writes into metric names and errors (``external metric q(nil)``)."""
    if sel is None:
        return "nil"
    if not isinstance(sel, dict):
        sel = sel.to_dict()
    labels = "".join(f"{k}: {v}," for k, v in sorted((sel.get("matchLabels") or {}).items()))
    exprs = "".join(
        f"LabelSelectorRequirement{{Key:{e.get('key') or ''},Operator:{e.get('operator') or ''},"
        f"Values:[{' '.join(e.get('values') or [])}],}},"
        for e in sel.get("matchExpressions") or [])
    return (f"&LabelSelector{{MatchLabels:map[string]string{{{labels}}},"
            f"MatchExpressions:[]LabelSelectorRequirement{{{exprs}}},}}")


def selector_json(sel: Any) -> str | None:
    """A metav1.LabelSelector (model or dict, or None) as the API's JSON text, as Go marshals it (``matchLabels``,
    ``matchExpressions`` with each ``key``, ``operator`` and ``values``; empty ones left out, ``omitempty``); None
    for no selector."""
    if sel is None:
        return None
    if not isinstance(sel, dict):
        sel = sel.to_dict()
    out: dict = {}
    if sel.get("matchLabels"):
        out["matchLabels"] = dict(sel["matchLabels"])
    exprs = []
    for e in sel.get("matchExpressions") or []:
        item = {"key": e.get("key") or "", "operator": e.get("operator") or ""}
        if e.get("values"):
            item["values"] = list(e["values"])
        exprs.append(item)
    if exprs:
        out["matchExpressions"] = exprs
    return json.dumps(out, separators=(",", ":"), sort_keys=True)
