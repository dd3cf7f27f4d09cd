"""The CRD's CEL rules (``x-kubernetes-validations``) as the API server enforces them, through the API double.

Every rule of ``deploy/crd.yaml`` has a case here: an object it admits and one it refuses, with the exact
message ``kubectl apply`` would print (a 422 Invalid naming the field). A rule added to the CRD without a case
fails ``test_every_rule_of_the_crd_has_a_case``. Then the double's CEL machinery itself, on a small CRD:
transition rules (``oldSelf``), ratcheting, ``messageExpression``, ``reason``, evaluation errors, and a
CRD whose rule does not compile.
"""

from __future__ import annotations

import copy

import pytest
from controller_util import CRD, autoscaler
from lightkube import ApiError
from lightkube.generic_resource import create_namespaced_resource
from lightkube.types import PatchType

from kubedouble.errors import KubeError
from pyhpa.controller.cache.autoscaler import HorizontalAutoscaler

PREFIX = 'HorizontalAutoscaler.pyhpa.dev "web" is invalid: '
CRON = {"name": "w", "start": "0 8 * * *", "end": "0 9 * * *", "minReplicas": 2}
DATED = {"name": "d", "start": "2026-11-27T00:00:00-05:00", "end": "2026-11-30T00:00:00-05:00", "minReplicas": 2}


def rules_of(node: dict, path: str = "") -> list[tuple[str, str]]:
    """(schema path, message) of every rule in a CRD schema."""
    out = [(path, r.get("message") or r["rule"]) for r in node.get("x-kubernetes-validations") or ()]
    for key, sub in (node.get("properties") or {}).items():
        out += rules_of(sub, f"{path}.{key}")
    if isinstance(node.get("items"), dict):
        out += rules_of(node["items"], f"{path}[]")
    if isinstance(node.get("additionalProperties"), dict):
        out += rules_of(node["additionalProperties"], f"{path}{{}}")
    return out


def spec_of(schedules: list[dict]) -> dict:
    return {"schedules": schedules}


# (schema path, message) -> (admitted spec fields, refused spec fields, the refusal after PREFIX)
CASES = {
    (".spec.schedules[]", "a window needs minReplicas (a floor), maxReplicas (a cap) or both"): (
        spec_of([dict(CRON, minReplicas=None, maxReplicas=3)]),
        spec_of([{k: v for k, v in CRON.items() if k != "minReplicas"}]),
        'spec.schedules[0].minReplicas: Invalid value: a window needs minReplicas (a floor), '
        "maxReplicas (a cap) or both"),
    (".spec.schedules[]", "give exactly one of end and durationSeconds"): (
        spec_of([{k: v for k, v in CRON.items() if k != "end"} | {"durationSeconds": 600}]),
        spec_of([dict(CRON, durationSeconds=600)]),
        'spec.schedules[0].end: Invalid value: give exactly one of end and durationSeconds'),
    (".spec.schedules[]", "end must differ from start"): (
        spec_of([CRON]),
        spec_of([dict(CRON, end="0 8 * * *")]),
        'spec.schedules[0].end: Invalid value: end must differ from start'),
    (".spec.schedules[]", "minReplicas must not be greater than maxReplicas"): (
        spec_of([dict(CRON, minReplicas=3, maxReplicas=3)]),
        spec_of([dict(CRON, minReplicas=4, maxReplicas=3)]),
        'spec.schedules[0].minReplicas: Invalid value: minReplicas must not be greater than maxReplicas'),
    (".spec.schedules[]", "start and end must both be date-times (a dated window) or both crons"): (
        spec_of([DATED]),
        spec_of([dict(DATED, end="0 9 * * *")]),
        'spec.schedules[0].end: Invalid value: start and end must both be date-times (a dated window) '
        "or both crons"),
    (".spec.schedules[]", "a dated window takes an end date-time, not durationSeconds"): (
        spec_of([DATED]),
        spec_of([{k: v for k, v in DATED.items() if k != "end"} | {"durationSeconds": 600}]),
        'spec.schedules[0].durationSeconds: Invalid value: a dated window takes an end date-time, '
        "not durationSeconds"),
    (".spec.schedules[]", "excludeDates applies to cron windows only (a dated window has one occurrence)"): (
        spec_of([dict(CRON, excludeDates=["2026-12-25"])]),
        spec_of([dict(DATED, excludeDates=["2026-11-28"])]),
        'spec.schedules[0].excludeDates: Invalid value: excludeDates applies to cron windows only '
        "(a dated window has one occurrence)"),
    (".spec.schedules[]", "give start and end both with a UTC offset or both without one (then both are read in "
                          "timeZone)"): (
        spec_of([dict(DATED, start="2026-11-27T00:00:00", end="2026-11-30T00:00:00", timeZone="America/New_York")]),
        spec_of([dict(DATED, end="2026-11-30T00:00:00")]),
        'spec.schedules[0].end: Invalid value: give start and end both with a UTC offset or both without '
        "one (then both are read in timeZone)"),
    (".spec.schedules[]", "end must be after start"): (
        spec_of([dict(DATED, end="2026-11-27T05:00:01Z")]),  # one second after 00:00 EST, another offset
        spec_of([dict(DATED, end="2026-11-27T05:00:00Z")]),  # the same instant as the start
        'spec.schedules[0].end: Invalid value: end must be after start'),
    (".spec.schedules", "dated windows of the same kind (two floors or two caps) must not overlap"): (
        spec_of([DATED, dict(DATED, name="e", start="2026-11-30T00:00:00-05:00", end="2026-12-01T00:00:00Z"),
                 dict(DATED, name="cap", minReplicas=None, maxReplicas=9)]),  # touching floors; a floor and a cap
        spec_of([DATED, dict(DATED, name="e", start="2026-11-29T23:00:00-05:00", end="2026-12-01T00:00:00Z")]),
        'spec.schedules: Invalid value: dated windows of the same kind (two floors or two caps) '
        "must not overlap"),
}


def crd_schema() -> dict:
    return CRD["spec"]["versions"][0]["schema"]["openAPIV3Schema"]


def test_every_rule_of_the_crd_has_a_case():
    assert sorted(rules_of(crd_schema())) == sorted(CASES)


def _body(name: str, spec: dict) -> HorizontalAutoscaler:
    obj = autoscaler(name, "web")
    schedules = [{k: v for k, v in w.items() if v is not None} for w in spec.get("schedules", [])]
    obj["spec"].update(spec, schedules=schedules)
    return HorizontalAutoscaler(obj)


@pytest.mark.parametrize("key", list(CASES), ids=[m[:40] for _, m in CASES])
async def test_the_rule_admits_one_object_and_refuses_another_with_the_message_a_user_sees(kd, key):
    admitted, refused, message = CASES[key]
    client = kd.async_client()
    created = await client.create(_body("ok", admitted))
    assert created.metadata.name == "ok"
    with pytest.raises(ApiError) as err:
        await client.create(_body("web", refused))
    status = err.value.status
    assert (status.code, status.reason) == (422, "Invalid")
    assert status.message == PREFIX + message
    field, _, rest = message.partition(": ")
    assert [(c.field, c.reason, c.message) for c in status.details.causes] == [(field, "FieldValueInvalid", rest)]
    assert kd.get_object("pyhpa.dev/v1alpha1", "horizontalautoscalers", "default", "web") is None


async def test_several_failed_rules_are_listed_together_as_the_api_server_does(kd):
    client = kd.async_client()
    with pytest.raises(ApiError) as err:
        await client.create(_body("web", spec_of([dict(CRON, minReplicas=4, maxReplicas=3, end="0 8 * * *")])))
    assert err.value.status.message == PREFIX + (
        '[spec.schedules[0].end: Invalid value: end must differ from start, spec.schedules[0].minReplicas: '
        'Invalid value: minReplicas must not be greater than maxReplicas]')
    assert len(err.value.status.details.causes) == 2


async def test_the_rules_apply_on_update_and_patch_too(kd):
    client = kd.async_client()
    await client.create(_body("web", spec_of([DATED])))
    with pytest.raises(ApiError) as err:
        await client.patch(HorizontalAutoscaler, "web", {"spec": {"schedules": [dict(DATED, end="2026-11-26T00:00:00Z")]}},
                           namespace="default", patch_type=PatchType.MERGE)
    assert err.value.status.message == PREFIX + 'spec.schedules[0].end: Invalid value: end must be after start'


async def test_a_date_time_the_schema_pattern_refuses_is_reported_with_the_rules_it_breaks(kd):
    """A pattern error does not keep kube-apiserver from evaluating the CEL rules (only type, required, enum,
    maxLength and maxItems errors do): both are listed, the schema's first (checked against v1.37.2 by
    tests/e2e/test_crd_real.py)."""
    client = kd.async_client()
    with pytest.raises(ApiError) as err:
        await client.create(_body("web", spec_of([dict(DATED, start="2026-11-27")])))
    pattern = crd_schema()["properties"]["spec"]["properties"]["schedules"]["items"]["properties"]["start"]["pattern"]
    assert err.value.status.message == PREFIX + (
        f'[spec.schedules[0].start: Invalid value: "2026-11-27": spec.schedules[0].start in body should match '
        f"'{pattern}', spec.schedules[0].end: Invalid value: give start and end both with a UTC offset or both "
        "without one (then both are read in timeZone)]")


async def test_a_blocking_schema_error_keeps_the_rules_from_running_and_says_so(kd):
    client = kd.async_client()
    with pytest.raises(ApiError) as err:
        await client.create(_body("web", spec_of([dict(CRON, name="x" * 64, minReplicas=4, maxReplicas=3)])))
    assert err.value.status.message == PREFIX + (
        "[spec.schedules[0].name: Too long: may not be more than 63 bytes, <nil>: Invalid value: null: some validation "
        "rules were not checked because the object was invalid; correct the existing errors to complete validation]")
    assert [c.reason for c in err.value.status.details.causes] == ["FieldValueTooLong", "FieldValueInvalid"]


# ----------------------------------------------------------------------------------------- the CEL machinery
def widget_crd(validations: dict[str, list[dict]], group: str = "example.com") -> dict:
    """A CRD ``widgets.example.com`` with ``spec.size`` (integer), ``spec.mode`` (string), ``spec.parts`` (list
    map by name); ``validations`` maps "spec", "size", "mode", "parts" to rules."""
    def rules(where):
        return {"x-kubernetes-validations": validations[where]} if where in validations else {}

    spec = {"type": "object", "properties": {
        "size": {"type": "integer", **rules("size")},
        "mode": {"type": "string", **rules("mode")},
        "parts": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                  "items": {"type": "object", "required": ["name"], "properties": {
                      "name": {"type": "string"}, "weight": {"type": "integer"}}, **rules("parts[]")}}},
        **rules("spec")}
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"widgets.{group}"},
            "spec": {"group": group, "scope": "Namespaced",
                     "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
                     "versions": [{"name": "v1", "served": True, "storage": True,
                                   "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": spec}}}}]}}


def widget(name: str, **spec) -> dict:
    return {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": name, "namespace": "default"},
            "spec": spec}


Widget = create_namespaced_resource("example.com", "v1", "Widget", "widgets")


async def admit(kd, obj: dict):
    return await kd.async_client().create(Widget(copy.deepcopy(obj)))


async def update(kd, obj: dict):
    return await kd.async_client().replace(Widget(copy.deepcopy(obj)))


async def refusal(kd, obj: dict, write=admit) -> dict:
    """The Status body of the 422 the double answers to ``write`` (create by default) over HTTP."""
    with pytest.raises(ApiError) as err:
        await write(kd, obj)
    assert err.value.status.code == 422
    return err.value.status.to_dict()


def stored(kd, name: str) -> dict:
    return kd.get_object("example.com/v1", "widgets", "default", name)


async def test_a_transition_rule_sees_old_self_only_on_update(kd):
    kd.register_crd(widget_crd({"mode": [{"rule": "self == oldSelf", "message": "mode is immutable"}]}))
    await admit(kd, widget("a", mode="fast"))  # a create has no oldSelf: the rule is not evaluated
    assert (await update(kd, dict(stored(kd, "a"), spec={"mode": "fast", "size": 3}))).spec["size"] == 3
    body = await refusal(kd, dict(stored(kd, "a"), spec={"mode": "slow"}), update)
    assert body["message"] == 'Widget.example.com "a" is invalid: spec.mode: Invalid value: "slow": mode is immutable'


async def test_list_map_items_are_correlated_by_key_for_old_self(kd):
    rule = {"rule": "!has(oldSelf.weight) || self.weight >= oldSelf.weight", "message": "weight may only grow"}
    kd.register_crd(widget_crd({"parts[]": [rule]}))
    await admit(kd, widget("a", parts=[{"name": "x", "weight": 5}, {"name": "y", "weight": 1}]))
    # reordered and a new item: x keeps 5, y grows, z is new (no oldSelf)
    await update(kd, dict(stored(kd, "a"), spec={"parts": [{"name": "z", "weight": 0}, {"name": "y", "weight": 2},
                                                           {"name": "x", "weight": 5}]}))
    body = await refusal(kd, dict(stored(kd, "a"), spec={"parts": [{"name": "z", "weight": 0}, {"name": "y", "weight": 1},
                                                                   {"name": "x", "weight": 5}]}), update)
    assert body["details"]["causes"] == [
        {"reason": "FieldValueInvalid", "message": 'Invalid value: weight may only grow',
         "field": "spec.parts[1]"}]


async def test_ratcheting_an_unchanged_value_that_a_new_rule_refuses_may_stay(kd):
    kd.register_crd(widget_crd({}))
    await admit(kd, widget("a", size=50, mode="x"))
    kd.register_crd(widget_crd({"size": [{"rule": "self <= 10", "message": "size must be at most 10"}]}))
    await update(kd, dict(stored(kd, "a"), spec={"size": 50, "mode": "y"}))  # size unchanged: not re-checked
    assert stored(kd, "a")["spec"] == {"size": 50, "mode": "y"}
    body = await refusal(kd, dict(stored(kd, "a"), spec={"size": 40, "mode": "y"}), update)
    assert body["message"] == 'Widget.example.com "a" is invalid: spec.size: Invalid value: 40: size must be at most 10'
    assert "size must be at most 10" in (await refusal(kd, widget("b", size=11)))["message"]


async def test_message_expression_reason_field_path_and_the_default_message(kd):
    kd.register_crd(widget_crd({"spec": [
        {"rule": "!has(self.size) || self.size % 2 == 0", "fieldPath": ".size", "reason": "FieldValueForbidden",
         "messageExpression": "'size ' + (self.size < 0 ? 'below zero' : 'above zero') + ' is odd'"},
        {"rule": "!has(self.mode) || self.mode != 'off'"},
        {"rule": "!has(self.parts) || self.parts.size() < 3", "reason": "FieldValueRequired", "fieldPath": ".parts",
         "message": "fewer than three parts"}]}))
    body = await refusal(kd, widget("a", size=3, mode="off"))
    assert body["message"] == ('Widget.example.com "a" is invalid: [spec.size: Forbidden: size above zero is odd, spec: '
                               'Invalid value: failed rule: !has(self.mode) || self.mode != \'off\']')
    assert [c["reason"] for c in body["details"]["causes"]] == ["FieldValueForbidden", "FieldValueInvalid"]
    parts = await refusal(kd, widget("b", parts=[{"name": n} for n in "xyz"]))
    assert parts["message"] == 'Widget.example.com "b" is invalid: spec.parts: Required value: fewer than three parts'
    await admit(kd, widget("c", size=4, mode="on", parts=[{"name": "x"}]))


async def test_a_rule_that_fails_to_evaluate_is_an_invalid_value_at_the_node_naming_the_error(kd):
    kd.register_crd(widget_crd({"spec": [{"rule": "self.size > 1", "message": "size must be above 1"}]}))
    body = await refusal(kd, widget("a", mode="x"))  # no size: "no such key"
    assert body["message"] == ('Widget.example.com "a" is invalid: spec: Invalid value: "object": no such key: size '
                               "evaluating rule: size must be above 1")
    await admit(kd, widget("b", size=2))


async def test_a_crd_whose_rule_does_not_compile_is_refused(kd):
    with pytest.raises(KubeError) as err:
        kd.register_crd(widget_crd({"size": [{"rule": "self >", "message": "x"}]}, group="broken.example.com"))
    body = err.value.body()
    assert body["code"] == 422 and body["reason"] == "Invalid"
    assert ("spec.validation.openAPIV3Schema.properties[spec].properties[size].x-kubernetes-validations[0].rule: "
            'Invalid value: {"Rule":"self \\u003e","Message":"x","MessageExpression":"","Reason":null,"FieldPath":"",'
            '"OptionalOldSelf":null}: compilation failed: ERROR: <input>:1:7: Syntax error: ') in body["message"]
    assert kd.get_object("apiextensions.k8s.io/v1", "customresourcedefinitions", None,
                         "widgets.broken.example.com") is None


async def test_the_generated_crd_registers_with_every_rule_compiled(kube_double):
    created = kube_double.register_crd(CRD)
    assert created["metadata"]["name"] == "horizontalautoscalers.pyhpa.dev"
    assert len(rules_of(crd_schema())) == len(CASES) >= 10


def test_the_window_count_is_bounded_alike_in_the_crd_and_every_command():
    """kube-apiserver v1.37.2 refuses the CRD when the pairwise overlap rule may cost more than its CEL budget
    (48 windows do, tests/e2e checks 32 against the real server): the CRD's maxItems and the readers share
    MAX_SCHEDULES."""
    from pyhpa.adapters.autoscaler import MAX_SCHEDULES, read_schedules
    from pyhpa.adapters.errors import InputError

    assert crd_schema()["properties"]["spec"]["properties"]["schedules"]["maxItems"] == MAX_SCHEDULES == 32
    windows = [dict(CRON, name=f"w{i}") for i in range(MAX_SCHEDULES + 1)]
    with pytest.raises(InputError) as err:
        read_schedules(windows, "spec.schedules", None)
    assert "at most 32 windows" in str(err.value)
