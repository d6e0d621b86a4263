"""Counting outcomes instead of keeping them: gains classed helps / neutral / hurts, their mean and spread,
and the intervals the sweep and the map report (Wilson for fractions, Student's t for means).

A :class:`Tally` is a few numbers whatever it has counted, and two tallies merge into the one that would
have counted both (counts add; the mean and the sum of squared deviations merge by Chan et al.'s rule), so
a sweep can be cut into chunks counted anywhere and merged in any grouping.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

WILSON_Z95 = 1.959963984540054  # standard normal quantile at 0.975
OUTCOMES = ("helps", "neutral", "hurts")


@dataclass
class Tally:
    """Gains over ``none`` (or another baseline) at a threshold ``θ``: how many helped (> θ), hurt (< -θ) or
    neither, and the mean gain and its sum of squared deviations. Non-finite gains (a policy that could not
    schedule the combination) are not counted."""

    helps: int = 0
    neutral: int = 0
    hurts: int = 0
    mean: float = 0.0
    m2: float = 0.0

    @property
    def n(self) -> int:
        return self.helps + self.neutral + self.hurts

    def add(self, gain: float, threshold: float) -> None:
        if not math.isfinite(gain):
            return
        if gain > threshold:
            self.helps += 1
        elif gain < -threshold:
            self.hurts += 1
        else:
            self.neutral += 1
        delta = gain - self.mean
        self.mean += delta / self.n
        self.m2 += delta * (gain - self.mean)

    def merge(self, other: Tally) -> Tally:
        """The tally of both (neither is changed)."""
        n, m = self.n, other.n
        if not m:
            return Tally(self.helps, self.neutral, self.hurts, self.mean, self.m2)
        if not n:
            return Tally(other.helps, other.neutral, other.hurts, other.mean, other.m2)
        delta = other.mean - self.mean
        return Tally(self.helps + other.helps, self.neutral + other.neutral, self.hurts + other.hurts,
                     self.mean + delta * m / (n + m), self.m2 + other.m2 + delta * delta * n * m / (n + m))

    def two_sided(self) -> dict:
        """``helps_fraction``, ``neutral_fraction``, ``hurts_fraction`` and their 95 % Wilson ``ci95``."""
        n = self.n
        counts = {k: getattr(self, k) for k in OUTCOMES}
        out = {f"{k}_fraction": counts[k] / n if n else math.nan for k in OUTCOMES}
        out["ci95"] = {k: [round(x, 4) for x in wilson_interval(counts[k], n)] for k in OUTCOMES}
        return out

    def stats(self) -> dict:
        """The map's cell: ``n``, the fractions, their ``ci95``, and ``mean_gain`` with its 95 % t interval."""
        n = self.n
        if not n:
            return {"n": 0, "helps": math.nan, "neutral": math.nan, "hurts": math.nan,
                    "ci95": {k: [math.nan, math.nan] for k in OUTCOMES},
                    "mean_gain": math.nan, "mean_gain_ci95": [math.nan, math.nan]}
        sided = self.two_sided()
        sd = math.sqrt(self.m2 / (n - 1)) if n > 1 else 0.0
        mean, low, high = mean_interval(n, self.mean, sd)
        return {"n": n, **{k: sided[f"{k}_fraction"] for k in OUTCOMES}, "ci95": sided["ci95"],
                "mean_gain": mean, "mean_gain_ci95": [low, high]}


def tally_of_array(gains: np.ndarray, threshold: float) -> Tally:
    """One tally of an array of gains, counted at once (the mean and spread to rounding as :func:`tally_of`)."""
    finite = gains[np.isfinite(gains)]
    if not len(finite):
        return Tally()
    helps, hurts = int((finite > threshold).sum()), int((finite < -threshold).sum())
    mean = float(finite.mean())
    return Tally(helps, len(finite) - helps - hurts, hurts, mean, float(((finite - mean) ** 2).sum()))


def tally_of(gains: Sequence[float], threshold: float) -> Tally:
    """One tally of ``gains``."""
    t = Tally()
    for g in gains:
        t.add(g, threshold)
    return t


def wilson_interval(successes: int, trials: int, z: float = WILSON_Z95) -> tuple[float, float]:
    """Wilson score interval for a binomial fraction (sound at 0 and 1, unlike p ± z·se)."""
    if trials == 0:
        return (math.nan, math.nan)
    p, z2 = successes / trials, z * z
    centre = (p + z2 / (2 * trials)) / (1 + z2 / trials)
    half = z * math.sqrt(p * (1 - p) / trials + z2 / (4 * trials * trials)) / (1 + z2 / trials)
    return (max(0.0, centre - half), min(1.0, centre + half))


def wilson_half_width(p: float, trials: int, z: float = WILSON_Z95) -> float:
    """Half the width of the Wilson interval at fraction ``p`` over ``trials``."""
    z2 = z * z
    return z * math.sqrt(p * (1 - p) / trials + z2 / (4 * trials * trials)) / (1 + z2 / trials)


def mean_ci95(values: Sequence[float]) -> tuple[float, float, float]:
    """(mean, low, high): the mean and its 95 % Student-t interval (zero width for one value)."""
    n = len(values)
    mean = sum(values) / n
    if n < 2:
        return mean, mean, mean
    sd = math.sqrt(sum((x - mean) ** 2 for x in values) / (n - 1))
    return mean_interval(n, mean, sd)


def mean_interval(n: int, mean: float, sd: float) -> tuple[float, float, float]:
    """(mean, low, high) of ``n`` values with standard deviation ``sd``: the 95 % Student-t interval."""
    if n < 2:
        return mean, mean, mean
    half = student_t975(n - 1) * sd / math.sqrt(n)
    return mean, mean - half, mean + half


def student_t975(dof: float) -> float:
    """Student's t at 0.975 for ``dof`` degrees of freedom, rounded down to a whole number (the wider
    interval); beyond 30, the normal's 1.96."""
    whole = max(1, math.floor(dof))
    return _T975[whole - 1] if whole <= len(_T975) else 1.96


# Student's t at 0.975, 1..30 degrees of freedom (beyond: the normal's 1.96)
_T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
         2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042)
