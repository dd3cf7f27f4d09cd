"""The pause annotations of an autoscaler (either kind) into the core's ``PauseSpec`` (rules: ``pyhpa.core.pause``).

``pyhpa.dev/paused``, ``pyhpa.dev/paused-scale-in`` and ``pyhpa.dev/paused-scale-out`` take ``"true"`` or
``"false"`` (any case; a YAML boolean in a file too); ``pyhpa.dev/paused-replicas`` a non-negative integer
(``"0"`` scales to zero and holds). A value that does not parse never raises and never pauses: it becomes one
of ``PauseSpec.problems`` (``pyhpa.dev/paused-replicas: must be a non-negative integer, got 'five'``), which the
core reports with the ``Paused`` condition and a Warning event.
"""

from __future__ import annotations

from typing import Any

from ..core import PauseSpec
from ..core.model import (
    PAUSED_ANNOTATION,
    PAUSED_REPLICAS_ANNOTATION,
    PAUSED_SCALE_IN_ANNOTATION,
    PAUSED_SCALE_OUT_ANNOTATION,
)

_FLAGS = {PAUSED_ANNOTATION: "paused", PAUSED_SCALE_IN_ANNOTATION: "scale_in",
          PAUSED_SCALE_OUT_ANNOTATION: "scale_out"}


def _flag(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    return None


def _replicas(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value >= 0 else None
    if isinstance(value, str) and value.strip().isdigit() and value.strip().isascii():
        return int(value.strip())
    return None


def pause_from_annotations(annotations: Any) -> PauseSpec | None:
    """The ``PauseSpec`` of ``metadata.annotations`` (a mapping; anything else: no annotations); None when no
    pause annotation is present."""
    if not isinstance(annotations, dict):
        return None
    found = False
    values: dict = {}
    problems = []
    for key, attr in _FLAGS.items():
        if key not in annotations:
            continue
        found = True
        flag = _flag(annotations[key])
        if flag is None:
            problems.append(f"{key}: must be \"true\" or \"false\", got {annotations[key]!r}")
        else:
            values[attr] = flag
    if PAUSED_REPLICAS_ANNOTATION in annotations:
        found = True
        raw = annotations[PAUSED_REPLICAS_ANNOTATION]
        n = _replicas(raw)
        if n is None:
            problems.append(f"{PAUSED_REPLICAS_ANNOTATION}: must be a non-negative integer, got {raw!r}")
        else:
            values["replicas"] = n
    if not found:
        return None
    return PauseSpec(problems=tuple(problems), **values)


def pause_annotations(meta: Any) -> tuple:
    """The pause annotations of ``metadata`` as a comparable tuple (a change of them is a change to sync at once)."""
    annotations = meta.get("annotations") if isinstance(meta, dict) else None
    if not isinstance(annotations, dict):
        return ()
    return tuple((k, annotations[k]) for k in sorted(annotations) if k.startswith("pyhpa.dev/paused"))
