"""A real Kubernetes control plane (etcd, kube-apiserver, kube-controller-manager, kubectl v1.37.2) built from the
Go modules, with a kubelet fixture and a metrics fixture: for pyhpa's end-to-end tier and for trying pyhpa
locally without a cluster. ``python -m controlplane --help``; README "Try it on a real control plane".

Test infrastructure, not product code (as ``kubedouble``): nothing in ``pyhpa`` imports it.
"""

from .build import (BINARIES, KUBERNETES_VERSION, NOT_BUILT, BuildError, bin_dir, build, build_with_bar, cache_dir, is_built, kubectl,
                    not_built_reason)
from .cluster import ControlPlane, ControlPlaneError

__all__ = ["BINARIES", "KUBERNETES_VERSION", "NOT_BUILT", "BuildError", "ControlPlane", "ControlPlaneError", "bin_dir", "build",
           "build_with_bar", "cache_dir", "is_built", "kubectl", "not_built_reason"]
