"""The HorizontalAutoscaler API is defined once (``pyhpa.api.v1alpha1``): the committed CRD is the one generated from
it, its limits and defaults are the core's, the readers take the fields it declares, and tune writes through it."""

from __future__ import annotations

import math
from pathlib import Path

import msgspec
import pytest
import yaml

from pyhpa.adapters.autoscaler import SETTING_FIELDS, WINDOW_FIELDS
from pyhpa.adapters.errors import InputError
from pyhpa.adapters.parse import source_section
from pyhpa.adapters.prediction import prediction_from_dict
from pyhpa.api import v1alpha1 as api
from pyhpa.api.crd import crd, crd_text, openapi
from pyhpa.api.sections import SOURCE_SECTIONS
from pyhpa.core import PredictionSpec
from pyhpa.core.saturation import MAX_PINNED_PERCENT, MIN_DEMAND_FACTOR, MIN_PINNED_PERCENT, SaturationSpec

ROOT = Path(__file__).resolve().parent.parent
COPIES = (ROOT / "deploy" / "crd.yaml", ROOT / "deploy" / "base" / "crd.yaml",
          ROOT / "deploy" / "helm" / "pyhpa" / "crds" / "horizontalautoscalers.yaml",
          ROOT / "pyhpa" / "data" / "deploy" / "crd.yaml")


@pytest.mark.parametrize("path", COPIES, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_committed_crd_is_the_generated_one(path):
    """Run ``python deploy/generate_crd.py`` after changing pyhpa.api: this fails until the files are regenerated."""
    assert path.read_text() == crd_text(), f"{path.relative_to(ROOT)} differs: run python deploy/generate_crd.py"


def _schema() -> dict:
    return crd()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]


def test_limits_and_defaults_are_the_cores():
    spec = _schema()["properties"]["spec"]["properties"]
    sat = spec["saturation"]["properties"]
    assert (sat["pinnedPercent"]["minimum"], sat["pinnedPercent"]["maximum"]) == (MIN_PINNED_PERCENT, MAX_PINNED_PERCENT)
    assert sat["demandFactor"]["minimum"] == MIN_DEMAND_FACTOR and sat["demandFactor"]["exclusiveMinimum"] is True
    assert sat["pinnedPercent"]["default"] == SaturationSpec().pinned_percent and "default" not in sat["metric"]
    pred = spec["prediction"]["properties"]
    assert {k: pred[k].get("default") for k in ("historySeconds", "leadSeconds", "quantile", "mode")} == {
        "historySeconds": PredictionSpec().history_seconds, "leadSeconds": PredictionSpec().lead_seconds,
        "quantile": PredictionSpec().quantile, "mode": PredictionSpec().mode}
    assert pred["quantile"]["maximum"] == 1 and pred["quantile"]["exclusiveMaximum"] is True
    assert spec["fallback"]["properties"]["behavior"]["enum"] == ["static", "currentReplicas",
                                                                   "currentReplicasIfHigher", "currentReplicasIfLower"]
    assert spec["schedules"]["maxItems"] == api.MAX_SCHEDULES
    assert spec["schedules"]["items"]["x-kubernetes-validations"] == api.WINDOW_RULES


def test_the_status_declares_only_what_is_written():
    prediction = _schema()["properties"]["status"]["properties"]["prediction"]["properties"]
    assert "forecastTime" not in prediction  # never written: gone with the hand-built schema
    assert set(prediction) == {f.encode_name for f in msgspec.structs.fields(api.PredictionSection)}


def test_the_readers_take_the_apis_fields():
    assert SETTING_FIELDS == ("syncPeriodSeconds", "tolerance", "cpuInitializationPeriodSeconds",
                              "initialReadinessDelaySeconds")
    assert WINDOW_FIELDS == tuple(openapi(api.ScheduleWindow)["properties"])
    assert prediction_from_dict({}) == PredictionSpec()
    assert source_section("saturation", {"pinnedPercent": 90.0}, None, "spec.saturation") == SaturationSpec(pinned_percent=90)
    with pytest.raises(InputError) as err:
        source_section("saturation", {"panic": True}, None, "spec.saturation")
    assert err.value.field == "spec.saturation.panic" and "known: metric, pinnedPercent, demandFactor, mode" in err.value.message
    with pytest.raises(InputError) as err:
        prediction_from_dict({"leadSeconds": "5m"})
    assert err.value.field == "spec.prediction.leadSeconds" and err.value.message == "must be an integer, got '5m'"


def test_tune_writes_through_the_api():
    from pyhpa.tune.space import Setting, Window, defaults

    assert (defaults("prediction"), defaults("saturation")) == (
        {"quantile": PredictionSpec().quantile, "lead_seconds": PredictionSpec().lead_seconds},
        {"demand_factor": SaturationSpec().demand_factor})
    s = Setting(target=70, min_replicas=1, max_replicas=9).with_source("prediction").with_source(
        "saturation", demand_factor=2.567)
    assert [source.manifest() for source in s.sources] == [{"leadSeconds": 300, "quantile": 0.9}, {"demandFactor": 2.57}]
    item = Window("morning", "0 8 * * 1-5", 3600, "UTC", 4).manifest()
    assert item == {"name": "morning", "start": "0 8 * * 1-5", "durationSeconds": 3600, "timeZone": "UTC",
                    "minReplicas": 4}
    assert yaml.safe_load(yaml.safe_dump(item)) == item


def test_every_source_section_is_declared_whole():
    """What reads and shows a source section works from its ``SourceSection`` and its core source alone: the field
    is the source's, the HPA's, its status's and the API's; a section simulate shows by its declarations has an
    ``Explained`` source and a status that says when it is active."""
    import dataclasses

    from pyhpa.core import HPA, HPAStatus
    from pyhpa.core.reconcile import SOURCES
    from pyhpa.simulate.sections import SHOWN

    hpa_fields = {f.name for f in dataclasses.fields(HPA)}
    status_fields = {f.name for f in dataclasses.fields(HPAStatus)}
    for name, section in SOURCE_SECTIONS.items():
        assert section.field == name and section.source in SOURCES
        assert name in hpa_fields and name in status_fields
        assert name in {f.name for f in api.EXTENSION_FIELDS}
        assert name in {f.name for f in msgspec.structs.fields(api.StatusExtensions)}
        assert {f.name for f in msgspec.structs.fields(section.spec)} == {
            f.name for f in dataclasses.fields(section.core_spec)}
    for name, shown in SHOWN.items():  # how simulate shows a section: declared there, on the API's sections
        section = SOURCE_SECTIONS[name]
        assert shown.section is section
        source = section.source
        assert source.active_words and source.never_active and shown.active_key
        spec = section.core_spec()
        assert source.summary(spec) and source.active_text(spec)
        assert set(shown.summary) <= {f.name for f in dataclasses.fields(section.core_spec)}
    gauges = [s.gauge[0] for s in SOURCE_SECTIONS.values() if s.gauge is not None]
    assert len(gauges) == len(set(gauges))


def test_what_tune_searches_is_declared_with_the_sections():
    """``TUNING`` (``pyhpa.tune.space``): each entry a source section, each field one of its struct's, searched within the API's limits
    (the struct's ``Meta``), the robust and lean values on searched fields; the Optuna parameters and candidates.csv
    columns are the field names: unique, and none a section's name."""
    from pyhpa.tune.space import TUNING

    names = [f.name for t in TUNING.values() for f in t.fields]
    assert len(set(names)) == len(names) and not set(names) & set(TUNING)
    for name, tuning in TUNING.items():
        struct = SOURCE_SECTIONS[name].spec
        schema = openapi(struct)["properties"]
        by_name = {f.name: f for f in msgspec.structs.fields(struct)}
        for f in tuning.fields:
            prop = schema[by_name[f.name].encode_name]  # OpenAPI v3.0: exclusiveMinimum/Maximum are booleans
            low, high = prop.get("minimum", -math.inf), prop.get("maximum", math.inf)
            assert (f.low > low if prop.get("exclusiveMinimum") else f.low >= low) and f.low < f.high
            assert f.high < high if prop.get("exclusiveMaximum") else f.high <= high
            assert f.integer == (prop["type"] == "integer")
        searched = {f.name for f in tuning.fields}
        assert tuning.robust.field in searched and set(tuning.lean or {}) <= searched
