"""A real Kubernetes cluster without containers (etcd, kube-apiserver, kube-controller-manager, kube-scheduler,
kubectl v1.37.2, KWOK v0.8.0 for the nodes, metrics-server v0.9.0, prometheus-adapter v0.12.0; and helm v4.3.1 for
the chart's tests) built from the Go modules: for pyhpa's end-to-end tier and for trying pyhpa locally. ``python -m controlplane --help``; README "Try it on a real control plane".

Test infrastructure, not product code (as ``kubedouble``): nothing in ``pyhpa`` imports it.

Importing the package needs the standard library only (``controlplane.build``: where the binaries are, building
them), so ``tools/upstream/hpa-decide`` runs from any ``python3``; ``ControlPlane`` and ``ControlPlaneError``
(``controlplane.cluster``: httpx, PyYAML, cryptography) are imported when first used.
"""

from typing import Any

from .build import (
    BINARIES,
    HELM_VERSION,
    KUBERNETES_VERSION,
    NOT_BUILT,
    BuildError,
    bin_dir,
    build,
    build_with_bar,
    cache_dir,
    helm,
    is_built,
    kubectl,
    not_built_reason,
)

__all__ = ["BINARIES", "HELM_VERSION", "KUBERNETES_VERSION", "NOT_BUILT", "BuildError", "ControlPlane", "ControlPlaneError", "bin_dir",
           "build", "build_with_bar", "cache_dir", "helm", "is_built", "kubectl", "not_built_reason"]
_FROM_CLUSTER = ("ControlPlane", "ControlPlaneError")


def __getattr__(name: str) -> Any:
    """``ControlPlane`` and ``ControlPlaneError``, from ``controlplane.cluster`` on first use (PEP 562)."""
    if name in _FROM_CLUSTER:
        from . import cluster

        return getattr(cluster, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
