"""python -m kubedouble --port 8001: serve a Kubernetes API server double standalone, for local runs.

Pre-registers the CRDs found in ``--crd`` files (default: the pyhpa CRD, ``pyhpa/data/deploy/crd.yaml``
of the installed package, identical to ``deploy/crd.yaml``); when none is found, a permissive stand-in for
the pyhpa ``HorizontalAutoscaler`` CRD is registered instead. Works from any directory once pyhpa is
installed with its extra (``pip install 'pyhpa[kubedouble]'``).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

import yaml

FALLBACK_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "horizontalautoscalers.pyhpa.dev"},
    "spec": {
        "group": "pyhpa.dev",
        "scope": "Namespaced",
        "names": {"plural": "horizontalautoscalers", "singular": "horizontalautoscaler",
                  "kind": "HorizontalAutoscaler", "listKind": "HorizontalAutoscalerList"},
        "versions": [{
            "name": "v1alpha1", "served": True, "storage": True,
            "subresources": {"status": {}},
            "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}},
        }],
    },
}


def _yaml_docs(path: Path) -> list[dict]:
    with path.open() as f:
        return [d for d in yaml.safe_load_all(f) if isinstance(d, dict)]


def _default_crd_path() -> Path:
    """The pyhpa CRD shipped in the pyhpa package (the repository's ``deploy/crd.yaml``, same bytes)."""
    try:
        from importlib import resources

        return Path(str(resources.files("pyhpa").joinpath("data", "deploy", "crd.yaml")))
    except ModuleNotFoundError:
        return Path(__file__).resolve().parent.parent / "deploy" / "crd.yaml"


def prepare(kd, crd_files: list[Path], load_files: list[Path]) -> None:
    """Register CRDs (or the fallback pyhpa CRD) and load seed objects."""
    for path in [*crd_files, *load_files]:
        if not path.is_file():
            raise SystemExit(f"error: {path}: no such file")
    crds = [d for p in crd_files for d in _yaml_docs(p) if d.get("kind") == "CustomResourceDefinition"]
    if not crds:
        print("kubedouble: no CRD file found; registering a permissive pyhpa.dev stand-in", file=sys.stderr)
        crds = [FALLBACK_CRD]
    for crd in crds:
        kd.register_crd(crd)
        print(f"kubedouble: registered CRD {crd['metadata']['name']}", file=sys.stderr)
    for path in load_files:
        for obj in _yaml_docs(path):
            kd.put_object(obj)


async def serve(args: argparse.Namespace) -> None:
    """Run until interrupted."""
    from .server import KubeDouble

    kd = KubeDouble(args.host, args.port, k8s_version=args.k8s_version)
    prepare(kd, args.crd or [_default_crd_path()], args.load or [])
    try:
        async with kd:
            print(f"kubedouble serving at {kd.url}", flush=True)
            await asyncio.Event().wait()
    except OSError as err:
        raise SystemExit(f"error: --port: cannot listen on {args.host}:{args.port}: {err.strerror or err}") from None


def parser() -> argparse.ArgumentParser:
    """The command line of ``python -m kubedouble``."""
    p = argparse.ArgumentParser(
        prog="python -m kubedouble",
        description="Serve an in-process Kubernetes API server double (test infrastructure) over HTTP, for running "
                    "pyhpa run locally without a cluster.")
    p.add_argument("--host", default="127.0.0.1", metavar="ADDRESS", help="address to listen on (default: 127.0.0.1)")
    p.add_argument("--port", type=int, default=8001, metavar="PORT", help="port to listen on, 0 for any free port (default: 8001)")
    p.add_argument("--crd", type=Path, action="append", metavar="FILE",
                   help="CRD YAML file to register; repeatable (default: the pyhpa CRD)")
    p.add_argument("--load", type=Path, action="append", metavar="FILE",
                   help="YAML file of objects to load at start; repeatable")
    p.add_argument("--k8s-version", default="1.37", metavar="VERSION",
                   help="Kubernetes version whose schemas validate built-in objects (default: 1.37)")
    return p


def main(argv: list[str] | None = None) -> None:
    """Command-line entry point."""
    args = parser().parse_args(argv)
    try:
        from . import server  # noqa: F401  (jsonschema, kubernetes-validate, referencing: the kubedouble extra)
    except ModuleNotFoundError as err:
        print(f"error: python -m kubedouble needs the kubedouble extra ({err.name} is not installed): "
              "pip install 'pyhpa[kubedouble]'", file=sys.stderr)
        raise SystemExit(2) from None
    try:
        asyncio.run(serve(args))
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
