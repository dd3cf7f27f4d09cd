"""The alert rules of deploy/monitoring/alerts.yaml: ``promtool check rules`` passes, and ``promtool test rules``
shows each alert firing where it should and not firing where it should not (issue 22).

The promtool test file is written from ``CASES``: per alert, input series, an evaluation time, and the label
sets expected to fire (an empty list: nothing fires). The expected annotations are the rule's own templates
rendered with those labels (promtool compares them too), so a case only states which series fire.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
RULES = ROOT / "deploy" / "monitoring" / "alerts.yaml"
PROMTOOL = shutil.which("promtool")
needs_promtool = pytest.mark.skipif(PROMTOOL is None, reason="promtool is not installed here (.ci/run installs "
                                                             "Debian's prometheus package)")


def s(metric: str, values: str, **labels: str) -> dict:
    inner = ",".join(f'{k}="{v}"' for k, v in labels.items())
    return {"series": f"{metric}{{{inner}}}", "values": values}


WEB = {"namespace": "shop", "name": "web"}
API = {"namespace": "shop", "name": "api"}
#: alert -> list of (input series, eval time, label sets expected to fire)
CASES: dict[str, list[tuple[list[dict], str, list[dict]]]] = {
    "PyhpaAutoscalerAtMaxReplicas": [
        ([s("pyhpa_autoscaler_current_replicas", "10x30", **WEB), s("pyhpa_autoscaler_max_replicas", "10x30", **WEB),
          s("pyhpa_autoscaler_current_replicas", "4x30", **API), s("pyhpa_autoscaler_max_replicas", "10x30", **API)],
         "16m", [WEB]),
        ([s("pyhpa_autoscaler_current_replicas", "10x30", **WEB), s("pyhpa_autoscaler_max_replicas", "10x30", **WEB)],
         "10m", []),  # only 10 minutes at the maximum
    ],
    "PyhpaMetricsUnavailable": [
        ([s("pyhpa_autoscaler_sync_errors_total", "0+4x30", reason="FailedGetExternalMetric", **WEB),
          s("pyhpa_autoscaler_sync_errors_total", "0+4x30", reason="FailedGetScale", **API),
          s("pyhpa_autoscaler_sync_errors_total", "7x30", reason="FailedGetResourceMetric", **API)],
         "12m", [dict(WEB, reason="FailedGetExternalMetric")]),
    ],
    "PyhpaFallbackActive": [
        ([s("pyhpa_autoscaler_fallback_active", "1x10", **WEB), s("pyhpa_autoscaler_fallback_active", "0x10", **API)],
         "5m", [WEB]),
    ],
    "PyhpaPredictionInactive": [
        ([s("pyhpa_autoscaler_predicting", "0x90", **WEB), s("pyhpa_autoscaler_predicting", "1x90", **API)],
         "70m", [WEB]),
        ([s("pyhpa_autoscaler_predicting", "0x90", **WEB)], "30m", []),  # stepped aside for half an hour only
    ],
    "PyhpaSyncErrors": [
        ([s("pyhpa_autoscaler_sync_errors_total", "0+1x40", reason="FailedGetScale", **WEB),
          s("pyhpa_autoscaler_sync_errors_total", "0+1x40", reason="FailedGetResourceMetric", **API),
          s("pyhpa_autoscaler_sync_errors_total", "3x40", reason="FailedRescale", **API)],
         "25m", [dict(WEB, reason="FailedGetScale")]),
    ],
    "PyhpaSyncLagging": [
        # web's last sync stays at t=0 with a 15 s period; api is synced every minute with a 60 s period
        ([s("pyhpa_autoscaler_last_sync_timestamp_seconds", "0x20", **WEB),
          s("pyhpa_autoscaler_sync_period_seconds", "15x20", **WEB),
          s("pyhpa_autoscaler_last_sync_timestamp_seconds", "0+60x20", **API),
          s("pyhpa_autoscaler_sync_period_seconds", "60x20", **API)],
         "10m", [WEB]),
    ],
    "PyhpaNoShardMemberAlive": [
        ([s("pyhpa_shard_members", "2x20", instance="a"), s("pyhpa_shard_members", "2x20", instance="b")],
         "10m", []),
        ([s("pyhpa_shard_members", "0x20", instance="a")], "10m", [{}]),  # a replica that sees no live Lease
        ([s("pyhpa_shard_autoscalers", "0x20", instance="a")], "10m", [{}]),  # no replica reports at all
    ],
    "PyhpaAutoscalerPausedLong": [
        ([s("pyhpa_autoscaler_paused", "1x1500", **WEB), s("pyhpa_autoscaler_paused", "0x1500", **API)],
         "1445m", [WEB]),
        ([s("pyhpa_autoscaler_paused", "1x1500", **WEB)], "600m", []),
    ],
}


def _rules() -> dict[str, dict]:
    groups = yaml.safe_load(RULES.read_text())["groups"]
    return {r["alert"]: r for g in groups for r in g["rules"] if "alert" in r}


def _render(template: str, labels: dict) -> str:
    return re.sub(r"\{\{\s*\$labels\.(\w+)\s*\}\}", lambda m: labels.get(m.group(1), ""), template)


def _test_file(tmp_path: Path) -> Path:
    rules = _rules()
    tests = []
    for alert, cases in CASES.items():
        rule = rules[alert]
        for series, at, firing in cases:
            expected = [{"exp_labels": dict(labels, **rule.get("labels", {})),
                         "exp_annotations": {k: _render(v, labels) for k, v in rule.get("annotations", {}).items()}}
                        for labels in firing]
            tests.append({"interval": "1m", "input_series": series,
                          "alert_rule_test": [{"eval_time": at, "alertname": alert, "exp_alerts": expected}]})
    path = tmp_path / "alerts_test.yaml"
    path.write_text(yaml.safe_dump({"rule_files": [str(RULES)], "evaluation_interval": "1m", "tests": tests},
                                   sort_keys=False))
    return path


def test_every_alert_has_a_firing_and_a_quiet_case():
    assert set(CASES) == set(_rules())
    for alert, cases in CASES.items():
        assert any(firing for _, _, firing in cases), alert
        # not firing: a case that expects nothing, or a series of another autoscaler that stays quiet
        assert any(not firing or len({s["series"].split("{")[1] for s in series}) > 1 for series, _, firing in cases), alert


@needs_promtool
def test_promtool_check_rules():
    out = subprocess.run([PROMTOOL, "check", "rules", str(RULES)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"SUCCESS: {len(_rules())} rules found" in out.stdout


@needs_promtool
def test_promtool_test_rules(tmp_path):
    out = subprocess.run([PROMTOOL, "test", "rules", str(_test_file(tmp_path))], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "SUCCESS" in out.stdout + out.stderr


@needs_promtool
def test_promtool_test_rules_fails_when_an_expectation_is_wrong(tmp_path):
    """The harness can fail: expecting api to fire at max replicas (it is at 4 of 10) is refused."""
    saved = CASES["PyhpaAutoscalerAtMaxReplicas"][0]
    try:
        CASES["PyhpaAutoscalerAtMaxReplicas"][0] = (saved[0], saved[1], [WEB, API])
        path = _test_file(tmp_path)
    finally:
        CASES["PyhpaAutoscalerAtMaxReplicas"][0] = saved
    out = subprocess.run([PROMTOOL, "test", "rules", str(path)], capture_output=True, text=True, timeout=300)
    assert out.returncode != 0
