"""Build pyhpa's Grafana dashboard and the Prometheus Operator's PrometheusRule (docs/operations.md).

    python deploy/monitoring/build.py           # write deploy/monitoring/dashboard.json and the PrometheusRule
    python deploy/monitoring/build.py --check   # exit 1 when a committed file differs from what this builds

The dashboard is built in code with grafana-foundation-sdk (``pip install grafana-foundation-sdk``, in the
``test`` extra); every query is in ``QUERIES`` by panel, and ``tests/test_operations_prometheus.py`` asks a real
Prometheus that scraped ``pyhpa run`` each of them. The PrometheusRule of the overlay
``deploy/overlays/with-prometheus-operator`` wraps the groups of ``deploy/monitoring/alerts.yaml`` unchanged. The Helm
chart ``deploy/helm/pyhpa`` holds copies of both files in its ``files/`` (a chart reads no file outside its folder):
this script writes them too.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import yaml
from grafana_foundation_sdk.builders import dashboard, prometheus, statetimeline, timeseries
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models.dashboard import DataSourceRef

HERE = Path(__file__).resolve().parent
DASHBOARD = HERE / "dashboard.json"
ALERTS = HERE / "alerts.yaml"
RULE = HERE.parent / "overlays" / "with-prometheus-operator" / "prometheusrule.yaml"
CHART_FILES = HERE.parent / "helm" / "pyhpa" / "files"  # the chart's copies of dashboard.json and alerts.yaml
NAMESPACE = "pyhpa-system"

SEL = 'namespace=~"$namespace",name=~"$name"'
WHO = "{{namespace}}/{{name}}"
#: panel title -> (unit, kind, [(PromQL, legend)]); kind "ts" a time series, "state" a state timeline
QUERIES: dict[str, tuple[str, str, list[tuple[str, str]]]] = {
    "Replicas against bounds": ("short", "ts", [
        (f"pyhpa_autoscaler_current_replicas{{{SEL}}}", f"{WHO} current"),
        (f"pyhpa_autoscaler_desired_replicas{{{SEL}}}", f"{WHO} desired"),
        (f"pyhpa_autoscaler_min_replicas{{{SEL}}}", f"{WHO} min (effective)"),
        (f"pyhpa_autoscaler_max_replicas{{{SEL}}}", f"{WHO} max (effective)"),
    ]),
    "Metric against target": ("short", "ts", [
        (f"pyhpa_autoscaler_metric_value{{{SEL}}}", f"{WHO} {{{{metric}}}}"),
        (f"pyhpa_autoscaler_metric_target{{{SEL}}}", f"{WHO} {{{{metric}}}} target"),
    ]),
    "Decided by": ("short", "state", [
        (f"pyhpa_autoscaler_decided_by_info{{{SEL}}}", f"{WHO} {{{{decided_by}}}}"),
    ]),
    "Forecast against actual": ("short", "ts", [
        (f"pyhpa_autoscaler_prediction_forecast{{{SEL}}}", f"{WHO} {{{{metric}}}} forecast"),
        (f"pyhpa_autoscaler_prediction_observed{{{SEL}}}", f"{WHO} {{{{metric}}}} actual"),
    ]),
    "Forecast error (WAPE)": ("percentunit", "ts", [
        (f"pyhpa_autoscaler_prediction_wape_ratio{{{SEL}}}", WHO),
    ]),
    "Fallback, pause, prediction and saturation": ("short", "state", [
        (f"pyhpa_autoscaler_fallback_active{{{SEL}}}", f"{WHO} fallback"),
        (f"pyhpa_autoscaler_paused{{{SEL}}}", f"{WHO} paused"),
        (f"pyhpa_autoscaler_predicting{{{SEL}}}", f"{WHO} predicting"),
        (f"pyhpa_autoscaler_saturated{{{SEL}}}", f"{WHO} saturated"),
    ]),
    "Sync lag": ("s", "ts", [
        ("histogram_quantile(0.99, sum by (le, instance) (rate(pyhpa_sync_lag_seconds_bucket[5m])))",
         "{{instance}} p99 lag"),
        (f"time() - pyhpa_autoscaler_last_sync_timestamp_seconds{{{SEL}}}", f"{WHO} since last sync"),
    ]),
    "Sync errors": ("short", "ts", [
        (f"sum by (namespace, name, reason) (increase(pyhpa_autoscaler_sync_errors_total{{{SEL}}}[5m]))",
         f"{WHO} {{{{reason}}}}"),
        ("sum by (instance, error) (rate(horizontal_pod_autoscaler_controller_reconciliations_total[5m]))",
         "{{instance}} syncs/s error={{error}}"),
    ]),
    "Shard membership": ("short", "ts", [
        ("pyhpa_shard_members", "{{instance}} live members"),
        ("pyhpa_shard_autoscalers", "{{instance}} autoscalers in its share"),
    ]),
}
#: panel title -> its description
DESCRIPTIONS = {
    "Replicas against bounds": "The target's replicas, the decision, and the effective minReplicas/maxReplicas "
                               "(schedule windows included).",
    "Metric against target": "Each spec.metrics entry: percent of request for Utilization targets, else its unit.",
    "Decided by": "The source that set the replica count at each sync (Metric, Schedule, Prediction, Fallback, "
                  "Pause, Stabilization, Policy, Spec).",
    "Forecast against actual": "The prediction's forecast of the workload total over the lead window, and the "
                               "total observed at each sync.",
    "Forecast error (WAPE)": "Recent weighted absolute percentage error of the forecasts.",
    "Fallback, pause, prediction and saturation": "1 while the state holds.",
    "Sync lag": "p99 of the delay from due to start of a sync per replica; seconds since each autoscaler's last "
                "sync.",
    "Sync errors": "Sync errors by autoscaler and reason; syncs per second by error label per replica.",
    "Shard membership": "Live replicas each replica sees (--shards auto) and the autoscalers in its share.",
}
DATASOURCE = DataSourceRef(type_val="prometheus", uid="${datasource}")


def _panel(title: str, x: int, y: int):
    unit, kind, queries = QUERIES[title]
    panel = statetimeline.Panel() if kind == "state" else timeseries.Panel()
    panel = panel.title(title).description(DESCRIPTIONS[title]).datasource(DATASOURCE).unit(unit)
    panel = panel.grid_pos(_grid(x, y))
    for i, (expr, legend) in enumerate(queries):
        panel = panel.with_target(prometheus.Dataquery().expr(expr).legend_format(legend).ref_id(chr(65 + i))
                                  .datasource(DATASOURCE))
    return panel


def _grid(x: int, y: int):
    from grafana_foundation_sdk.models.dashboard import GridPos
    return GridPos(h=8, w=12, x=x, y=y)


def _variable(name: str, query: str, label: str):
    return (dashboard.QueryVariable(name).label(label).query(query).datasource(DATASOURCE).multi(True)
            .include_all(True).all_value(".*").refresh(2))  # refresh on time range change


def build_dashboard() -> dict:
    """The dashboard as JSON-ready dict (Grafana's dashboard model)."""
    d = (dashboard.Dashboard("pyhpa autoscalers").uid("pyhpa-autoscalers").tags(["pyhpa", "autoscaling"])
         .description("What each autoscaler pyhpa runs is doing, and how the controller keeps up "
                      "(docs/operations.md).")
         .refresh("30s").time("now-3h", "now").timezone("browser")
         .with_variable(dashboard.DatasourceVariable("datasource").label("Prometheus").type("prometheus"))
         .with_variable(_variable("namespace", "label_values(pyhpa_autoscaler_desired_replicas, namespace)",
                                  "Namespace"))
         .with_variable(_variable("name", 'label_values(pyhpa_autoscaler_desired_replicas{namespace=~"$namespace"}'
                                          ', name)', "Autoscaler")))
    titles = list(QUERIES)
    rows = {"Autoscalers": titles[:6], "Controller": titles[6:]}
    y, ids = 0, iter(range(1, 100))
    for row, members in rows.items():
        d = d.with_row(dashboard.Row(row).id(next(ids)).grid_pos(_row_pos(y)))
        y += 1
        for i, title in enumerate(members):
            d = d.with_panel(_panel(title, 12 * (i % 2), y + 8 * (i // 2)).id(next(ids)))
        y += 8 * ((len(members) + 1) // 2)
    return json.loads(JSONEncoder(sort_keys=True, indent=2).encode(d.build()))


def _row_pos(y: int):
    from grafana_foundation_sdk.models.dashboard import GridPos
    return GridPos(h=1, w=24, x=0, y=y)


def dashboard_queries(model: dict) -> list[str]:
    """Every PromQL expression of the dashboard's panels (``tests/test_operations_prometheus.py`` runs them)."""
    out = []
    for panel in model.get("panels", []):
        for target in panel.get("targets", []) or []:
            if target.get("expr"):
                out.append(target["expr"])
    return out


def build_prometheus_rule() -> dict:
    """The PrometheusRule of the with-prometheus-operator overlay: the groups of alerts.yaml, unchanged."""
    groups = yaml.safe_load(ALERTS.read_text())["groups"]
    return {"apiVersion": "monitoring.coreos.com/v1", "kind": "PrometheusRule",
            "metadata": {"name": "pyhpa", "namespace": NAMESPACE, "labels": {"app.kubernetes.io/name": "pyhpa"}},
            "spec": {"groups": groups}}


def texts() -> dict[Path, str]:
    """The files this script writes, with their content."""
    rule = ("# Generated by deploy/monitoring/build.py from deploy/monitoring/alerts.yaml; do not edit.\n"
            + yaml.safe_dump(build_prometheus_rule(), sort_keys=False, width=120))
    board = json.dumps(build_dashboard(), indent=2, sort_keys=True) + "\n"
    return {DASHBOARD: board, RULE: rule, CHART_FILES / DASHBOARD.name: board, CHART_FILES / ALERTS.name: ALERTS.read_text()}


def main(argv: list[str]) -> int:
    check = "--check" in argv
    stale = []
    for path, text in texts().items():
        if check:
            if not path.exists() or path.read_text() != text:
                stale.append(path)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        print(f"wrote {path.relative_to(HERE.parent.parent)}")
    for path in stale:
        print(f"error: {path.relative_to(HERE.parent.parent)} differs from what deploy/monitoring/build.py builds")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
