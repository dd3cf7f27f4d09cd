"""``pyhpa tune``: recommend an autoscaler from a workload's history by faithful replay.

An adapter, like the simulator it drives: every candidate setting is written as a manifest, read as
``pyhpa simulate --hpa`` reads it (``pyhpa.simulate.load_autoscaler``) and replayed through the same
simulated cluster and decision core (``pyhpa.simulate.replay``), so ``pyhpa simulate`` on the
recommended object gives the same figures. The search is Optuna's (TPE with the objective's limit as a
constraint), candidates run in worker processes when there are cores.

``prepare`` reads the inputs and splits the window into the part tuned on and the held-out part;
``search`` sees only the tuning part; ``check_held_out`` replays the best settings on the held-out
part; ``tune`` does all three. Results are ``TuneResult``; ``pyhpa.tune.report`` writes them.
"""

from .search import (
    HELD_OUT_SLACK,
    Evaluation,
    Figures,
    Objective,
    Prepared,
    TuneResult,
    check_held_out,
    prepare,
    search,
    tune,
)
from .space import Setting, TargetKind

__all__ = ["HELD_OUT_SLACK", "Evaluation", "Figures", "Objective", "Prepared", "Setting", "TargetKind", "TuneResult",
           "check_held_out", "prepare", "search", "tune"]
