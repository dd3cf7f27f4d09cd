"""Generate ``crd.yaml``: the HorizontalAutoscaler CRD (group pyhpa.dev, version v1alpha1), from the API's types
(``pyhpa.api.crd``, ``pyhpa.api.v1alpha1``).

Run from the repository root: ``python deploy/generate_crd.py`` (writes ``deploy/crd.yaml``, the kustomize base's
copy, the Helm chart's ``deploy/helm/pyhpa/crds/horizontalautoscalers.yaml`` and the package copy
``pyhpa/data/deploy/crd.yaml``; tests/test_api.py fails when they differ from it).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script from a checkout: the package next to it
    sys.path.insert(0, str(ROOT))

from pyhpa.api.crd import crd, crd_text  # noqa: E402,F401 (crd: the manifest, for whoever imports this script)

PATHS = (ROOT / "deploy" / "crd.yaml", ROOT / "deploy" / "base" / "crd.yaml",
         ROOT / "deploy" / "helm" / "pyhpa" / "crds" / "horizontalautoscalers.yaml",
         ROOT / "pyhpa" / "data" / "deploy" / "crd.yaml")

if __name__ == "__main__":
    for path in PATHS:
        path.write_text(crd_text())
        print(f"wrote {path.relative_to(ROOT)}")
