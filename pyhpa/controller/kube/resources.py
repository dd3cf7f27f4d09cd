"""The Kubernetes resources the controller lists, watches and writes, as lightkube decodes them: the
HorizontalAutoscaler (``pyhpa.dev/v1alpha1``: ``pyhpa.api.v1alpha1``), its ``scaleTargetRef``, and ``PodView``, the
fields of a v1 Pod a sync reads."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import msgspec
from lightkube.core import resource as res
from lightkube.generic_resource import create_namespaced_resource
from lightkube.resources.core_v1 import Pod as PodResource

from ...api.v1alpha1 import API_VERSION, GROUP, KIND, PLURAL, VERSION

__all__ = ["API_VERSION", "GROUP", "HorizontalAutoscaler", "KIND", "PLURAL", "PodView", "TargetRef", "VERSION"]

#: The lightkube resource class (a generic namespaced resource with ``.Status``).
HorizontalAutoscaler = create_namespaced_resource(GROUP, VERSION, KIND, PLURAL)


@dataclass(frozen=True, slots=True)
class TargetRef:
    """``spec.scaleTargetRef``: ``api_version`` like "apps/v1" (core: "v1"), ``kind``, ``name``."""

    api_version: str
    kind: str
    name: str

    @property
    def group(self) -> str:
        return self.api_version.rpartition("/")[0]

    @property
    def version(self) -> str:
        return self.api_version.rpartition("/")[2]



# ----- what is decoded of a pod ------------------------------------------------------------------------------
class _Resources(msgspec.Struct, omit_defaults=True):
    requests: Optional[dict[str, Any]] = None
    limits: Optional[dict[str, Any]] = None


class _Container(msgspec.Struct, omit_defaults=True):
    name: str = ""
    resources: Optional[_Resources] = None
    restartPolicy: Optional[str] = None


class _PodSpec(msgspec.Struct, omit_defaults=True):
    containers: Optional[list[_Container]] = None
    initContainers: Optional[list[_Container]] = None
    overhead: Optional[dict[str, Any]] = None
    resources: Optional[_Resources] = None


class _Condition(msgspec.Struct, omit_defaults=True):
    type: str = ""
    status: str = ""
    lastTransitionTime: Optional[str] = None


class _PodStatus(msgspec.Struct, omit_defaults=True):
    phase: Optional[str] = None
    startTime: Optional[str] = None
    conditions: Optional[list[_Condition]] = None


class _Meta(msgspec.Struct, omit_defaults=True):
    name: str = ""
    namespace: Optional[str] = None
    labels: Optional[dict[str, str]] = None
    resourceVersion: Optional[str] = None
    deletionTimestamp: Optional[str] = None


class PodView(res.NamespacedResourceG, msgspec.Struct, omit_defaults=True):
    """A v1 Pod as lightkube decodes it for the pod informer: only the fields an HPA sync reads (list and watch
    of ``/api/v1/pods``; every other field of the JSON is skipped while decoding)."""

    _api_info = PodResource._api_info

    apiVersion: Optional[str] = None
    kind: Optional[str] = None
    metadata: Optional[_Meta] = None
    spec: Optional[_PodSpec] = None
    status: Optional[_PodStatus] = None


