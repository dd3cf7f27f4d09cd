"""The HorizontalAutoscaler (``pyhpa.dev/v1alpha1``): its group, version and names."""

from __future__ import annotations

GROUP = "pyhpa.dev"
VERSION = "v1alpha1"
KIND = "HorizontalAutoscaler"
LIST_KIND = "HorizontalAutoscalerList"
PLURAL = "horizontalautoscalers"
SINGULAR = "horizontalautoscaler"
SHORT_NAMES = ("hza",)
API_VERSION = f"{GROUP}/{VERSION}"
