"""Speed of the forecaster and of a simulation with prediction on.

``forecast_fit_ms``: one fit (period detection, model selection on the held-out day, final
refit) on 7 days of 1-minute history (10,080 points) of the NASA 1995 trace shipped in
``benchmarks/data/`` (the median of 20 fits, on one core), and ``forecast_fit_events_ms`` the same on
the Crane ``input14`` series (8-14 October 2021), whose events at fixed clock minutes add the event
candidates. Target: <= 100 ms.

``simulated_seconds_per_wall_second``: ``pyhpa simulate`` of a HorizontalAutoscaler with
``prediction: {}`` and ``saturation: {}`` (CPU 70 %, 1-CPU pods, ``examples/simulate/ahead/``) over one
week of NASA (1995-07-08 to 07-15, the week before as history), i.e. the simulation plus a refit every
hour, a forecast and the saturation source every sync. Target: >= 50,000.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pyhpa.forecast import fit  # noqa: E402
from pyhpa.simulate import Settings, run_simulation  # noqa: E402
from pyhpa.simulate.trace import load_trace  # noqa: E402

DATA = ROOT / "benchmarks" / "data"
NASA = DATA / "nasa_http_1995-07_per_minute.csv.gz"
CRANE14 = DATA / "crane_input14_1min.csv.gz"


def fit_ms(path: Path = NASA, column: str = "requests_per_second", start: str = "1995-07-01",
           end: str = "1995-07-08") -> float:
    tr = load_trace(path, column, start=start, end=end)
    t, v = tr.times, tr.values[column] * 30 * 50  # millicores at 50 m per request, x30 load
    assert t.size == 10080, t.size
    now = float(t[-1]) + 60.0
    times = []
    for _ in range(20):
        t0 = time.perf_counter()
        f = fit(t, v, now=now)
        times.append((time.perf_counter() - t0) * 1000)
    print(f"fit: {f.reason}, periods {f.periods}, model {f.model.name if f.model else None}, "
          f"{f.candidates} candidates, held-out WAPE {f.score.wape:.3f}" if f.score else f"fit: {f.reason}")
    return statistics.median(times)


def main() -> None:
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    print(f"forecast_fit_ms={fit_ms():.1f}")
    print(f"forecast_fit_events_ms={fit_ms(CRANE14, 'metric_value', '2021-10-08T00:00:00Z', '2021-10-15T00:00:00Z'):.1f}")
    print(f"simulated_seconds_per_wall_second={simulated_speed():.0f}")


def simulated_speed() -> float:
    """A week of NASA (x100) through a HorizontalAutoscaler with ``prediction: {}`` and ``saturation: {}``
    (history: the week before)."""
    here = ROOT / "benchmarks"
    t0 = time.perf_counter()
    sim = run_simulation([ROOT / "examples" / "simulate" / "ahead" / "autoscaler.yaml"],
                         here / "proactive" / "deployment.yaml", NASA, "requests_per_second",
                         profile=here / "proactive" / "profile.yaml", start="1995-07-08", end="1995-07-15",
                         load_scale=100.0, settings=Settings())
    wall = time.perf_counter() - t0
    s = sim.runs[0].summary
    p = s["prediction"]
    print(f"simulated {s['simulated_seconds']:.0f} s ({s['syncs']} syncs) with prediction and saturation on: "
          f"{sum(p['syncs_by_reason'].values())} forecasts, reasons {p['syncs_by_reason']}, "
          f"saturation {s['saturation']['syncs_by_reason']}, "
          f"wall {wall:.2f} s (including parsing the inputs)")
    return s["simulated_seconds"] / wall


if __name__ == "__main__":
    main()
