"""Discovery documents: /version, /api, /api/v1, /apis, /apis/{group}, /apis/{group}/{version}."""

from __future__ import annotations

from typing import Optional

from .metrics import METRICS_VERSIONS, MetricsStore
from .registry import ALL_VERBS, SUB_VERBS, Registry, ResourceType

SERVER_VERSION = {"major": "1", "minor": "37", "gitVersion": "v1.37.0-kubedouble", "gitCommit": "kubedouble",
                  "gitTreeState": "clean", "buildDate": "2026-01-01T00:00:00Z", "goVersion": "go1.25",
                  "compiler": "gc", "platform": "linux/amd64"}


def version_doc(minor: str) -> dict:
    """``/version`` for Kubernetes ``1.<minor>``."""
    return {**SERVER_VERSION, "minor": minor, "gitVersion": f"v1.{minor}.0-kubedouble"}


def api_versions() -> dict:
    """``/api``."""
    return {"kind": "APIVersions", "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}]}


def _group_doc(name: str, versions: list[str]) -> dict:
    gvs = [{"groupVersion": f"{name}/{v}", "version": v} for v in versions]
    return {"name": name, "versions": gvs, "preferredVersion": gvs[0]}


def _all_groups(registry: Registry) -> dict[str, list[str]]:
    groups = {g: vs for g, vs in registry.group_versions().items() if g}
    groups.update({g: [v] for g, v in METRICS_VERSIONS.items()})
    return groups


def api_group_list(registry: Registry) -> dict:
    """``/apis``."""
    return {"kind": "APIGroupList", "apiVersion": "v1",
            "groups": [_group_doc(g, vs) for g, vs in _all_groups(registry).items()]}


def api_group(registry: Registry, group: str) -> Optional[dict]:
    """``/apis/{group}`` or None when the group is not served."""
    versions = _all_groups(registry).get(group)
    return {"kind": "APIGroup", "apiVersion": "v1", **_group_doc(group, versions)} if versions else None


def _entries(rt: ResourceType) -> list[dict]:
    main = {"name": rt.plural, "singularName": rt.singular, "namespaced": rt.namespaced, "kind": rt.kind,
            "verbs": ALL_VERBS}
    if rt.short_names:
        main["shortNames"] = rt.short_names
    out = [main]
    if rt.status:
        out.append({"name": f"{rt.plural}/status", "singularName": "", "namespaced": rt.namespaced,
                    "kind": rt.kind, "verbs": SUB_VERBS})
    if rt.scale:
        out.append({"name": f"{rt.plural}/scale", "singularName": "", "namespaced": rt.namespaced,
                    "group": "autoscaling", "version": "v1", "kind": "Scale", "verbs": SUB_VERBS})
    return out


def resource_list(registry: Registry, metrics: MetricsStore, group: str, version: str) -> Optional[dict]:
    """``/api/v1`` or ``/apis/{group}/{version}`` (APIResourceList), None when not served."""
    gv = f"{group}/{version}" if group else version
    if METRICS_VERSIONS.get(group) == version:
        resources = metrics.discovery(group)
    else:
        types = [rt for rt in registry.all() if rt.group == group and version in rt.versions]
        if not types:
            return None
        resources = [e for rt in sorted(types, key=lambda t: t.plural) for e in _entries(rt)]
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources}
