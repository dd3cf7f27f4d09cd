"""CEL validation rules (``x-kubernetes-validations``) of a CRD's schema, evaluated as the API server does.

Expressions are compiled and evaluated by ``cel-expr-python`` (``from cel_expr_python import cel``), the CEL
project's own Python binding of its C++ implementation (the same language definition and standard library as
cel-go, which the API server uses), with its strings, math, optional and encoders extensions loaded as the
API server loads cel-go's; nothing here parses or evaluates CEL itself. (The pure-Python ``cel-python``
was tried first: it evaluated the schedules' pairwise overlap rule about 100 times slower.) What the double does around it follows the
Kubernetes documentation of validation rules ("Validation rules" in "Extend the Kubernetes API with
CustomResourceDefinitions"):

- a rule sits on a schema node and sees that node's value as ``self``; it is evaluated for every value the
  node has in the object (each item of a list, each value of a map), and not when the value is absent;
- a rule that names ``oldSelf`` is a transition rule: evaluated only on an update, and only where the old
  value can be found (same property, same map key, same list-map keys), with ``oldSelf`` that value;
- ratcheting (``CRDValidationRatcheting``, on by default since 1.30): on an update, a value equal to the one it
  replaces is not re-checked by its (non-transition) rules;
- a failed rule is one field error at the node's path plus its ``fieldPath``, with the rule's ``message``
  (or ``messageExpression``, or ``failed rule: <rule>``) and its ``reason`` (``FieldValueInvalid`` by
  default), worded as apimachinery's field errors: the bad value is printed for a scalar and left out for
  an object or a list (``spec.schedules[0].end: Invalid value: end must be after start``,
  ``spec.size: Invalid value: 11: ...``, ``Forbidden: ...``, ``Required value: ...``);
- an expression that fails to evaluate (``no such key``, a malformed ``timestamp``) is an Invalid error at
  the node, ``Invalid value: "object": <error> evaluating rule: <message or rule>``; one that does not
  compile refuses the CRD itself.

Kubernetes' own CEL libraries (``isSorted``, ``quantity``, ``url``, ``format``, ``ip``...) are not provided: a
rule that calls one fails to compile here (none of pyhpa's rules uses them). Cost limits are not estimated.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Optional

from cel_expr_python import cel
from cel_expr_python.ext import ext_encoders, ext_math, ext_optional, ext_strings

_ENV = cel.NewEnv(variables={"self": cel.Type.DYN, "oldSelf": cel.Type.DYN},
                  extensions=[ext_strings.ExtStrings(), ext_math.ExtMath(), ext_optional.ExtOptional(),
                              ext_encoders.ExtEncoders()])
_OLD_SELF = re.compile(r"\boldSelf\b")
_MISSING_KEY = re.compile(r'Key not found in map ?: ?"([^"]*)"')


class RuleCompileError(ValueError):
    """A rule that does not compile; ``path`` is where it sits in the CRD's schema, ``text`` the rule as the API
    server prints it (``rule_value``)."""

    def __init__(self, path: str, text: str, message: str):
        super().__init__(f"{path}: {message}")
        self.path, self.text, self.message = path, text, message


@dataclass(frozen=True)
class FieldError:
    """One failed rule: ``field`` the object path (``spec.schedules[0].end``), ``reason`` as the API server's
    ``causes[].reason``, ``message`` the whole text after the field (``Invalid value: "object": ...``)."""

    field: str
    reason: str
    message: str


@dataclass(frozen=True)
class _Rule:
    text: str
    program: Any
    message: Optional[str]
    message_program: Any
    field_path: str
    reason: str
    transition: bool

    @property
    def shown(self) -> str:
        """How an error names the rule: its message, else its expression (``ruleErrorString``)."""
        return (self.message or "").strip() or self.text.strip()


def go_json(value: Any) -> str:
    """``value`` as Go's ``json.Marshal`` writes it (compact, ``<``, ``>`` and ``&`` escaped): how the API
    server prints a structured value in ``Invalid value: ...``."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def rule_value(rule: dict) -> str:
    """A ``x-kubernetes-validations`` entry as kube-apiserver prints the invalid one (its Go struct as JSON)."""
    return go_json({"Rule": rule.get("rule", ""), "Message": rule.get("message", ""),
                    "MessageExpression": rule.get("messageExpression", ""), "Reason": rule.get("reason"),
                    "FieldPath": rule.get("fieldPath", ""), "OptionalOldSelf": rule.get("optionalOldSelf")})


def _compile(text: str, where: str, rule: dict) -> Any:
    try:
        return _ENV.compile(text)
    except RuntimeError as err:  # cel-expr-python's compile error: "INVALID_ARGUMENT: ERROR: <input>:1:9: ..."
        detail = str(err).strip().removeprefix("INVALID_ARGUMENT: ").removesuffix(" [INVALID_ARGUMENT]")
        raise RuleCompileError(where, rule_value(rule), f"compilation failed: {detail}") from None


def _rules(node: dict, where: str) -> tuple[_Rule, ...]:
    out = []
    for i, r in enumerate(node.get("x-kubernetes-validations") or ()):
        at = f"{where}.x-kubernetes-validations[{i}]"
        text = r.get("rule", "")
        msg_expr = r.get("messageExpression")
        out.append(_Rule(text=text, program=_compile(text, f"{at}.rule", r), message=r.get("message"),
                         message_program=_compile(msg_expr, f"{at}.messageExpression", r) if msg_expr else None,
                         field_path=r.get("fieldPath") or "", reason=r.get("reason") or "FieldValueInvalid",
                         transition=bool(_OLD_SELF.search(text))))
    return tuple(out)


class RuleSet:
    """The compiled rules of one CRD version's ``openAPIV3Schema``; ``errors(obj, old)`` evaluates them.

    Raises ``RuleCompileError`` for a rule or messageExpression that does not compile.
    """

    def __init__(self, schema: Optional[dict]):
        self._compiled: dict[int, tuple[_Rule, ...]] = {}
        self._below: set[int] = set()  # nodes with a rule at or below them: only those are walked
        self._schema = schema or {}
        self.empty = not self._walk_compile(self._schema, "openAPIV3Schema")

    def _walk_compile(self, node: Any, where: str) -> bool:
        if not isinstance(node, dict):
            return False
        rules = self._compiled[id(node)] = _rules(node, where)
        found = bool(rules)
        for key, sub in (node.get("properties") or {}).items():
            found |= self._walk_compile(sub, f"{where}.properties[{key}]")
        for key in ("items", "additionalProperties"):
            if isinstance(node.get(key), dict):
                found |= self._walk_compile(node[key], f"{where}.{key}")
        if found:
            self._below.add(id(node))
        return found

    def errors(self, obj: dict, old: Optional[dict] = None) -> list[FieldError]:
        """Every failed rule for ``obj`` (``old``: the stored object on an update, None on a create)."""
        out: list[FieldError] = []
        if not self.empty:
            self._walk(self._schema, obj, old, "", out)
        return out

    def _walk(self, node: dict, value: Any, old: Any, path: str, out: list[FieldError]) -> None:
        if id(node) not in self._below:
            return
        rules = self._compiled.get(id(node), ())
        unchanged = old is not None and old == value
        for rule in rules:
            if rule.transition and old is None:
                continue
            if unchanged and not rule.transition:
                continue  # ratcheting
            error = _evaluate(rule, node, value, old, path)
            if error is not None:
                out.append(error)
        if isinstance(value, dict):
            props = node.get("properties") or {}
            extra = node.get("additionalProperties") if isinstance(node.get("additionalProperties"), dict) else None
            for key, sub_value in value.items():
                sub = props.get(key, extra)
                if isinstance(sub, dict):
                    sub_old = old.get(key) if isinstance(old, dict) else None
                    self._walk(sub, sub_value, sub_old, _child(path, key, extra is not None and key not in props), out)
        elif isinstance(value, list) and isinstance(node.get("items"), dict):
            keys = node.get("x-kubernetes-list-map-keys") if node.get("x-kubernetes-list-type") == "map" else None
            for i, item in enumerate(value):
                self._walk(node["items"], item, _old_item(item, old, keys), f"{path}[{i}]", out)


def _child(path: str, key: str, map_value: bool) -> str:
    if map_value:
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


def _old_item(item: Any, old: Any, keys: Optional[list]) -> Any:
    """The old list item a new one corresponds to: only in a list-map, by its keys."""
    if not keys or not isinstance(old, list) or not isinstance(item, dict):
        return None
    want = tuple(item.get(k) for k in keys)
    for o in old:
        if isinstance(o, dict) and tuple(o.get(k) for k in keys) == want:
            return o
    return None


def _type_name(node: dict) -> str:
    return node.get("type") or ("integer-or-string" if node.get("x-kubernetes-int-or-string") else "object")


def _value_text(node: dict, value: Any) -> str:
    """The bad value as the API server prints it after ``Invalid value:``: none for an object or an array
    (``field.OmitValueType``), a quoted string, a plain number or bool."""
    if _type_name(node) in ("object", "array") or isinstance(value, (dict, list)):
        return ""
    if isinstance(value, str):
        return json.dumps(value) + ": "
    if isinstance(value, bool):
        return ("true" if value else "false") + ": "
    return ("null" if value is None else str(value)) + ": "


def _evaluate(rule: _Rule, node: dict, value: Any, old: Any, path: str) -> Optional[FieldError]:
    """One rule on one value, as the API server's CEL validator words its outcome."""
    activation = {"self": value, "oldSelf": old}
    result = rule.program.eval(data=activation)
    kind = result.type()
    if kind == cel.Type.ERROR:  # at the node itself, the schema type as the value, the message (or rule) named
        return FieldError(path, "FieldValueInvalid", f'Invalid value: "{_type_name(node)}": '
                                                     f"{_error_text(result.value())} evaluating rule: {rule.shown}")
    if kind != cel.Type.BOOL:
        return FieldError(path, "FieldValueInvalid", f'Invalid value: "{_type_name(node)}": '
                                                     f"rule did not evaluate to a bool: {rule.shown}")
    if result.value():
        return None
    field = path + rule.field_path if rule.field_path.startswith((".", "[")) else (
        f"{path}.{rule.field_path}" if rule.field_path else path)
    message = _message(rule, activation)
    if rule.reason == "FieldValueForbidden":
        return FieldError(field, rule.reason, f"Forbidden: {message}")
    if rule.reason == "FieldValueRequired":
        return FieldError(field, rule.reason, f"Required value: {message}")
    if rule.reason == "FieldValueDuplicate":
        return FieldError(field, rule.reason, "Duplicate value" + (f": {_value_text(node, value)[:-2]}"
                                                                   if _value_text(node, value) else ""))
    return FieldError(field, "FieldValueInvalid", f"Invalid value: {_value_text(node, value)}{message}")


def _message(rule: _Rule, activation: dict) -> str:
    """``messageExpression`` when it gives a non-empty string, else ``message``, else ``failed rule: <rule>``."""
    if rule.message_program is not None:
        got = rule.message_program.eval(data=activation)
        if got.type() == cel.Type.STRING and got.value().strip():
            return got.value().strip()
    return (rule.message or "").strip() or f"failed rule: {rule.text.strip()}"


def _error_text(text: str) -> str:
    """cel-expr-python's status text as cel-go words it (``NOT_FOUND: Key not found in map : "x"`` is
    ``no such key: x``); other errors without their status code."""
    missing = _MISSING_KEY.search(str(text))
    if missing:
        return f"no such key: {missing.group(1)}"
    code, sep, rest = str(text).partition(": ")
    return rest if sep and code.isupper() else str(text)
