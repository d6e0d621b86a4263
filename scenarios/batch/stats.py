"""The batch's arithmetic: fractions with Wilson intervals, the model's verdicts against the wire's
(share of agreement, Cohen's kappa), and a prediction's error as quantiles.

Cohen's kappa: with ``p_o`` the share of scenarios where the two verdicts
agree and ``p_e`` the share they would agree by chance (the sum over outcomes
of the product of the two raters' shares of it), ``κ = (p_o − p_e) / (1 − p_e)``:
1 when they always agree, 0 when no more often than chance, negative when less.
When both always say the same one outcome, ``p_e = 1`` and κ is undefined (NaN).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from controller.theory.tally import OUTCOMES, wilson_interval


def fractions(verdicts: Sequence[str]) -> dict[str, dict]:
    """Per outcome (helps / neutral / hurts): ``count``, ``fraction`` and its 95 % Wilson ``ci95``
    among ``verdicts`` (NaN when there are none)."""
    n = len(verdicts)
    out = {}
    for outcome in OUTCOMES:
        k = sum(v == outcome for v in verdicts)
        out[outcome] = {"count": k, "n": n, "fraction": k / n if n else math.nan,
                        "ci95": list(wilson_interval(k, n))}
    return out


def agreement_table(pairs: Sequence[tuple[str, str]]) -> list[list[int]]:
    """The 3 × 3 counts of ``(model, wire)`` verdicts: row the model's outcome, column the wire's
    (in the order of ``OUTCOMES``)."""
    index = {o: i for i, o in enumerate(OUTCOMES)}
    table = [[0] * len(OUTCOMES) for _ in OUTCOMES]
    for model, wire in pairs:
        table[index[model]][index[wire]] += 1
    return table


def share_of_agreement(table: Sequence[Sequence[int]]) -> float:
    """The diagonal over the whole (NaN for an empty table)."""
    n = sum(map(sum, table))
    return sum(table[i][i] for i in range(len(table))) / n if n else math.nan


def cohen_kappa(table: Sequence[Sequence[int]]) -> float:
    """Cohen's kappa of a square table of counts (module docstring); NaN when empty or undefined."""
    n = sum(map(sum, table))
    if not n:
        return math.nan
    observed = share_of_agreement(table)
    rows = [sum(row) / n for row in table]
    cols = [sum(row[j] for row in table) / n for j in range(len(table))]
    chance = sum(r * c for r, c in zip(rows, cols, strict=True))
    return math.nan if chance >= 1 else (observed - chance) / (1 - chance)


def relative_errors(measured: Sequence[float], predicted: Sequence[float]) -> np.ndarray:
    """``|measured − predicted| / measured`` of every pair where both are finite numbers (and measured > 0)."""
    m, p = np.asarray(measured, dtype=float), np.asarray(predicted, dtype=float)
    keep = np.isfinite(m) & np.isfinite(p) & (m > 0)
    return np.abs(m[keep] - p[keep]) / m[keep]


def error_quantiles(errors: np.ndarray) -> dict:
    """``n``, the ``median`` and the ``p90`` of relative errors (NaN without any)."""
    if not len(errors):
        return {"n": 0, "median": math.nan, "p90": math.nan}
    return {"n": int(len(errors)), "median": float(np.quantile(errors, 0.5)), "p90": float(np.quantile(errors, 0.9))}
