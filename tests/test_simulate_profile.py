"""Workload profile and target manifest parsing: defaults, units, and clear errors."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

import pytest
from simulate_util import target_doc, write_yaml

from pyhpa.adapters.errors import InputError
from pyhpa.simulate import bundled_path
from pyhpa.simulate.profile import Profile, load_profile, profile_from_dict
from pyhpa.simulate.target import Probe, load_target, target_from_dict

DOCS = Path(__file__).resolve().parent.parent / "docs" / "profile.md"


def test_defaults_and_bundled_profile():
    assert load_profile(None) == Profile()
    p = load_profile(bundled_path("profile"))
    assert p.cpu_millicore_seconds_per_request == 120 and p.load_unit == "requests_per_second"


@pytest.mark.parametrize("doc, message", [
    ({"cpu_milicores": 1}, "cpu_milicores: unknown field"),
    ({"pod_capacity_rps": "fast"}, "pod_capacity_rps: must be a number, got 'fast'"),
    ({"pod_capacity_rps": 0}, "pod_capacity_rps: must be greater than 0"),
    ({"app_startup_seconds": -1}, "app_startup_seconds: must be a number from 0 to 1e+15"),
    ({"load_unit": "rps"}, "load_unit: must be one of requests_per_second"),
    ({"load_unit": "cpu_percent"}, "cpu_percent_base_millicores: load_unit cpu_percent needs"),
    ({"traffic_spread": "random"}, "traffic_spread: must be one of even, imbalanced"),
    ({"metrics_scrape_offset_seconds": 20}, "metrics_scrape_offset_seconds: must be below metric_resolution_seconds"),
    ({"metrics": {"q": {"column": ""}}}, "metrics.q.column: must be a trace column name"),
    ({"metrics": {"q": {"source": "cpu"}}}, "metrics.q: give 'column: NAME' or 'source: served_requests_per_second'"),
])
def test_profile_errors(doc, message):
    with pytest.raises(InputError) as err:
        profile_from_dict(doc)
    assert message in str(err.value)


def test_profile_error_names_the_file(tmp_path):
    path = write_yaml(tmp_path / "p.yaml", {"pod_capacity_rps": -3})
    with pytest.raises(InputError) as err:
        load_profile(path)
    assert str(err.value).startswith(f"{path}: workload profile: pod_capacity_rps: must be")


def test_load_units():
    assert Profile().load_to_rps(3.0) == 3.0
    assert Profile(load_unit="requests_per_minute").load_to_rps(120.0) == 2.0
    assert Profile(load_unit="cpu_millicores", cpu_millicore_seconds_per_request=10).load_to_rps(500.0) == 50.0
    p = Profile(load_unit="cpu_percent", cpu_percent_base_millicores=2000, cpu_millicore_seconds_per_request=10)
    assert p.load_to_rps(30.0) == 60.0  # 30 % of 2 cores = 600m = 60 units of 10 millicore-seconds


def test_every_profile_field_is_documented():
    text = DOCS.read_text()
    missing = [f.name for f in fields(Profile) if f"`{f.name}`" not in text]
    assert not missing


def test_bundled_target_is_the_walkthrough_deployment():
    t = load_target(bundled_path("target"))
    assert (t.kind, t.name, t.replicas, t.selector) == ("Deployment", "php-apache", 1, "run=php-apache")
    assert t.requests[("cpu", "")] == 200 and t.cpu_limit_millicores == 500 and t.readiness is None


def test_probe_timing():
    probe = Probe(initial_delay_seconds=10, period_seconds=10, success_threshold=2)
    assert probe.first_pass(100.0, 100.0) == 120.0  # probes at 110, 120: two successes
    assert probe.first_pass(100.0, 125.0) == 140.0  # first success at 130, second at 140


@pytest.mark.parametrize("change, message", [
    (lambda d: d["spec"]["template"]["metadata"]["labels"].update(app="x"), "template labels do not match the selector"),
    (lambda d: d.update(apiVersion="apps/v1beta1"), "expected apiVersion apps/v1"),
    (lambda d: d["spec"]["template"]["spec"]["containers"][0]["resources"].update(limits={"cpu": "lots"}),
     "malformed quantity 'lots'"),
])
def test_target_errors(change, message):
    doc = target_doc()
    change(doc)
    with pytest.raises(InputError) as err:
        target_from_dict(doc)
    assert message in str(err.value)


def test_target_file_needs_exactly_one_workload(tmp_path):
    path = tmp_path / "t.yaml"
    path.write_text("apiVersion: v1\nkind: Service\nmetadata: {name: x}\n")
    with pytest.raises(InputError) as err:
        load_target(path)
    assert "expected exactly one apps/v1 Deployment or StatefulSet, found 0 (kinds: Service)" in str(err.value)


def test_cpu_limit_below_baseline_is_an_error(tmp_path):
    from simulate_util import simulate

    with pytest.raises(InputError) as err:
        simulate(tmp_path, [(300, 1.0)], target=target_doc(limit="5m"), profile={"cpu_baseline_millicores": 10})
    assert "is not above the profile's cpu_baseline_millicores" in str(err.value)
