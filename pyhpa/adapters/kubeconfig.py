"""The cluster a command talks to: a kubeconfig, in-cluster credentials, or a bare URL (``load_config``).

Shared by ``pyhpa run``, ``snapshot``, ``tune --live``, the kubectl plugin and the benchmarks, so none of them
imports the controller to find its cluster. The file is read as every input file is (``adapters.snapshot``
``read_document``: bounded, one line per YAML error) and handed to lightkube's ``KubeConfig``.
"""

from __future__ import annotations

import os
from pathlib import Path

from lightkube import KubeConfig
from lightkube.config.kubeconfig import DEFAULT_KUBECONFIG, SingleConfig
from lightkube.config.models import Cluster as ClusterConfig
from lightkube.config.models import User
from lightkube.core.exceptions import ConfigError

from .errors import InputError
from .parse import server_url
from .snapshot import read_document

__all__ = ["load_config"]


def load_config(kubeconfig: str | None = None, server: str | None = None, context: str | None = None) -> SingleConfig:
    """The cluster to talk to: ``server`` (a URL, no credentials: e.g. the kubedouble), else the
    ``kubeconfig`` file, else in-cluster service account / $KUBECONFIG / ~/.kube/config. InputError when
    none works."""
    if server:
        server_url(server, "--server")
        if "@" in server.split("://", 1)[-1].split("/", 1)[0]:  # user:password@host: sent by no client (aiohttp refuses)
            raise InputError("takes the API server's URL without credentials (user:password@ is not sent): give them "
                             "in a kubeconfig (--kubeconfig)", field="--server")
        return KubeConfig.from_one(cluster=ClusterConfig(server=server), user=User(), namespace="default").get()
    file = kubeconfig
    try:
        if file is None:
            try:
                return KubeConfig.from_service_account().get(context_name=context)
            except ConfigError:
                file = os.environ.get("KUBECONFIG") or DEFAULT_KUBECONFIG
        path = Path(file).expanduser()
        if not path.exists():
            raise ConfigError(f"Configuration file {file} not found")
        config = _kubeconfig(path)
    except InputError as err:
        raise InputError(err.message, err.file or str(file), err.obj, err.field or "--kubeconfig", err.line) from None
    except (ConfigError, OSError, ValueError) as err:
        raise InputError(f"cannot load the Kubernetes configuration: {err}", file=str(file or ""),
                         field="--kubeconfig") from None
    except (KeyError, TypeError, AttributeError) as err:  # a mapping, but not shaped as kubectl writes one
        raise InputError(f"malformed kubeconfig ({type(err).__name__}: {err}); kubectl config view shows one",
                         file=str(file), field="--kubeconfig") from None
    try:
        return config.get(context_name=context)
    except (ConfigError, KeyError) as err:  # no such context, or one naming a cluster or user it does not have
        what = f"no cluster or user {err}" if isinstance(err, KeyError) else str(err)
        raise InputError(f"cannot load the Kubernetes configuration: {what}", file=str(file),
                         field="--context" if context else "--kubeconfig") from None


def _kubeconfig(path: Path) -> KubeConfig:
    """The kubeconfig in ``path``, read as every input file is (bounded; a YAML error is one line with its line);
    InputError when it is no mapping with clusters and contexts."""
    doc = read_document(path)
    if not isinstance(doc, dict) or not isinstance(doc.get("clusters"), list) or not isinstance(doc.get("contexts"), list):
        raise InputError("not a kubeconfig: want a YAML mapping with lists clusters and contexts (kubectl config view)",
                         field="--kubeconfig")
    return KubeConfig.from_dict(doc, fname=path)
