"""JSON merge patch (RFC 7386) and JSON patch (RFC 6902) on plain dicts."""

from __future__ import annotations

import copy
from typing import Any


class PatchError(Exception):
    """A JSON patch operation could not be applied; ``test_failed`` marks a failed ``test`` op."""

    def __init__(self, message: str, test_failed: bool = False):
        super().__init__(message)
        self.test_failed = test_failed


def merge_patch(target: Any, patch: Any) -> Any:
    """Return ``target`` merged with ``patch`` (null deletes a key, non-dicts replace). Inputs are not mutated."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if key.startswith("$"):  # strategic-merge directives ($patch, $retainKeys...) are ignored
            continue
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def _tokens(pointer: str) -> list[str]:
    if pointer == "":
        return []
    if not pointer.startswith("/"):
        raise PatchError(f"invalid JSON pointer {pointer!r}")
    return [t.replace("~1", "/").replace("~0", "~") for t in pointer[1:].split("/")]


def _index(container: list, token: str, allow_end: bool) -> int:
    if token == "-" and allow_end:
        return len(container)
    if not token.isdigit():
        raise PatchError(f"invalid array index {token!r}")
    idx = int(token)
    if idx > len(container) or (idx == len(container) and not allow_end):
        raise PatchError(f"array index {idx} out of range")
    return idx


def _parent(doc: Any, tokens: list[str]) -> Any:
    node = doc
    for token in tokens[:-1]:
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list):
            node = node[_index(node, token, False)]
        else:
            raise PatchError(f"path element {token!r} does not exist")
    return node


def _get(doc: Any, pointer: str) -> Any:
    tokens = _tokens(pointer)
    if not tokens:
        return doc
    parent, last = _parent(doc, tokens), tokens[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise PatchError(f"path {pointer!r} does not exist")
        return parent[last]
    if isinstance(parent, list):
        return parent[_index(parent, last, False)]
    raise PatchError(f"path {pointer!r} does not exist")


def _add(doc: Any, pointer: str, value: Any) -> Any:
    tokens = _tokens(pointer)
    if not tokens:
        return value
    parent, last = _parent(doc, tokens), tokens[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        parent.insert(_index(parent, last, True), value)
    else:
        raise PatchError(f"cannot add at {pointer!r}")
    return doc


def _remove(doc: Any, pointer: str) -> Any:
    tokens = _tokens(pointer)
    if not tokens:
        raise PatchError("cannot remove the document root")
    parent, last = _parent(doc, tokens), tokens[-1]
    if isinstance(parent, dict) and last in parent:
        del parent[last]
    elif isinstance(parent, list):
        del parent[_index(parent, last, False)]
    else:
        raise PatchError(f"path {pointer!r} does not exist")
    return doc


def _apply_op(doc: Any, op: dict) -> Any:
    if not isinstance(op, dict) or "op" not in op or "path" not in op:
        raise PatchError(f"malformed JSON patch operation {op!r}")
    kind, path = op["op"], op["path"]
    if kind == "add":
        return _add(doc, path, copy.deepcopy(op.get("value")))
    if kind == "remove":
        return _remove(doc, path)
    if kind == "replace":
        _get(doc, path)
        return _add(_remove(doc, path), path, copy.deepcopy(op.get("value"))) if _tokens(path) else op.get("value")
    if kind in ("move", "copy"):
        value = copy.deepcopy(_get(doc, op.get("from", "")))
        if kind == "move":
            doc = _remove(doc, op["from"])
        return _add(doc, path, value)
    if kind == "test":
        if _get(doc, path) != op.get("value"):
            raise PatchError(f"testing value {path} failed", test_failed=True)
        return doc
    raise PatchError(f"unknown JSON patch operation {kind!r}")


def json_patch(doc: Any, ops: Any) -> Any:
    """Apply a list of RFC 6902 operations to a copy of ``doc``."""
    if not isinstance(ops, list):
        raise PatchError("a JSON patch must be a list of operations")
    doc = copy.deepcopy(doc)
    for op in ops:
        doc = _apply_op(doc, op)
    return doc
