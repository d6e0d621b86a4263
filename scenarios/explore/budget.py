"""How much model work one answer of the explorer may take, and the horizon that keeps it there.

``plan`` simulates every policy, and the random-offsets baseline's draws,
over a horizon long enough for the jobs' phases to cycle
(``fluid.default_horizon_ms``: up to 400 periods of the longest job). The fluid
model's cost grows with the bursts it simulates: measured on the project's
2-core machine (2026-12-06), about 12 to 20 µs a burst, and for ``mltcp`` about
14 µs for every 1-ms step while two bursts share the link. An answer may
simulate :data:`MAX_BURSTS` bursts (under 0.1 s); where the default horizon
needs more, the horizon is cut to fit and the page says so, with the ``plan``
command that gives the same numbers. Below :data:`MIN_HORIZON_PERIODS` of the
longest period the mean would say little: the change is refused in words.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from controller.theory import fluid
from controller.theory.policies import PROGRESS_GAIN, get_policy

MAX_BURSTS = 4000
MIN_HORIZON_PERIODS = 10
STEPPED_SHARE = 0.5  # of a stepping policy's time, the share with two bursts on the link (a generous guess)


@dataclass(frozen=True)
class Budget:
    """The horizon an answer uses (``horizon_ms``), ``plan``'s own (``default_ms``), and, if the change is
    refused, why (``refused``)."""

    horizon_ms: float
    default_ms: float
    bursts: float  # what the answer simulates, in bursts (a stepping policy's steps counted as bursts)
    refused: str | None = None

    @property
    def cut(self) -> bool:
        return self.horizon_ms < self.default_ms


def bursts(periods_ms: Sequence[float], horizon_ms: float, runs: int, stepped_runs: int) -> float:
    """The bursts ``runs`` simulations of the jobs simulate over the warm-up and ``horizon_ms``, and the
    steps of ``stepped_runs`` of them that step while bursts share the link (``fluid.MLTCP_STEP_MS``)."""
    span_ms = fluid.WARMUP_ITERATIONS * max(periods_ms) + horizon_ms
    return runs * sum(span_ms / p for p in periods_ms) + stepped_runs * STEPPED_SHARE * span_ms / fluid.MLTCP_STEP_MS


def budget(jobs: Sequence[fluid.FluidJob], policies: Sequence[str], random_draws: int,
           sharing: str = "fair", max_bursts: float = MAX_BURSTS) -> Budget:
    """The longest horizon up to ``plan``'s default that keeps the answer within ``max_bursts``."""
    periods = [j.period_ms for j in jobs]
    simulated = tuple(dict.fromkeys(("none", *policies)))
    stepped = sum(get_policy(p).link_sharing(sharing) in PROGRESS_GAIN for p in simulated)
    stepped += random_draws if sharing in PROGRESS_GAIN else 0
    runs = len(simulated) + random_draws
    default_ms = fluid.default_horizon_ms(jobs)
    if bursts(periods, default_ms, runs, stepped) <= max_bursts:
        return Budget(default_ms, default_ms, bursts(periods, default_ms, runs, stepped))
    per_ms = bursts(periods, 1.0, runs, stepped) - bursts(periods, 0.0, runs, stepped)
    fits_ms = (max_bursts - bursts(periods, 0.0, runs, stepped)) / per_ms
    floor_ms = 1000.0 * math.ceil(MIN_HORIZON_PERIODS * max(periods) / 1000)  # whole seconds: `plan --horizon-s`
    if fits_ms < floor_ms:
        need = bursts(periods, floor_ms, runs, stepped)
        return Budget(floor_ms, default_ms, need, refused=(
            f"refused: even {MIN_HORIZON_PERIODS} periods of the longest job ({floor_ms / 1000:g} s) would "
            f"simulate about {need:,.0f} bursts over {len(simulated)} policies and {random_draws} random "
            f"starts, more than the {max_bursts:,} an answer may take; show fewer policies (mltcp steps "
            "every ms), or bring the periods closer together, or run `shiftbed plan` on the saved scenario"))
    horizon_ms = max(floor_ms, 1000.0 * math.floor(fits_ms / 1000))
    return Budget(horizon_ms, default_ms, bursts(periods, horizon_ms, runs, stepped))
