"""Label selectors in their text form: apimachinery's ``labels.Parse`` (k8s.io/apimachinery v0.37.2,
pkg/labels/selector.go), ported: its lexer and recursive-descent parser, the validation of each requirement
(label keys and values, ``NewRequirement``) and ``Requirement.Matches``, with upstream's error texts, so an
invalid ``scale.status.selector`` gives upstream's InvalidSelector message. A parser of our own: no Python
library parses Kubernetes selectors with Go's errors.

A selector is a comma-separated list of requirements: ``k``, ``!k``, ``k=v``, ``k==v``, ``k!=v``,
``k in (a,b)``, ``k notin (a,b)``, ``k>n``, ``k<n``. A requirement is ``(op, key, value)``: op ``=`` (value the
text), ``!=`` (the text), ``in``/``notin`` (a frozenset), ``exists``/``!`` (None), ``>``/``<`` (an int).
Parsing is memoized: it is a pure function of the text and the controller parses the same selector every sync.
"""

from __future__ import annotations

import re
from functools import lru_cache

__all__ = ["SelectorError", "go_parse_int64", "matches", "parse_selector"]


class SelectorError(ValueError):
    """The selector text is not valid; the message is upstream's."""


# -- the lexer
_ERROR, _END, _CLOSE, _COMMA, _NOT, _DOUBLE_EQ, _EQ, _GT, _ID, _IN, _LT, _NEQ, _NOTIN, _OPEN = range(14)
_TOKENS = {")": _CLOSE, ",": _COMMA, "!": _NOT, "==": _DOUBLE_EQ, "=": _EQ, ">": _GT, "in": _IN, "<": _LT,
           "!=": _NEQ, "notin": _NOTIN, "(": _OPEN}
_SPECIAL = frozenset("=!(),><")
_SPACE = frozenset(" \t\r\n")


def _lex(s: str) -> list[tuple[int, str]]:
    """Every (token, literal) of ``s``, ending with the end-of-string token (Lexer.Lex until it)."""
    out, pos, n = [], 0, len(s)
    while True:
        while pos < n and s[pos] in _SPACE:
            pos += 1
        if pos >= n:
            out.append((_END, ""))
            return out
        if s[pos] in _SPECIAL:  # scanSpecialSymbol: the longest operator
            buf, last = "", None
            while pos < n and s[pos] in _SPECIAL:
                buf += s[pos]
                if buf in _TOKENS:
                    last = (_TOKENS[buf], buf)
                    pos += 1
                elif last is not None:
                    break
                else:
                    pos += 1
            out.append(last if last is not None else (_ERROR, f"error expected: keyword found '{buf}'"))
            continue
        start = pos  # scanIDOrKeyword
        while pos < n and s[pos] not in _SPECIAL and s[pos] not in _SPACE:
            pos += 1
        word = s[start:pos]
        out.append((_TOKENS.get(word, _ID), word))


# -- validation (k8s.io/apimachinery/pkg/api/validate/content, util/validation/field)
_KEY_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_KEY_RE = re.compile(_KEY_FMT)
_KEY_MSG = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
_VALUE_FMT = f"({_KEY_FMT})?"
_VALUE_RE = re.compile(_VALUE_FMT)
_VALUE_MSG = ("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must "
              "start and end with an alphanumeric character")
_DNS_LABEL = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS_FMT = f"{_DNS_LABEL}(\\.{_DNS_LABEL})*"
_DNS_RE = re.compile(_DNS_FMT)
_DNS_MSG = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
            "start and end with an alphanumeric character")


def _regex_error(msg: str, regex: str, *examples: str) -> str:
    return msg + " (e.g. " + " or ".join(f"'{e}', " for e in examples) + f"regex used for validation is '{regex}')"


def _full(regex: re.Pattern, value: str) -> bool:
    return regex.fullmatch(value) is not None


def _label_key_errors(value: str) -> list[str]:
    """content.IsLabelKey."""
    errs: list[str] = []
    parts = value.split("/")
    if len(parts) > 2:
        return [f"a valid label key {_regex_error(_KEY_MSG, _KEY_FMT, 'MyName', 'my.name', '123-abc')} with an "
                "optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"]
    name = parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            if len(prefix.encode()) > 253:
                errs.append("prefix part must be no more than 253 bytes")
            if not _full(_DNS_RE, prefix):
                errs.append("prefix part " + _regex_error(_DNS_MSG, _DNS_FMT, "example.com"))
    if not name:
        errs.append("name part must be non-empty")
    elif len(name.encode()) > 63:
        errs.append("name part must be no more than 63 bytes")
    if not _full(_KEY_RE, name):
        errs.append("name part " + _regex_error(_KEY_MSG, _KEY_FMT, "MyName", "my.name", "123-abc"))
    return errs


def _label_value_errors(value: str) -> list[str]:
    """content.IsLabelValue."""
    errs = []
    if len(value.encode()) > 63:
        errs.append("must be no more than 63 bytes")
    if not _full(_VALUE_RE, value):
        errs.append(_regex_error(_VALUE_MSG, _VALUE_FMT, "MyValue", "my_value", "12345"))
    return errs


def _go_quote(s: str) -> str:
    """Go's ``%q`` of a string."""
    out = ['"']
    for ch in s:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch in "\a\b\f\n\r\t\v":
            out.append({"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v"}[ch])
        elif ch.isprintable():
            out.append(ch)
        elif ord(ch) < 0x80:
            out.append(f"\\x{ord(ch):02x}")
        elif ord(ch) < 0x10000:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(f"\\U{ord(ch):08x}")
    return "".join(out) + '"'


def _invalid(field: str, value: str, detail: str) -> str:
    """field.Invalid(...).Error() for a string value."""
    return f"{field}: Invalid value: {_go_quote(value)}: {detail}"


def _aggregate(errs: list[str]) -> str:
    """ErrorList.ToAggregate().Error(): duplicates dropped, one as is, several as ``[a, b]``."""
    unique = list(dict.fromkeys(errs))
    return unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]"


def go_parse_int64(text: str) -> int | None:
    """strconv.ParseInt(text, 10, 64); None for an error."""
    body = text[1:] if text[:1] in ("+", "-") else text
    if not body or not all("0" <= c <= "9" for c in body):
        return None
    v = int(text)
    return v if -2**63 <= v < 2**63 else None


# -- the parser
class _Parser:
    def __init__(self, text: str):
        self.items = _lex(text)
        self.pos = 0

    def peek(self, values: bool = True) -> tuple[int, str]:
        tok, lit = self.items[self.pos]
        return (_ID if values and tok in (_IN, _NOTIN) else tok), lit

    def take(self, values: bool = True) -> tuple[int, str]:
        got = self.peek(values)
        self.pos += 1
        return got

    def parse(self) -> list[tuple]:
        out = []
        while True:
            tok, lit = self.peek()
            if tok in (_ID, _NOT):
                try:
                    out.append(self.requirement())
                except SelectorError as err:
                    raise SelectorError(f"unable to parse requirement: {err}") from None
                t, lit = self.take()
                if t == _END:
                    return out
                if t == _COMMA:
                    t2, l2 = self.peek()
                    if t2 not in (_ID, _NOT):
                        raise SelectorError(f"found '{l2}', expected: identifier after ','")
                    continue
                raise SelectorError(f"found '{lit}', expected: ',' or 'end of string'")
            if tok == _END:
                return out
            raise SelectorError(f"found '{lit}', expected: !, identifier, or 'end of string'")

    def requirement(self) -> tuple:
        tok, key = self.take()
        op = None
        if tok == _NOT:
            op = "!"
            tok, key = self.take()
        if tok != _ID:
            raise SelectorError(f"found '{key}', expected: identifier")
        errs = _label_key_errors(key)
        if errs:
            raise SelectorError(_invalid("<nil>", key, "; ".join(errs)))
        if op == "!" or self.peek()[0] in (_END, _COMMA):  # "!key" takes no operator
            return self.checked(op or "exists", key, [])
        tok, lit = self.take(values=False)
        ops = {_IN: "in", _EQ: "=", _DOUBLE_EQ: "==", _GT: ">", _LT: "<", _NOTIN: "notin", _NEQ: "!="}
        if tok not in ops:
            raise SelectorError(f"found '{lit}', expected: in, notin, =, ==, !=, gt, lt")
        op = ops[tok]
        values = self.set_values() if op in ("in", "notin") else self.exact_value()
        return self.checked(op, key, sorted(values))

    def set_values(self) -> set[str]:
        tok, lit = self.take()
        if tok != _OPEN:
            raise SelectorError(f"found '{lit}' expected: '('")
        tok, lit = self.peek()
        if tok in (_ID, _COMMA):
            values = self.identifiers()
            if self.take()[0] != _CLOSE:
                raise SelectorError(f"found '{lit}', expected: ')'")
            return values
        if tok == _CLOSE:
            self.take()
            return {""}
        raise SelectorError(f"found '{lit}', expected: ',', ')' or identifier")

    def identifiers(self) -> set[str]:
        out: set[str] = set()
        while True:
            tok, lit = self.take()
            if tok == _ID:
                out.add(lit)
                t2, l2 = self.peek()
                if t2 == _COMMA:
                    continue
                if t2 == _CLOSE:
                    return out
                raise SelectorError(f"found '{l2}', expected: ',' or ')'")
            if tok == _COMMA:
                if not out:
                    out.add("")
                t2, _ = self.peek()
                if t2 in (_CLOSE, _COMMA):
                    out.add("")
                if t2 == _CLOSE:
                    return out
                continue
            raise SelectorError(f"found '{lit}', expected: ',', or identifier")

    def exact_value(self) -> set[str]:
        tok, _ = self.peek()
        if tok in (_END, _COMMA):
            return {""}
        tok, lit = self.take()
        if tok == _ID:
            return {lit}
        raise SelectorError(f"found '{lit}', expected: identifier")

    @staticmethod
    def checked(op: str, key: str, values: list[str]) -> tuple:
        """NewRequirement: the requirement, or its aggregated field errors."""
        errs = []
        if op in (">", "<"):  # one value: the parser reads exactly one
            for i, v in enumerate(values):
                if go_parse_int64(v) is None:
                    errs.append(_invalid(f"values[{i}]", v, "for 'Gt', 'Lt' operators, the value must be an integer"))
        for i, v in enumerate(values):
            msgs = _label_value_errors(v)
            if msgs:
                errs.append(_invalid(f"values[{i}][{key}]", v, "; ".join(msgs)))
        if errs:
            raise SelectorError(_aggregate(errs))
        if op in ("=", "=="):
            return ("=", key, values[0])
        if op == "!=":
            return ("!=", key, values[0])
        if op in ("in", "notin"):
            return (op, key, frozenset(values))
        if op in (">", "<"):
            return (op, key, go_parse_int64(values[0]))
        return (op, key, None)


@lru_cache(maxsize=4096)
def parse_selector(text: str) -> tuple:
    """Parse selector text into requirements (``labels.Parse``); raises SelectorError with upstream's message.
    Empty (or blank) text selects everything."""
    return tuple(_Parser(text).parse())


def matches(requirements: tuple, labels: dict[str, str]) -> bool:
    """Whether ``labels`` satisfy every requirement (``Requirement.Matches``)."""
    for op, key, value in requirements:
        have = labels.get(key)
        if op == "=":
            ok = have == value
        elif op == "!=":
            ok = have != value
        elif op == "in":
            ok = have is not None and have in value
        elif op == "notin":
            ok = have is None or have not in value
        elif op == "exists":
            ok = have is not None
        elif op == "!":
            ok = have is None
        else:
            number = None if have is None else go_parse_int64(have)
            ok = number is not None and (number > value if op == ">" else number < value)
        if not ok:
            return False
    return True
