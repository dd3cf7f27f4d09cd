"""Schema checks for every body the double stores.

Built-in kinds use the strict JSON schemas shipped with ``kubernetes_validate`` through the exact algorithm of
``kubernetes_validate.validate(obj, version, strict=True)`` (same files, same Draft 2020-12 validator, same
reference registry), with the compiled validator cached per kind because the uncached call re-reads a 1.8 MB
definitions file each time. CRD objects are checked with ``jsonschema`` against the CRD's ``openAPIV3Schema``, then with its CEL
``x-kubernetes-validations`` rules (``kubedouble.cel``); a CRD whose rules do not compile is refused.
"""

from __future__ import annotations

import copy
import functools
import re
from typing import Any, Optional

import jsonschema
import kubernetes_validate
from kubernetes_validate import utils as kv_utils
from packaging.version import Version
from referencing import Registry as RefRegistry
from referencing import Resource

from .cel import RuleCompileError, RuleSet, go_json
from .errors import KubeError, invalid, invalid_causes
from .registry import ResourceType

_NAME_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL_NAME_RE = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_LABEL_VALUE_RE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_COPY_KEYS = ("type", "required", "enum", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
              "minLength", "maxLength", "pattern", "minItems", "maxItems", "uniqueItems", "multipleOf",
              "minProperties", "maxProperties", "format", "description", "default")
_META_SCHEMA = {"type": "object", "properties": {
    "name": {"type": "string"}, "namespace": {"type": "string"}, "generateName": {"type": "string"},
    "labels": {"type": "object", "additionalProperties": {"type": "string"}},
    "annotations": {"type": "object", "additionalProperties": {"type": "string"}}}}


def resolve_version(wanted: str) -> str:
    """The schema version ``kubernetes_validate`` ships that is closest to ``wanted`` (e.g. "1.37" → "1.37.0")."""
    available = sorted(set(kv_utils.all_versions()), key=Version)
    target = Version(wanted.lstrip("v"))
    older = [v for v in available if Version(v) <= Version(f"{target.major}.{target.minor}.999")]
    return older[-1] if older else available[0]


@functools.lru_cache(maxsize=None)
def _definitions(schema_dir: str) -> Any:
    return kv_utils.schema_contents(f"kubernetes-json-schema/{schema_dir}/_definitions.json", schema_dir)


@functools.lru_cache(maxsize=None)
def _builtin_validator(version: str, kind: str, api_version: str) -> Optional[jsonschema.Validator]:
    """Mirror of ``kubernetes_validate.validate`` (strict) with the compiled validator cached."""
    schema_dir = f"v{version}-local-strict"
    slug = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)
    try:
        schema = kv_utils.schema_contents(f"kubernetes-json-schema/{schema_dir}/{kind.lower()}-{slug}.json", version)
    except FileNotFoundError:
        return None
    registry = Resource.from_contents(_definitions(schema_dir)) @ (Resource.from_contents(schema) @ RefRegistry())
    return jsonschema.validators.Draft202012Validator(schema, registry=registry)


def _error_path(err: jsonschema.ValidationError) -> str:
    out = ""
    for part in err.absolute_path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _invalid_from(rt: ResourceType, obj: dict, err: jsonschema.ValidationError) -> KubeError:
    name = (obj.get("metadata") or {}).get("name", "")
    value = err.instance if not isinstance(err.instance, (dict, list)) else None
    msg = f"Invalid value: {value!r}: {err.message}" if value is not None else err.message
    return invalid(rt.kind, rt.group, name, _error_path(err), msg)


_JSON_TYPE = {str: "string", bool: "boolean", int: "integer", float: "number", dict: "object", list: "array",
              type(None): "null"}
#: schema errors after which kube-apiserver evaluates no CEL rule (the cost of rules is bounded by maxLength,
#: maxItems, enum and types only when they hold)
_BLOCKING = {"type", "required", "enum", "maxLength", "maxItems", "maxProperties"}


def _k8s_error(err: jsonschema.ValidationError) -> tuple[str, str, str]:
    """(field, reason, message) of a schema error as kube-apiserver words it (checked against v1.37.2 in
    tests/e2e/test_crd_real.py: ``spec.x: Invalid value: "b": spec.x in body should match '^a+$'``)."""
    path = _error_path(err)
    value, rule = err.instance, err.validator_value
    shown = go_json(value)
    kind = err.validator
    if kind == "required":
        missing = re.search(r"'([^']*)' is a required property", err.message)
        key = missing.group(1) if missing else ""
        return (f"{path}.{key}" if path else key), "FieldValueRequired", "Required value"
    if kind == "type":
        got = _JSON_TYPE.get(type(value), "object")
        want = rule if isinstance(rule, str) else ",".join(rule)
        return path, "FieldValueTypeInvalid", f'Invalid value: "{got}": {path} in body must be of type {want}: "{got}"'
    if kind == "enum":
        return path, "FieldValueNotSupported", (f"Unsupported value: {shown}: supported values: "
                                                + ", ".join(go_json(v) for v in rule))
    if kind == "maxLength":
        return path, "FieldValueTooLong", f"Too long: may not be more than {rule} bytes"
    if kind == "maxItems":
        return path, "FieldValueTooMany", f"Too many: {len(value)}: must have at most {rule} items"
    should = {"pattern": f"should match '{rule}'", "minimum": f"should be greater than or equal to {rule}",
              "maximum": f"should be less than or equal to {rule}", "minLength": f"should be at least {rule} chars long",
              "minItems": f"should have at least {rule} items"}.get(kind)
    if kind == "minItems":
        shown = str(len(value))
    if should is None:
        return path, "FieldValueInvalid", f"Invalid value: {shown}: {err.message}"
    return path, "FieldValueInvalid", f"Invalid value: {shown}: {path} in body {should}"


def schema_errors(errors) -> tuple[list[tuple[str, str, str]], bool]:
    """Every schema error, worded as kube-apiserver does and in its order (by field path), and whether one of
    them keeps the CEL rules from running (``_BLOCKING``)."""
    ordered = sorted(errors, key=lambda e: [(0, p) if isinstance(p, int) else (1, p) for p in e.absolute_path])
    return [_k8s_error(e) for e in ordered], any(e.validator in _BLOCKING for e in ordered)


def _crd_node(s: Any) -> Any:
    """Convert one OpenAPI v3 structural-schema node to JSON Schema (draft 4 semantics)."""
    if not isinstance(s, dict):
        return s
    out = {k: s[k] for k in _COPY_KEYS if k in s}
    for key in ("allOf", "anyOf", "oneOf"):
        if key in s:
            out[key] = [_crd_node(x) for x in s[key]]
    if "not" in s:
        out["not"] = _crd_node(s["not"])
    if "items" in s:
        out["items"] = _crd_node(s["items"])
    if "properties" in s:
        out["properties"] = {k: _crd_node(v) for k, v in s["properties"].items()}
    if isinstance(s.get("additionalProperties"), dict):
        out["additionalProperties"] = _crd_node(s["additionalProperties"])
    elif "additionalProperties" in s:
        out["additionalProperties"] = s["additionalProperties"]
    _lenient_extensions(s, out)
    return out


def _lenient_extensions(s: dict, out: dict) -> None:
    if s.get("x-kubernetes-int-or-string"):
        out["type"] = ["integer", "string"]  # as apiextensions does: a number with a fraction is refused
    if s.get("x-kubernetes-embedded-resource"):
        props = out.setdefault("properties", {})
        for k in ("apiVersion", "kind"):
            props.setdefault(k, {"type": "string"})
        props.setdefault("metadata", {"type": "object"})
    preserve = s.get("x-kubernetes-preserve-unknown-fields")
    if out.get("type") == "object" and "properties" in out and "additionalProperties" not in out and not preserve:
        out["additionalProperties"] = False  # the real server prunes unknown fields; the double rejects them
    if s.get("nullable"):
        types = out.get("type")
        if types is not None:
            out["type"] = (types if isinstance(types, list) else [types]) + ["null"]
        if "enum" in out:
            out["enum"] = list(out["enum"]) + [None]


def crd_json_schema(openapi: dict) -> dict:
    """JSON Schema for a whole custom object: the CRD schema plus apiVersion/kind/metadata."""
    out = _crd_node(openapi or {"type": "object", "x-kubernetes-preserve-unknown-fields": True})
    props = out.setdefault("properties", {})
    props.setdefault("apiVersion", {"type": "string"})
    props.setdefault("kind", {"type": "string"})
    props["metadata"] = _META_SCHEMA
    out.setdefault("type", "object")
    return out


def apply_defaults(schema: Any, obj: Any) -> None:
    """Fill ``default`` values from a CRD schema into ``obj`` in place (like the API server's defaulting)."""
    if not isinstance(schema, dict):
        return
    if isinstance(obj, dict):
        for key, sub in (schema.get("properties") or {}).items():
            if key not in obj and isinstance(sub, dict) and "default" in sub:
                obj[key] = copy.deepcopy(sub["default"])
            if key in obj:
                apply_defaults(sub, obj[key])
        if isinstance(schema.get("additionalProperties"), dict):
            for key in obj:
                apply_defaults(schema["additionalProperties"], obj[key])
    elif isinstance(obj, list):
        for item in obj:
            apply_defaults(schema.get("items"), item)


def check_metadata(rt: ResourceType, obj: dict) -> None:
    """Name and label syntax checks the API server does for every kind."""
    meta = obj.get("metadata") or {}
    name = meta.get("name", "")
    if not isinstance(name, str) or len(name) > 253 or not _NAME_RE.match(name):
        raise invalid(rt.kind, rt.group, str(name), "metadata.name",
                      f"Invalid value: {name!r}: a lowercase RFC 1123 subdomain must consist of lower case "
                      "alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character")
    for key, value in (meta.get("labels") or {}).items():
        prefix, _, lname = key.rpartition("/")
        ok_key = _LABEL_NAME_RE.match(lname) and len(lname) <= 63 and (not prefix or _NAME_RE.match(prefix))
        ok_value = isinstance(value, str) and len(value) <= 63 and _LABEL_VALUE_RE.match(value)
        if not (ok_key and ok_value):
            raise invalid(rt.kind, rt.group, name, "metadata.labels", f"Invalid value: {key}={value!r}")


class Validator:
    """Validates objects before they are stored; raises 422 ``KubeError`` with the schema message."""

    def __init__(self, k8s_version: str = "1.37"):
        self.version = resolve_version(k8s_version)
        self._crd_cache: dict[tuple[int, str], tuple[ResourceType, jsonschema.Validator, RuleSet]] = {}

    def validate(self, rt: ResourceType, version: str, obj: dict, old: Optional[dict] = None) -> None:
        """Check ``obj`` (a full object of type ``rt`` served at ``version``; ``old`` the object it replaces on an
        update, for CEL transition rules and ratcheting)."""
        check_metadata(rt, obj)
        if rt.schemas is None:
            self.validate_builtin(obj, rt)
            if rt.kind == "CustomResourceDefinition":
                check_crd_rules(obj)
        else:
            self._validate_crd(rt, version, obj, old)

    def validate_builtin(self, obj: dict, rt: Optional[ResourceType] = None) -> None:
        """Strict ``kubernetes_validate`` schema check for a built-in kind (also used for ``Scale`` bodies)."""
        validator = _builtin_validator(self.version, obj.get("kind", ""), obj.get("apiVersion", ""))
        if validator is None:
            return
        err = jsonschema.exceptions.best_match(validator.iter_errors(obj))
        if err is not None:
            rt = rt or ResourceType("", ["v1"], "", obj.get("kind", ""), True)
            raise _invalid_from(rt, obj, err)

    def reference_validate(self, obj: dict) -> None:
        """Call ``kubernetes_validate.validate`` itself (slow, uncached); used to prove parity in tests."""
        kubernetes_validate.validate(obj, self.version, strict=True)

    def _validate_crd(self, rt: ResourceType, version: str, obj: dict, old: Optional[dict] = None) -> None:
        key = (id(rt), version)  # the cached entry keeps rt alive, so its id cannot be reused
        if key not in self._crd_cache:
            schema = (rt.schemas or {}).get(version) or {}
            self._crd_cache[key] = (rt, jsonschema.Draft4Validator(crd_json_schema(schema)), RuleSet(schema))
        _, validator, rules = self._crd_cache[key]
        causes, blocking = schema_errors(validator.iter_errors(obj))
        if blocking:  # kube-apiserver evaluates no CEL rule on an object with such errors, and says so
            causes.append(("<nil>", "FieldValueInvalid", "Invalid value: null: some validation rules were not checked "
                                                         "because the object was invalid; correct the existing errors "
                                                         "to complete validation"))
        else:
            causes += [(e.field, e.reason, e.message) for e in rules.errors(obj, old)]
        if causes:
            raise invalid_causes(rt.kind, rt.group, (obj.get("metadata") or {}).get("name", ""), causes)


def check_crd_rules(crd: dict) -> None:
    """Refuse a CustomResourceDefinition whose CEL rules do not compile, as the API server does (422 naming the
    rule's place in the schema)."""
    name = (crd.get("metadata") or {}).get("name", "")
    versions = (crd.get("spec") or {}).get("versions") or []
    schemas = [((v or {}).get("schema") or {}).get("openAPIV3Schema") for v in versions]
    # The API server validates its internal form, where a schema every version shares is spec.validation.
    shared = len(schemas) > 0 and all(sch == schemas[0] for sch in schemas)
    for i, schema in enumerate(schemas[:1] if shared else schemas):
        try:
            RuleSet(schema)
        except RuleCompileError as err:
            where = "spec.validation" if shared else f"spec.versions[{i}].schema"
            raise invalid("CustomResourceDefinition", "apiextensions.k8s.io", name, f"{where}.{err.path}",
                          f"Invalid value: {err.text}: {err.message}") from None
