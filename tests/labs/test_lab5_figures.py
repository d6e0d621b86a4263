"""Lab 5's model figures, derived here without shiftbed's theory code.

- The twin (periods 300 and 600 ms, bursts 100 and 150 ms): worked by hand in
  the sheet and simulated here exactly (rational arithmetic) by a small
  event simulation of two jobs sharing one link fairly, written apart from
  ``controller/theory/fluid.py``.
- The drifting pair (304 and 597 ms): the same simulation in floats over the
  horizon (lcm(304, 597) ms): `shift` (beta's first burst 100 ms after
  alpha's, as the grid schedule puts it) and `none` end within the sheet's
  tolerance of each other.
"""

from __future__ import annotations

import math
from fractions import Fraction

import labsheet
import pytest

LAB5 = labsheet.LABS / "lab5-map.md"


def promises() -> dict[str, labsheet.Expectation]:
    return {e.key: e for e in labsheet.parse(LAB5).expectations if e.key is not None}


def holds(expectation: labsheet.Expectation, value) -> None:
    """The promise is met by the derived value, rounded as ``plan --json`` rounds (4 decimals)."""
    text = f"{round(float(value), 4):.6f}".rstrip("0").rstrip(".")
    problem = expectation.check({expectation.key: text}, "")
    assert problem is None, f"{problem} (derived independently: {value})"


def two_jobs(jobs: list[tuple], offsets: list, horizon, warmup_bursts: int = 2) -> list:
    """Mean iteration time of each of two jobs that compute ``T - c`` then send a ``c`` burst; bursts
    on the link together get half of it each. ``offsets``: each job's first burst start. Works in
    whatever number type it is given (Fraction: exact). Means are over the burst ends after
    ``warmup_bursts`` up to ``horizon``."""
    n = len(jobs)
    ready = list(offsets)  # when the next burst starts (math.inf while sending)
    left = [0] * n  # burst left to send, ms at full rate
    ends: list[list] = [[] for _ in jobs]
    t = min(ready)
    while t < horizon:
        for i in range(n):
            if ready[i] == t:
                left[i], ready[i] = jobs[i][1], math.inf
        sending = [i for i in range(n) if left[i] > 0]
        share = Fraction(1, len(sending) or 1) if isinstance(t, Fraction) else 1 / max(1, len(sending))
        step = min([ready[i] - t for i in range(n) if ready[i] != math.inf]
                   + [left[i] / share for i in sending])
        for i in sending:
            left[i] -= step * share
        t += step
        for i in sending:
            if left[i] <= 1e-9:
                left[i] = 0
                ends[i].append(t)
                ready[i] = t + jobs[i][0] - jobs[i][1]
    return [(e[-1] - e[warmup_bursts]) / (len(e) - 1 - warmup_bursts) for e in ends]


def normalised(jobs, means) -> float:
    return sum(Fraction(T) / m if isinstance(m, Fraction) else T / m for (T, _), m in zip(jobs, means, strict=True)) / len(jobs)


def test_the_twin_is_worked_exactly():
    twin = [(Fraction(300), Fraction(100)), (Fraction(600), Fraction(150))]
    none = two_jobs(twin, [Fraction(0), Fraction(0)], Fraction(24000))
    shift = two_jobs(twin, [Fraction(0), Fraction(100)], Fraction(24000))
    assert none == [350, 700] and shift == [300, 600]
    p = promises()
    holds(p["twin.normalised_throughput.none"], normalised(twin, none))  # 6/7
    holds(p["twin.normalised_throughput.shift"], normalised(twin, shift))
    holds(p["twin.policies.shift.alpha.change_vs_none"], Fraction(350, 300) - 1)  # 1/6


def test_the_drifting_pair_gains_almost_nothing_from_its_shift():
    drift = [(304.0, 100.0), (597.0, 150.0)]
    horizon = float(math.lcm(304, 597))
    none = two_jobs(drift, [0.0, 0.0], horizon)
    shift = two_jobs(drift, [0.0, 100.0], horizon)
    p = promises()
    holds(p["drift.policies.shift.alpha.change_vs_none"], none[0] / shift[0] - 1)
    for key, means in (("drift.normalised_throughput.none", none), ("drift.normalised_throughput.shift", shift)):
        assert normalised(drift, means) == pytest.approx(float(p[key].expected), abs=0.002), key
