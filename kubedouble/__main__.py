"""``python -m kubedouble --port 8001``: serve a double standalone for local runs.

Pre-registers the CRDs found in ``--crd`` files (default ``deploy/crd.yaml``, the pyhpa CRD); when none is
found, a permissive stand-in for the pyhpa ``HorizontalAutoscaler`` CRD is registered instead.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

import yaml

from .server import KubeDouble

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
    here = Path("deploy/crd.yaml")
    return here if here.exists() else Path(__file__).resolve().parent.parent / "deploy" / "crd.yaml"


def prepare(kd: KubeDouble, crd_files: list[Path], load_files: list[Path]) -> None:
    """Register CRDs (or the fallback pyhpa CRD) and load seed objects."""
    crds = [d for p in crd_files if p.exists() for d in _yaml_docs(p) if d.get("kind") == "CustomResourceDefinition"]
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
    kd = KubeDouble(args.host, args.port, k8s_version=args.k8s_version)
    prepare(kd, args.crd or [_default_crd_path()], args.load or [])
    async with kd:
        print(f"kubedouble serving at {kd.url}", flush=True)
        await asyncio.Event().wait()


def main(argv: list[str] | None = None) -> None:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(prog="python -m kubedouble", description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8001)
    parser.add_argument("--crd", type=Path, action="append", help="CRD YAML file(s) to register")
    parser.add_argument("--load", type=Path, action="append", help="YAML file(s) of objects to pre-load")
    parser.add_argument("--k8s-version", default="1.37")
    try:
        asyncio.run(serve(parser.parse_args(argv)))
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
