"""API semantics on plain dicts: create/get/list/update/patch/delete plus ``/status`` and ``/scale``."""

from __future__ import annotations

import base64
import binascii
import copy
import json
import random
import uuid
from datetime import datetime, timezone
from typing import Any, Optional

import yaml

from . import errors
from .errors import KubeError, bad_request
from .patches import PatchError, json_patch, merge_patch
from .registry import Registry, ResourceType, resource_from_crd
from .selectors import (
    fields_match,
    get_field,
    labels_match,
    parse_field_selector,
    parse_label_selector,
    selector_string,
)
from .store import Store
from .validation import Validator, apply_defaults

CRD_KEY = ("apiextensions.k8s.io", "customresourcedefinitions")
SYSTEM_META = ("uid", "creationTimestamp", "generation", "deletionTimestamp", "deletionGracePeriodSeconds")
JSON_PATCH = "application/json-patch+json"
MERGE_PATCHES = ("application/merge-patch+json", "application/strategic-merge-patch+json")
APPLY_PATCH = "application/apply-patch+yaml"


def now_rfc3339() -> str:
    """Current UTC time as the API server writes timestamps."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def spec_part(rt: ResourceType, obj: dict) -> dict:
    """Everything whose change bumps ``metadata.generation`` (all but metadata, and status if a subresource)."""
    skip = {"metadata", "apiVersion", "kind"} | ({"status"} if rt.status else set())
    return {k: v for k, v in obj.items() if k not in skip}


def set_path(obj: dict, dotted: str, value: Any) -> None:
    """Write ``value`` at ``.a.b.c``, creating intermediate dicts."""
    parts = dotted.strip(".").split(".")
    for part in parts[:-1]:
        obj = obj.setdefault(part, {})
    obj[parts[-1]] = value


def _generated_name(prefix: str) -> str:
    return prefix + "".join(random.choice("bcdfghjklmnpqrstvwxz2456789") for _ in range(5))


def int_param(query: dict, key: str) -> int:
    """An integer query parameter (0 when absent); 400 when malformed."""
    try:
        return int(query.get(key) or 0)
    except ValueError as e:
        raise bad_request(f"invalid {key}: {query[key]!r}", record=False) from e


def parse_body(raw: bytes, content_type: str = "application/json") -> Any:
    """Decode a request body as JSON (or YAML for apply patches); 400 when malformed."""
    try:
        if content_type == APPLY_PATCH:
            try:
                return json.loads(raw)
            except ValueError:
                return yaml.safe_load(raw)
        return json.loads(raw)
    except (ValueError, yaml.YAMLError) as e:
        raise bad_request(f"error decoding request body: {e}") from e


class Api:
    """Kubernetes object semantics over a ``Store``; every stored body passes the ``Validator`` first."""

    def __init__(self, store: Store, registry: Registry, validator: Optional[Validator],
                 strict_namespaces: bool = False):
        self.store = store
        self.registry = registry
        self.validator = validator
        self.strict_namespaces = strict_namespaces

    # ----- rendering and checks -------------------------------------------------------------------------
    @staticmethod
    def render(rt: ResourceType, version: str, obj: dict, in_list: bool = False) -> dict:
        """The object as served at ``version``; list items of built-ins carry no apiVersion/kind (like k8s)."""
        obj["apiVersion"], obj["kind"] = rt.api_version(version), rt.kind
        if in_list and rt.schemas is None:
            obj.pop("apiVersion")
            obj.pop("kind")
        return obj

    def _check_body(self, rt: ResourceType, version: str, body: Any, kind: Optional[str] = None,
                    api_version: Optional[str] = None) -> dict:
        if not isinstance(body, dict):
            raise bad_request("the request body must be a JSON object")
        kind, api_version = kind or rt.kind, api_version or rt.api_version(version)
        body.setdefault("kind", kind)
        body.setdefault("apiVersion", api_version)
        if body["kind"] != kind or body["apiVersion"] != api_version:
            raise bad_request(f"the API version in the data ({body['apiVersion']}) or kind ({body['kind']}) "
                              f"does not match the expected API version ({api_version}) and kind ({kind})")
        if not isinstance(body.setdefault("metadata", {}), dict):
            raise bad_request("metadata must be an object")
        return body

    @staticmethod
    def _check_name(body: dict, name: str, ns: Optional[str]) -> None:
        meta = body["metadata"]
        if meta.get("name") and meta["name"] != name:
            raise bad_request(f"the name of the object ({meta['name']}) does not match the name on the URL ({name})")
        if ns and meta.get("namespace") and meta["namespace"] != ns:
            raise bad_request("the namespace of the provided object does not match the namespace sent on the request")

    def _prepare(self, rt: ResourceType, version: str, obj: dict, old: Optional[dict] = None) -> None:
        """Defaulting + validation of a candidate object (``old``: the stored object it replaces)."""
        if rt.defaults:
            rt.defaults(obj)
        if rt.schemas is not None:
            apply_defaults((rt.schemas or {}).get(version), obj)
        if self.validator:
            self.validator.validate(rt, version, obj, old)
        if rt.key == CRD_KEY:
            resource_from_crd(obj)
        obj["apiVersion"] = rt.api_version()  # stored at the preferred version ("None" conversion)

    def _write(self, rt: ResourceType, obj: dict, dry_run: bool) -> dict:
        if dry_run:
            return copy.deepcopy(obj)
        stored = self.store.put(rt.key, obj)
        if rt.key == CRD_KEY:
            self.registry.add(resource_from_crd(stored))
        return stored

    def _current(self, rt: ResourceType, ns: Optional[str], name: str) -> dict:
        obj = self.store.get(rt.key, ns, name)
        if obj is None:
            raise errors.not_found(rt.plural, rt.group, name)
        return obj

    # ----- reads ------------------------------------------------------------------------------------------
    def get(self, rt: ResourceType, version: str, ns: Optional[str], name: str) -> dict:
        """GET one object (also what ``/status`` GET returns)."""
        return self.render(rt, version, self._current(rt, ns, name))

    def list(self, rt: ResourceType, version: str, ns: Optional[str], query: dict) -> dict:
        """LIST with label/field selectors and limit/continue paging."""
        labels = parse_label_selector(query.get("labelSelector"))
        fields = parse_field_selector(query.get("fieldSelector"), rt.field_selectors)
        after = None
        if query.get("continue"):
            try:
                token = json.loads(base64.urlsafe_b64decode(query["continue"].encode()))
                after = tuple(token["start"])
            except (ValueError, KeyError, TypeError, binascii.Error) as e:
                raise bad_request("continue key is not valid", record=False) from e
        limit = max(0, int_param(query, "limit"))

        def match(o: dict) -> bool:
            return (not labels or labels_match(labels, o["metadata"].get("labels"))) and \
                (not fields or fields_match(fields, o))

        with self.store.lock:
            rv = self.store.rv
            items, remaining = self.store.page(rt.key, ns, match if labels or fields else None, after, limit)
        meta: dict[str, Any] = {"resourceVersion": str(rv)}
        if remaining:
            last = items[-1]["metadata"]
            token = {"rv": meta["resourceVersion"], "start": [last.get("namespace", ""), last["name"]]}
            meta["continue"] = base64.urlsafe_b64encode(json.dumps(token).encode()).decode()
            meta["remainingItemCount"] = remaining
        return {"kind": f"{rt.kind}List", "apiVersion": rt.api_version(version), "metadata": meta,
                "items": [self.render(rt, version, o, in_list=True) for o in items]}

    # ----- create -----------------------------------------------------------------------------------------
    def create(self, rt: ResourceType, version: str, ns: Optional[str], body: Any, dry_run: bool = False) -> dict:
        """POST: 409 AlreadyExists, server-set uid/creationTimestamp/generation/resourceVersion."""
        obj = self._check_body(rt, version, body)
        meta = obj["metadata"]
        self._check_name(obj, meta.get("name") or "", ns)
        if meta.get("resourceVersion"):
            raise bad_request("resourceVersion should not be set on objects to be created")
        if not meta.get("name"):
            if not meta.get("generateName"):
                raise errors.invalid(rt.kind, rt.group, "", "metadata.name",
                                     "Required value: name or generateName is required")
            meta["name"] = _generated_name(meta["generateName"])
        self._stamp_new(rt, obj, ns)
        with self.store.lock:
            if self.store.get(rt.key, ns, meta["name"]) is not None:
                raise errors.already_exists(rt.plural, rt.group, meta["name"])
            self._prepare(rt, version, obj)
            return self.render(rt, version, self._write(rt, obj, dry_run))

    def _stamp_new(self, rt: ResourceType, obj: dict, ns: Optional[str]) -> None:
        meta = obj["metadata"]
        if rt.namespaced:
            if self.strict_namespaces and self.store.get(("", "namespaces"), None, ns or "") is None:
                raise errors.not_found("namespaces", "", ns or "")
            meta["namespace"] = ns
        else:
            meta.pop("namespace", None)
        for key in SYSTEM_META:
            meta.pop(key, None)
        meta.update(uid=str(uuid.uuid4()), creationTimestamp=now_rfc3339(), generation=1)
        if rt.key == CRD_KEY:
            obj["status"] = self._crd_status(obj)
        elif rt.status and rt.initial_status is None:
            obj.pop("status", None)
        elif rt.status:
            obj["status"] = rt.initial_status()

    @staticmethod
    def _crd_status(crd: dict) -> dict:
        spec = crd.get("spec") or {}
        versions = [v.get("name") for v in spec.get("versions") or [] if v.get("storage")]
        conds = [{"type": t, "status": "True", "reason": r, "message": m, "lastTransitionTime": now_rfc3339()}
                 for t, r, m in (("NamesAccepted", "NoConflicts", "no conflicts found"),
                                 ("Established", "InitialNamesAccepted", "the initial names have been accepted"))]
        return {"acceptedNames": spec.get("names") or {}, "conditions": conds, "storedVersions": versions}

    # ----- update -----------------------------------------------------------------------------------------
    def update(self, rt: ResourceType, version: str, ns: Optional[str], name: str, body: Any,
               sub: Optional[str] = None, dry_run: bool = False) -> dict:
        """PUT on the object or its ``/status``; 409 Conflict when ``metadata.resourceVersion`` is stale."""
        if sub == "scale":
            return self.update_scale(rt, ns, name, body, dry_run)
        body = self._check_body(rt, version, body)
        self._check_name(body, name, ns)
        with self.store.lock:
            cur = self._current(rt, ns, name)
            self._check_rv(rt, body, cur)
            if sub == "status":
                new = copy.deepcopy(cur)
                new.pop("status", None)
                if body.get("status") is not None:
                    new["status"] = body["status"]
            else:
                new = body
                if rt.status:
                    new.pop("status", None)
                    if "status" in cur:
                        new["status"] = cur["status"]
            return self.render(rt, version, self._replace(rt, version, cur, new, dry_run))

    @staticmethod
    def _check_rv(rt: ResourceType, body: dict, cur: dict) -> None:
        rv = body.get("metadata", {}).get("resourceVersion")
        if rv and rv != cur["metadata"]["resourceVersion"]:
            raise errors.conflict(rt.plural, rt.group, cur["metadata"]["name"])

    def _replace(self, rt: ResourceType, version: str, cur: dict, new: dict, dry_run: bool) -> dict:
        """Store ``new`` in place of ``cur``: keep system metadata, bump generation on spec change, skip no-ops."""
        meta, old_meta = new.setdefault("metadata", {}), cur["metadata"]
        for key in SYSTEM_META + ("name", "namespace"):
            if key in old_meta:
                meta[key] = old_meta[key]
            else:
                meta.pop(key, None)
        meta["resourceVersion"] = old_meta["resourceVersion"]
        self._prepare(rt, version, new, cur)
        if spec_part(rt, new) != spec_part(rt, cur):
            meta["generation"] = int(old_meta.get("generation") or 0) + 1
        if new == cur:
            return cur
        return self._write(rt, new, dry_run)

    # ----- patch ------------------------------------------------------------------------------------------
    def patch(self, rt: ResourceType, version: str, ns: Optional[str], name: str, content_type: str,
              raw: bytes, query: dict, sub: Optional[str] = None) -> tuple[dict, bool]:
        """PATCH (json, merge, strategic-as-merge on built-in kinds, apply-as-merge); returns (object, created).

        A custom resource takes no strategic merge patch (kube-apiserver answers 415, as here)."""
        ctype = (content_type or "").split(";")[0].strip()
        accepted = (JSON_PATCH, MERGE_PATCHES[0], APPLY_PATCH) if rt.crd_name else MERGE_PATCHES + (JSON_PATCH, APPLY_PATCH)
        if ctype not in accepted:
            raise KubeError(415, f"the body of the request was in an unknown format - accepted media types "
                                 f"include: {', '.join(accepted)}")
        body = parse_body(raw, ctype)
        if ctype == APPLY_PATCH and not query.get("fieldManager"):
            raise errors.invalid("PatchOptions", "meta.k8s.io", "", "fieldManager",
                                 "Required value: is required for apply patch")
        dry_run = bool(query.get("dryRun"))
        with self.store.lock:
            cur = self.store.get(rt.key, ns, name)
            if cur is None and ctype == APPLY_PATCH and sub is None:
                self._check_name(self._check_body(rt, version, body), name, ns)
                body["metadata"]["name"] = name
                return self.create(rt, version, ns, body, dry_run), True
            if cur is None:
                raise errors.not_found(rt.plural, rt.group, name)
            base = self.scale_of(rt, cur) if sub == "scale" else self.render(rt, version, cur)
            result = self._apply_patch(ctype, base, body)
            return self.update(rt, version, ns, name, result, sub, dry_run), False

    @staticmethod
    def _apply_patch(ctype: str, base: dict, body: Any) -> Any:
        if ctype != JSON_PATCH:
            if not isinstance(body, dict):
                raise bad_request("a merge patch must be a JSON object")
            return merge_patch(base, body)
        try:
            return json_patch(base, body)
        except PatchError as e:
            raise KubeError(422, f"the server rejected our request due to an error in our request: {e}",
                            "Invalid", record=not e.test_failed) from e

    # ----- delete -----------------------------------------------------------------------------------------
    def delete(self, rt: ResourceType, ns: Optional[str], name: str, options: Optional[dict],
               dry_run: bool = False) -> dict:
        """DELETE one object (immediately; no finalizers); honours ``preconditions`` in DeleteOptions."""
        with self.store.lock:
            cur = self._current(rt, ns, name)
            pre = (options or {}).get("preconditions") or {}
            if pre.get("resourceVersion") and pre["resourceVersion"] != cur["metadata"]["resourceVersion"]:
                raise errors.conflict(rt.plural, rt.group, name)
            if pre.get("uid") and pre["uid"] != cur["metadata"].get("uid"):
                raise errors.conflict(rt.plural, rt.group, name)
            if not dry_run:
                self.delete_stored(rt, ns, name)
        return errors.success_body({"name": name, "group": rt.group, "kind": rt.plural,
                                    "uid": cur["metadata"].get("uid")})

    def delete_stored(self, rt: ResourceType, ns: Optional[str], name: str) -> Optional[dict]:
        """Remove from the store (emits DELETED); deleting a CRD unregisters it and deletes its objects."""
        obj = self.store.delete(rt.key, ns, name)
        if obj is not None and rt.key == CRD_KEY:
            gone = self.registry.remove_crd(name)
            for o in self.store.list(gone.key) if gone else []:
                self.store.delete(gone.key, o["metadata"].get("namespace"), o["metadata"]["name"])
        return obj

    def delete_collection(self, rt: ResourceType, version: str, ns: Optional[str], query: dict) -> dict:
        """DELETE on a collection: removes every object matching the selectors; returns them as a list."""
        listed = self.list(rt, version, ns, {k: v for k, v in query.items() if k not in ("limit", "continue")})
        for item in listed["items"]:
            self.delete_stored(rt, item["metadata"].get("namespace"), item["metadata"]["name"])
        return listed

    # ----- scale ------------------------------------------------------------------------------------------
    @staticmethod
    def scale_selector(rt: ResourceType, obj: dict) -> str:
        """``status.selector`` of the Scale: the CRD's labelSelectorPath value, else ``spec.selector`` rendered."""
        if rt.scale and rt.scale.label_selector:
            return get_field(obj, rt.scale.label_selector) or ""
        return selector_string(get_field(obj, "spec.selector"))

    def scale_of(self, rt: ResourceType, obj: dict) -> dict:
        """The ``autoscaling/v1 Scale`` view of ``obj``."""
        meta = obj["metadata"]
        status: dict[str, Any] = {"replicas": get_field(obj, rt.scale.status_replicas) or 0}
        if selector := self.scale_selector(rt, obj):
            status["selector"] = selector
        keep = ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
        return {"kind": "Scale", "apiVersion": "autoscaling/v1", "metadata": {k: meta[k] for k in keep if k in meta},
                "spec": {"replicas": get_field(obj, rt.scale.spec_replicas) or 0}, "status": status}

    def get_scale(self, rt: ResourceType, ns: Optional[str], name: str) -> dict:
        """GET ``/scale``."""
        return self.scale_of(rt, self._current(rt, ns, name))

    def update_scale(self, rt: ResourceType, ns: Optional[str], name: str, body: Any, dry_run: bool) -> dict:
        """PUT ``/scale``: validates the Scale body, 409 on stale resourceVersion, writes spec replicas."""
        body = self._check_body(rt, "v1", body, "Scale", "autoscaling/v1")
        self._check_name(body, name, ns)
        if self.validator:
            self.validator.validate_builtin(body)
        with self.store.lock:
            cur = self._current(rt, ns, name)
            self._check_rv(rt, body, cur)
            new = copy.deepcopy(cur)
            set_path(new, rt.scale.spec_replicas, (body.get("spec") or {}).get("replicas", 0))
            return self.scale_of(rt, self._replace(rt, rt.versions[0], cur, new, dry_run))
