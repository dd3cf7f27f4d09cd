"""The node autoscalers of a fleet, each a model that reads a view of the node pools and returns actions
(``base``: ``PoolView``, ``NodeView``, ``Launch``, ``Delete``, ``Replace``); the engine carries them out.

``MODELS`` is the registry: a fleet file's ``spec.nodeAutoscaler.model`` -> the model's class and the field of
``spec.nodeAutoscaler`` that holds its settings. A new model is a module here (a ``NodeAutoscalerModel``), its
settings (a ``Struct`` field of ``pyhpa.fleet.spec.NodeAutoscaler`` and a ``Model`` value) and one line of
``MODELS`` (docs/fleet.md, "Adding a node autoscaler model").
"""

from __future__ import annotations

import random

from ..spec import Model, NodeAutoscaler
from .base import Action, Delete, Launch, NodeAutoscalerModel, NodeView, PoolView, Reason, Replace
from .cluster_autoscaler import ClusterAutoscalerModel
from .karpenter import KarpenterModel

#: ``spec.nodeAutoscaler.model`` -> (its model, the ``NodeAutoscaler`` field of its settings)
MODELS: dict[Model, tuple[type[NodeAutoscalerModel], str]] = {
    Model.CLUSTER_AUTOSCALER: (ClusterAutoscalerModel, "cluster_autoscaler"),
    Model.KARPENTER: (KarpenterModel, "karpenter"),
}


def make_model(spec: NodeAutoscaler, start: float, rng: random.Random) -> NodeAutoscalerModel:
    """The model ``spec.model`` with its settings, its first loop at ``start`` (epoch s)."""
    cls, settings = MODELS[spec.model]
    return cls(getattr(spec, settings), start, rng)


__all__ = ["MODELS", "Action", "ClusterAutoscalerModel", "Delete", "KarpenterModel", "Launch", "NodeAutoscalerModel",
           "NodeView", "PoolView", "Reason", "Replace", "make_model"]
