"""Two synthetic kinds of load on a real daily shape, for checking an autoscaler beyond the public traces.

The daily shape is the Crane production series ``input9`` (``benchmarks/data/``, Apache-2.0) smoothed by a
31-minute rolling median, with 3 % noise; on it (seeded, so every run writes the same files):

- ``clock.csv``: **spikes on the clock** — at :00 and :30 of the hours 00-15 UTC, in 85 % of the
  occurrences, the load jumps 1.5-2.5x for 2-6 minutes (cron jobs, batch schedules, bots posting on the
  hour);
- ``bursts.csv``: **bursts nothing could foresee** — 48 bursts of 2-3.5x for 5-40 minutes at random times
  over the 16 days (about 3 a day), reached within two minutes.

Columns ``timestamp,load``; 2021-10-08 to 2021-10-23, one row a minute. Use them like the Crane series
(history 8-14 October, simulated 15-22 October), e.g.::

    python benchmarks/synthetic_traces.py --out out/synthetic
    python benchmarks/proactive.py --csv out/synthetic/clock.csv --column load \\
        --start 2021-10-15T00:00:00Z --end 2021-10-23T00:00:00Z --load-scale 0.6

They are synthetic: never a figure of real traffic, only a check that a kind of load is handled.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

DATA = Path(__file__).resolve().parent / "data"


def daily_shape() -> tuple[pd.Series, np.ndarray]:
    """(timestamps, the smooth daily shape of Crane input9)."""
    d = pd.read_csv(DATA / "crane_input9_1min.csv.gz", parse_dates=["timestamp"])
    return d.timestamp, d.metric_value.rolling(31, center=True, min_periods=1).median().to_numpy()


def clock_spikes(t: pd.Series, base: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    v = base * (1 + 0.03 * rng.standard_normal(base.size))
    minute, hour, day = t.dt.minute.to_numpy(), t.dt.hour.to_numpy(), t.dt.day.to_numpy()
    for dd in np.unique(day):
        for h in range(16):
            for m0 in (0, 30):
                if rng.random() > 0.85:
                    continue
                width, height = rng.integers(2, 7), rng.uniform(1.5, 2.5)
                v[(day == dd) & (hour == h) & (minute >= m0) & (minute < m0 + width)] *= height
    return v


def bursts(base: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    v = base * (1 + 0.03 * rng.standard_normal(base.size))
    for _ in range(48):
        start, width, height = rng.integers(0, v.size - 60), rng.integers(5, 41), rng.uniform(2.0, 3.5)
        ramp = np.minimum(1.0, np.arange(width) / 2 + 0.5)
        v[start:start + width] *= 1 + (height - 1) * ramp
    return v


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("out/synthetic"), help="folder to write into")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    t, base = daily_shape()
    rng = np.random.default_rng(7)
    stamps = t.dt.strftime("%Y-%m-%dT%H:%M:%SZ")
    for name, values in (("clock", clock_spikes(t, base, rng)), ("bursts", bursts(base, rng))):
        path = args.out / f"{name}.csv"
        pd.DataFrame({"timestamp": stamps, "load": np.round(values, 3)}).to_csv(path, index=False)
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
