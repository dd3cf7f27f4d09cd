"""The HorizontalAutoscaler API (``pyhpa.dev/v1alpha1``), defined once: ``pyhpa.api.v1alpha1``."""
