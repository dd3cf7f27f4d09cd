"""The registry of metric types: one module per ``spec.metrics[].type``, each a ``MetricType`` (``base``) saying how
the type is read from the spec, what is asked of which metrics API (the resource, custom or external metrics API of
Kubernetes, or pyhpa's own Prometheus queries), how the answer becomes the core's samples, how a snapshot records it
and reads it back, and how ``kubectl get``, plots and predictions show it (docs/metric-types.md).

The adapters, the controller, snapshots, ``explain``, the printers and the simulator look a type up here
(``REGISTRY.get(type)``, or ``metric_type(type)``) instead of comparing type strings. How upstream computes a replica
count per type stays in the decision core (``pyhpa.core.metrics``), which knows the five autoscaling/v2 types itself.

A new metric type is its module here (a ``TYPE``), its line in ``REGISTRY`` below, and its API fields
(``pyhpa.api.v1alpha1``) when it is a pyhpa extension.
"""

from __future__ import annotations

from . import external, object, pods, prometheus, resource
from .base import MetricQuery, MetricType, Shown

__all__ = ["REGISTRY", "RESOURCE_TYPES", "MetricQuery", "MetricType", "Shown", "UnknownMetricType", "metric_type"]

#: every metric type by its ``spec.metrics[].type``
REGISTRY: dict[str, MetricType] = {t.name: t for t in (
    *resource.TYPES,
    pods.TYPE,
    object.TYPE,
    external.TYPE,
    prometheus.TYPE,
)}

#: the types whose values are a resource of the pods (``MetricType.resource``: Resource, ContainerResource)
RESOURCE_TYPES = frozenset(name for name, t in REGISTRY.items() if t.resource)


class UnknownMetricType(KeyError):
    """A metric type the registry does not hold (``str()`` names it and the known ones)."""

    def __str__(self) -> str:
        return f"unknown metric type {self.args[0]!r} (known: {', '.join(REGISTRY)})"


def metric_type(name: str) -> MetricType:
    """The registry's type ``name``; raises ``UnknownMetricType`` (a KeyError) for a type it does not hold."""
    try:
        return REGISTRY[name]
    except (KeyError, TypeError):
        raise UnknownMetricType(name) from None
