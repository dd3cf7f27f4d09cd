"""The registry of metric types (``pyhpa.adapters.metric_types``, docs/metric-types.md): every type provides every
capability, and no module outside the registry (and the decision core, which keeps upstream's rules per type)
compares a metric type string, so that a new metric type stays one module plus its API fields."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from pyhpa.adapters.metric_types import REGISTRY, RESOURCE_TYPES, MetricType, Shown, metric_type
from pyhpa.core.model import METRIC_SOURCE_TYPES, MetricSamples, MetricSpec

ROOT = Path(__file__).resolve().parent.parent
PYHPA = ROOT / "pyhpa"
#: where comparing a metric type is allowed: the registry itself, the core (upstream's rules per type), and the
#: compiled mirror of the core's rules (pyhpa/simulate/native.py: which of upstream's types its decision covers,
#: compared with the core's on every test run)
ALLOWED = (PYHPA / "core", PYHPA / "adapters" / "metric_types", PYHPA / "simulate" / "native.py")
#: names the code gives the type strings (``pyhpa.core.model``'s constants, the Prometheus type's)
TYPE_CONSTANTS = {"RESOURCE", "CONTAINER_RESOURCE", "PODS", "OBJECT", "EXTERNAL", "PROMETHEUS"}
#: a scaling policy's types ("Pods" or "Percent") are no metric types
POLICY_TYPES = {"Percent"}


def test_every_type_is_registered_under_its_name():
    assert set(METRIC_SOURCE_TYPES) < set(REGISTRY), "every autoscaling/v2 type has its module"
    for name, t in REGISTRY.items():
        assert isinstance(t, MetricType) and t.name == name
        assert metric_type(name) is t
    assert RESOURCE_TYPES == {"Resource", "ContainerResource"}


@pytest.mark.parametrize("name", list(REGISTRY))
def test_every_type_provides_every_capability(name):
    t = REGISTRY[name]
    assert t.field and isinstance(t.field, str)
    assert t.api in ("resource", "custom", "external") or t.extension is not None, \
        "a type of autoscaling/v2 comes from a Kubernetes metrics API"
    assert t.snapshot_key and isinstance(t.snapshot_key, str)
    # read from the spec: from the v2 model (spec and query), or from the item as written (extension)
    v2 = t.spec is not None and t.query is not None
    assert v2 != (t.extension is not None), "read either as autoscaling/v2 reads it or as an extension"
    assert (t.spec is None) == (t.query is None)
    # fetched: through a Kubernetes metrics API (ask, then samples), or from its own server (fetch)
    asks = t.ask is not None and t.samples is not None
    assert asks != (t.fetch is not None), "asked through the MetricsClient or by itself"
    assert (t.ask is None) == (t.samples is None)
    assert not (t.shared and t.fetch is not None)
    # recorded in, read from a snapshot; shown; simulated; predicted
    for capability in (t.from_snapshot, t.shown, t.title, t.history):
        assert callable(capability)
    assert v2 == (t.identity is not None), "the status holds the autoscaling/v2 types only"
    assert not t.container or t.resource
    # each capability answers in its shape
    assert isinstance(t.shown({"type": name}), Shown)
    assert isinstance(t.title(MetricSpec(name, "x", "AverageValue"), False), str)
    assert t.snapshot_label("x") in (t.snapshot_key, f"{t.snapshot_key}:x")
    assert isinstance(t.from_snapshot(MetricSpec(name, "x"), None, {}, set()), MetricSamples)
    assert t.readable(None, "not a JSON object") is False


def test_an_unknown_type_is_a_clear_error():
    with pytest.raises(KeyError) as err:
        metric_type("Datadog")
    assert str(err.value) == ("unknown metric type 'Datadog' (known: Resource, ContainerResource, Pods, Object, "
                              "External, Prometheus)")
    with pytest.raises(KeyError):
        metric_type(["not", "hashable"])  # type: ignore[arg-type]


def _is_type_name(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str) and node.value in REGISTRY
    if isinstance(node, ast.Name):
        return node.id in TYPE_CONSTANTS
    if isinstance(node, ast.Attribute):
        return node.attr in TYPE_CONSTANTS
    return False


def _names(node: ast.AST) -> list[ast.AST]:
    """The operands a comparison holds: itself, or the items of a tuple, list or set it tests membership in."""
    return list(node.elts) if isinstance(node, (ast.Tuple, ast.List, ast.Set)) else [node]


def type_comparisons(path: Path, source: str) -> list[str]:
    """Where ``source`` compares a metric type: ``x == "External"``, ``x in ("Resource", ...)``, ``t == PODS``, and
    tables keyed by type names (``{"Resource": ..., "Pods": ...}``); a scaling policy's ``("Pods", "Percent")`` is
    not one."""
    found = []
    for node in ast.walk(ast.parse(source, str(path))):
        if isinstance(node, ast.Compare):
            operands = [x for operand in (node.left, *node.comparators) for x in _names(operand)]
            if any(isinstance(x, ast.Constant) and x.value in POLICY_TYPES for x in operands):
                continue
            if any(_is_type_name(x) for x in operands):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {ast.unparse(node)}")
        elif isinstance(node, ast.Dict):
            keyed = [k for k in node.keys if k is not None and _is_type_name(k)]
            if len(keyed) >= 2:
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: a table keyed by metric types")
    return found


def test_no_module_outside_the_registry_compares_a_metric_type():
    found = []
    for path in sorted(PYHPA.rglob("*.py")):
        if any(path.is_relative_to(allowed) for allowed in ALLOWED):
            continue
        found += type_comparisons(path, path.read_text())
    assert not found, "dispatch through pyhpa.adapters.metric_types instead:\n" + "\n".join(found)


def test_the_check_finds_a_comparison():
    source = "\n".join([
        'if m.type == "External": pass',
        'if m.type in ("Resource", "ContainerResource"): pass',
        "if spec.type != PODS: pass",
        'FIELD = {"Pods": "pods", "Object": "object"}',
        'if p.type not in ("Pods", "Percent"): pass',  # a scaling policy's type: not a metric type
        'if kind == "Deployment": pass',
    ])
    found = type_comparisons(ROOT / "example.py", source)
    assert [line.split(":")[1] for line in found] == ["1", "2", "3", "4"], found
