"""The batch's arithmetic (scenarios/batch/stats.py) against textbook figures worked by hand."""

import math

import numpy as np
import pytest

from scenarios.batch import stats


def test_cohen_kappa_of_the_textbook_example():
    """Wikipedia's "Cohen's kappa" example: 50 proposals, both yes 20, A yes B no 5, A no B yes 10, both no
    15: p_o = 35/50 = 0.7; p_e = 0.5·0.6 + 0.5·0.4 = 0.5; kappa = (0.7 - 0.5) / (1 - 0.5) = 0.4."""
    table = [[20, 5], [10, 15]]
    assert stats.share_of_agreement(table) == pytest.approx(0.7)
    assert stats.cohen_kappa(table) == pytest.approx(0.4)


def test_cohen_kappa_three_outcomes_worked_by_hand():
    """Rows 10: [6, 3, 1], 20: [2, 15, 3], 10: [0, 2, 8]; columns 8, 20, 12 of 40. p_o = 29/40 = 0.725;
    p_e = (10·8 + 20·20 + 10·12) / 1600 = 0.375; kappa = 0.35 / 0.625 = 0.56."""
    table = [[6, 3, 1], [2, 15, 3], [0, 2, 8]]
    assert stats.cohen_kappa(table) == pytest.approx(0.56)


def test_kappa_is_one_for_perfect_agreement_negative_below_chance_and_undefined_for_one_outcome():
    assert stats.cohen_kappa([[3, 0, 0], [0, 4, 0], [0, 0, 2]]) == pytest.approx(1.0)
    assert stats.cohen_kappa([[0, 5], [5, 0]]) == pytest.approx(-1.0)
    assert math.isnan(stats.cohen_kappa([[4, 0], [0, 0]]))  # both raters always say the same one outcome
    assert math.isnan(stats.cohen_kappa([[0, 0], [0, 0]]))


def test_agreement_table_counts_model_rows_against_wire_columns():
    pairs = [("helps", "helps"), ("helps", "neutral"), ("neutral", "neutral"), ("hurts", "hurts"),
             ("hurts", "hurts"), ("neutral", "helps")]
    assert stats.agreement_table(pairs) == [[1, 1, 0], [1, 1, 0], [0, 0, 2]]


def test_fractions_carry_the_wilson_interval():
    """3 of 10: Wilson's 95 % interval is [0.1078, 0.6032] (z = 1.96; Newcombe 1998, table I style)."""
    out = stats.fractions(["helps"] * 3 + ["neutral"] * 5 + ["hurts"] * 2)
    assert out["helps"]["count"] == 3 and out["helps"]["fraction"] == pytest.approx(0.3)
    low, high = out["helps"]["ci95"]
    assert low == pytest.approx(0.1078, abs=1e-4) and high == pytest.approx(0.6032, abs=1e-4)
    assert sum(out[o]["fraction"] for o in ("helps", "neutral", "hurts")) == pytest.approx(1.0)
    empty = stats.fractions([])
    assert empty["helps"]["n"] == 0 and math.isnan(empty["helps"]["fraction"])


def test_relative_errors_and_their_quantiles():
    """|m - p| / m of 100 vs 90, 200 vs 220, 50 vs 50, and two pairs left out (a NaN, a zero measurement):
    0.1, 0.1, 0; median 0.1, p90 0.1 (numpy's linear interpolation)."""
    errors = stats.relative_errors([100, 200, 50, math.nan, 0], [90, 220, 50, 10, 10])
    assert errors == pytest.approx([0.1, 0.1, 0.0])
    q = stats.error_quantiles(errors)
    assert q == {"n": 3, "median": pytest.approx(0.1), "p90": pytest.approx(0.1)}
    ten = stats.error_quantiles(np.arange(1, 11) / 100)  # 0.01 .. 0.10: median 0.055, p90 0.091
    assert ten["median"] == pytest.approx(0.055) and ten["p90"] == pytest.approx(0.091)
    assert stats.error_quantiles(np.array([]))["n"] == 0
