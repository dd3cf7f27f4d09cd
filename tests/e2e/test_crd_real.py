"""The CRD's schema and CEL rules decided by the real kube-apiserver, and the double's evaluation against it.

Every case of tests/test_crd_cel.py (each rule of deploy/crd.yaml admits one object and refuses another with
the message a user sees) is sent to kube-apiserver v1.37.2 with its expected answer; then the same requests go
to kubedouble and the real server side by side, and the status codes, messages and causes must be the same:
the double's CEL machinery (transition rules, list-map correlation, ratcheting, messageExpression, reason,
fieldPath, evaluation errors, a rule that does not compile) is held to the real server's. And the CRD's printer
columns: ``kubectl get horizontalautoscalers`` shows REFERENCE and TARGETS as ``kubectl get hpa`` does.
"""

from __future__ import annotations

import copy
import time
import uuid

import httpx2
import pytest
from lightkube import ApiError, codecs
from lightkube.generic_resource import create_namespaced_resource
from lightkube.resources.apiextensions_v1 import CustomResourceDefinition
from test_crd_cel import CASES, CRD, CRON, DATED, PREFIX, _body, spec_of, widget_crd

from kubedouble import KubeDouble
from kubedouble.errors import KubeError

from .util import HA, apply, autoscaler, cpu_utilization, deployment, running_pods, set_pod_cpu, wait_until


@pytest.mark.parametrize("key", list(CASES), ids=[m[:40] for _, m in CASES])
def test_the_real_server_admits_and_refuses_each_case_with_the_expected_message(client, ns, key):
    admitted, refused, message = CASES[key]
    ok = _body("ok", admitted).to_dict()
    ok["metadata"]["namespace"] = ns
    assert client.create(HA(ok)).metadata.name == "ok"
    bad = _body("web", refused).to_dict()
    bad["metadata"]["namespace"] = ns
    with pytest.raises(ApiError) as err:
        client.create(HA(bad))
    status = err.value.status
    assert (status.code, status.reason) == (422, "Invalid")
    assert status.message == PREFIX + message
    field, _, rest = message.partition(": ")
    assert [(c.field, c.reason, c.message) for c in status.details.causes] == [(field, "FieldValueInvalid", rest)]


# ----------------------------------------------------------------------------------------- side by side
class Real:
    """Requests to kube-apiserver; every answer as (code, message, causes)."""

    def __init__(self, client, ns: str):
        self.client, self.ns = client, ns

    def register_crd(self, crd: dict) -> tuple:
        name = crd["metadata"]["name"]
        try:
            current = self.client.get(CustomResourceDefinition, name)
        except ApiError:
            current = None
        try:
            if current is None:
                self.client.create(codecs.from_dict(crd))
            else:
                body = codecs.from_dict(crd)
                body.metadata.resourceVersion = current.metadata.resourceVersion
                self.client.replace(body)
        except ApiError as e:
            return _answer(e.status)
        wait_until(lambda: self._established(name) and self._served(crd), what=f"{name} established and served")
        return (201, "", [])

    def _served(self, crd: dict) -> bool:
        """The new resource answers a list (Established comes a moment before the route serves it)."""
        spec = crd["spec"]
        res = create_namespaced_resource(spec["group"], spec["versions"][0]["name"], spec["names"]["kind"],
                                         spec["names"]["plural"])
        try:
            list(self.client.list(res, namespace=self.ns))
            return True
        except httpx2.HTTPError:  # ApiError, or a bare 404 before the route is there
            return False

    def _established(self, name: str) -> bool:
        crd = self.client.get(CustomResourceDefinition, name)
        return any(c.type == "Established" and c.status == "True" for c in (crd.status.conditions or []))

    def resource(self, obj: dict):
        group, version = obj["apiVersion"].split("/")
        return create_namespaced_resource(group, version, obj["kind"], obj["kind"].lower() + "s")

    def create(self, obj: dict, dry_run: bool = False) -> tuple:
        obj = dict(copy.deepcopy(obj), metadata=dict(obj["metadata"], namespace=self.ns))
        for _ in range(50):
            try:
                self.client.create(self.resource(obj)(obj), dry_run=dry_run)
                return (201, "", [])
            except ApiError as e:
                return _answer(e.status)
            except httpx2.HTTPStatusError as e:  # a bare 404 while a new CRD's route settles: not an answer yet
                if e.response.status_code != 404:
                    raise
                time.sleep(0.2)
        raise AssertionError(f"{obj['kind']} was not served within 10 s")

    def update(self, obj: dict) -> tuple:
        res = self.resource(obj)
        stored = self.client.get(res, obj["metadata"]["name"], namespace=self.ns).to_dict()
        body = dict(stored, spec=copy.deepcopy(obj["spec"]))
        try:
            self.client.replace(res(body))
            return (200, "", [])
        except ApiError as e:
            return _answer(e.status)

    def cleanup(self, crd_names: list[str]) -> None:
        for name in crd_names:
            try:
                self.client.delete(CustomResourceDefinition, name)
            except ApiError:
                pass


class Double(Real):
    """The same requests to kubedouble (its sync client; CRDs through its hook, as the tests register them)."""

    def __init__(self, kd: KubeDouble):
        super().__init__(kd.client(), "default")
        self.kd = kd

    def register_crd(self, crd: dict) -> tuple:
        try:
            self.kd.register_crd(crd)
            return (201, "", [])
        except KubeError as e:
            return _answer_dict(e.body())

    def cleanup(self, crd_names: list[str]) -> None:
        pass


def _answer(status) -> tuple:
    causes = [(c.field, c.reason, c.message) for c in (status.details.causes or [])] if status.details else []
    return (status.code, status.message, causes)


def _answer_dict(body: dict) -> tuple:
    causes = [(c.get("field"), c.get("reason"), c.get("message")) for c in (body.get("details") or {}).get("causes") or []]
    return (body["code"], body["message"], causes)


def widget(group: str, name: str, **spec) -> dict:
    return {"apiVersion": f"{group}/v1", "kind": "Widget", "metadata": {"name": name}, "spec": spec}


def scenario_transition(b, g):
    out = [b.register_crd(widget_crd({"mode": [{"rule": "self == oldSelf", "message": "mode is immutable"}]}, g))]
    out.append(b.create(widget(g, "a", mode="fast")))
    out.append(b.update(widget(g, "a", mode="fast", size=3)))
    out.append(b.update(widget(g, "a", mode="slow")))
    return out


def scenario_list_map(b, g):
    rule = {"rule": "!has(oldSelf.weight) || self.weight >= oldSelf.weight", "message": "weight may only grow"}
    out = [b.register_crd(widget_crd({"parts[]": [rule]}, g))]
    out.append(b.create(widget(g, "a", parts=[{"name": "x", "weight": 5}, {"name": "y", "weight": 1}])))
    out.append(b.update(widget(g, "a", parts=[{"name": "z", "weight": 0}, {"name": "y", "weight": 2},
                                               {"name": "x", "weight": 5}])))
    out.append(b.update(widget(g, "a", parts=[{"name": "z", "weight": 0}, {"name": "y", "weight": 1},
                                               {"name": "x", "weight": 5}])))
    return out


def scenario_ratcheting(b, g):
    out = [b.register_crd(widget_crd({}, g)), b.create(widget(g, "a", size=50, mode="x"))]
    out.append(b.register_crd(widget_crd({"size": [{"rule": "self <= 10", "message": "size must be at most 10"}]}, g)))
    # the new rule is in force once a dry run of an object it refuses is refused
    wait_until(lambda: b.create(widget(g, "probe", size=11), dry_run=True)[0] == 422, what="the new rule in force")
    out.append(b.update(widget(g, "a", size=50, mode="y")))
    out.append(b.update(widget(g, "a", size=40, mode="y")))
    out.append(b.create(widget(g, "b", size=11)))
    return out


def scenario_message_expression(b, g):
    out = [b.register_crd(widget_crd({"spec": [
        {"rule": "!has(self.size) || self.size % 2 == 0", "fieldPath": ".size", "reason": "FieldValueForbidden",
         "messageExpression": "'size ' + (self.size < 0 ? 'below zero' : 'above zero') + ' is odd'"},
        {"rule": "!has(self.mode) || self.mode != 'off'"},
        {"rule": "!has(self.parts) || self.parts.size() < 3", "reason": "FieldValueRequired", "fieldPath": ".parts",
         "message": "fewer than three parts"}]}, g))]
    out.append(b.create(widget(g, "a", size=3, mode="off")))
    out.append(b.create(widget(g, "b", parts=[{"name": n} for n in "xyz"])))
    out.append(b.create(widget(g, "c", size=4, mode="on", parts=[{"name": "x"}])))
    return out


def scenario_evaluation_error(b, g):
    out = [b.register_crd(widget_crd({"spec": [{"rule": "self.size > 1", "message": "size must be above 1"}]}, g))]
    out.append(b.create(widget(g, "a", mode="x")))
    out.append(b.create(widget(g, "b", size=2)))
    return out


def scenario_does_not_compile(b, g):
    return [b.register_crd(widget_crd({"size": [{"rule": "self >", "message": "x"}]}, g))]


def scenario_horizontalautoscaler(b, g):
    """The HorizontalAutoscaler's own rules: several at once, on update, a pattern before the rules."""
    ha = lambda name, spec: _body(name, spec).to_dict()  # noqa: E731
    out = [b.create(ha("multi", spec_of([dict(CRON, minReplicas=4, maxReplicas=3, end="0 8 * * *")])))]
    out.append(b.create(ha("dated", spec_of([DATED]))))
    out.append(b.update(ha("dated", spec_of([dict(DATED, end="2026-11-26T00:00:00Z")]))))
    out.append(b.create(ha("pattern", spec_of([dict(DATED, start="2026-11-27")]))))
    for (admitted, refused, _) in CASES.values():
        out.append(b.create(ha(f"ok-{len(out)}", admitted)))
        out.append(b.create(ha(f"no-{len(out)}", refused)))
    return out


SCENARIOS = [scenario_transition, scenario_list_map, scenario_ratcheting, scenario_message_expression,
             scenario_evaluation_error, scenario_does_not_compile, scenario_horizontalautoscaler]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.__name__[len("scenario_"):])
def test_the_double_answers_as_the_real_server_does(client, ns, scenario):
    group = f"w{uuid.uuid4().hex[:6]}.example.com"
    real = Real(client, ns)
    with KubeDouble.start_in_thread() as kd:
        kd.register_crd(CRD)
        try:
            got_real = scenario(real, group)
            got_double = scenario(Double(kd), group)
        finally:
            real.cleanup([f"widgets.{group}"])
    assert len(got_real) == len(got_double)
    for step, (r, d) in enumerate(zip(got_real, got_double)):
        assert d == r, f"step {step} of {scenario.__name__}: double {d!r} != real {r!r}"


def kubectl_table(plane, *args: str) -> list[dict]:
    """The rows of ``kubectl get ARGS`` (its table: each column starts where its header does)."""
    header, *rows = plane.run_kubectl("get", *args).stdout.splitlines()
    names = header.split()
    starts = [header.index(n) for n in names]
    ends = starts[1:] + [None]
    return [{n: row[a:b].strip() for n, a, b in zip(names, starts, ends)} for row in rows]


def test_kubectl_get_shows_reference_and_targets_as_for_a_native_hpa(plane, client, ns, pyhpa):
    """Issue 37: the same load under a native HPA (upstream's controller) and a HorizontalAutoscaler (pyhpa run),
    both held at 2 replicas: ``kubectl get`` shows the same columns, REFERENCE as Kind/name and the same TARGETS."""
    long_ago = {"kwok.pyhpa.dev/start-time": "2026-01-01T00:00:00Z"}
    for name in ("native", "pyhpa"):
        apply(client, deployment(name, ns, replicas=2, annotations=long_ago))
        wait_until(lambda: len(running_pods(plane, ns, name)) == 2, what=f"2 running pods of {name}")
        set_pod_cpu(plane, ns, name, 150)  # 150 % of the 100m request
    hpa = autoscaler("native", ns, "native", [cpu_utilization(50)], 2, 2)
    client.create(codecs.from_dict(dict(hpa, apiVersion="autoscaling/v2", kind="HorizontalPodAutoscaler")))
    apply(client, autoscaler("pyhpa", ns, "pyhpa", [cpu_utilization(50)], 2, 2))
    pyhpa("--sync-period", "1", "-n", ns)
    (ours,) = wait_until(lambda: (r := kubectl_table(plane, "horizontalautoscalers", "-n", ns))[0]["TARGETS"]
                         not in ("", "<none>") and r, what="TARGETS of the HorizontalAutoscaler (empty until it syncs)")
    (theirs,) = wait_until(lambda: (r := kubectl_table(plane, "hpa", "-n", ns))[0]["TARGETS"] != "cpu: <unknown>/50%"
                           and r, what="TARGETS of the native HPA")
    assert list(ours)[:6] == list(theirs)[:6] == ["NAME", "REFERENCE", "TARGETS", "MINPODS", "MAXPODS", "REPLICAS"]
    assert (ours["REFERENCE"], theirs["REFERENCE"]) == ("Deployment/pyhpa", "Deployment/native")
    assert ours["TARGETS"] == theirs["TARGETS"] == "cpu: 150%/50%"
