"""The streamed sweep and map: per-cell tallies over chunks give what the reference's rows give, whatever
the chunking and the number of processes."""

import math
import random
from dataclasses import replace

import pytest

from controller.theory import fastfluid, mapping, mapstream, sweep, sweepstream
from controller.theory.tally import Tally, mean_ci95, tally_of, wilson_half_width


def settings(**kw):
    return {"seed": 3, "jobs": [2, 3], "samples": 8, "period_range": (100, 1000), "frac_range": (0.1, 0.5),
            "quanta": [1.0, 50.0], "zoo": False, "zoo_link_mbps": 1e4, "iterations": None, "horizon_ms": None,
            "realign_s": None, "threshold": 0.01, "policies": ["shift", "gate", "priority", "align"],
            "policy": "shift", **kw}


def same(a, b, path=""):
    """Equal summaries: the same keys and counts, floats to 1e-9 (means merge in another order)."""
    if isinstance(a, dict):
        assert set(a) == set(b), path
        for k in a:
            same(a[k], b[k], f"{path}/{k}")
    elif isinstance(a, list):
        assert len(a) == len(b), path
        for k, (x, y) in enumerate(zip(a, b, strict=True)):
            same(x, y, f"{path}[{k}]")
    elif isinstance(a, float):
        assert (math.isnan(a) and math.isnan(b)) or a == pytest.approx(b, abs=1e-9), (path, a, b)
    else:
        assert a == b, (path, a, b)


def test_streamed_sweep_summarises_as_the_reference_rows_do():
    s = settings()
    same(sweepstream.summarise_cells(sweepstream.run_sweep_cells(s)), sweep.summarise(sweep.run_sweep(s)))


def test_with_a_mix_the_streamed_sweep_is_the_references_and_draws_the_maps_jobs():
    s = settings(mix=0.5, samples=6, quanta=[1.0])
    same(sweepstream.summarise_cells(sweepstream.run_sweep_cells(s)), sweep.summarise(sweep.run_sweep(s)))
    rows = sweep.run_sweep(s)
    for r in rows:
        raw = mapping.sample_point(3, mapping.MapPoint(n_jobs=r.n_jobs, mix=0.5), r.sample, (100, 1000))
        assert r.periods_ms == ";".join(f"{p:g}" for p, _ in raw)  # integer periods: the grid keeps them
    assert [r.periods_ms for r in rows] != [r.periods_ms for r in sweep.run_sweep(settings(samples=6, quanta=[1.0]))]


def test_streamed_rows_are_the_reference_rows_in_order():
    s = settings(jobs=[2], samples=5, rows=True, policies=["shift"], iterations=12)
    got = []
    sweepstream.run_sweep_cells(s, on_rows=got.extend, chunk_samples=2)
    want = sweep.run_sweep(s)
    assert [(r.n_jobs, r.quantum_ms, r.sample) for r in got] == [(r.n_jobs, r.quantum_ms, r.sample) for r in want]
    for g, w in zip(got, want, strict=True):
        assert (g.feasible, g.periods_ms, g.shift_helps) == (w.feasible, w.periods_ms, w.shift_helps)
        assert g.shift_gain == pytest.approx(w.shift_gain, abs=1e-9)
        assert g.sham_gain == pytest.approx(w.sham_gain, abs=1e-9)


def test_cells_do_not_depend_on_chunks_or_processes():
    s = settings(samples=7, policies=["shift"])
    one = sweepstream.run_sweep_cells(s, chunk_samples=100)
    many = sweepstream.run_sweep_cells(s, workers=2, chunk_samples=2)
    assert many == sweepstream.run_sweep_cells(s, workers=1, chunk_samples=2)  # bit for bit
    for key, cell in one.items():
        assert (cell.combinations, cell.feasible, cell.shift_helps) == (
            many[key].combinations, many[key].feasible, many[key].shift_helps)
        for p, t in cell.policies.items():
            assert (t.helps, t.neutral, t.hurts) == (many[key].policies[p].helps, many[key].policies[p].neutral,
                                                     many[key].policies[p].hurts)
            assert t.mean == pytest.approx(many[key].policies[p].mean, abs=1e-12)


def test_the_reference_path_is_taken_for_a_policy_the_compiled_model_does_not_know(monkeypatch):
    s = settings(jobs=[2], samples=4)
    fast = sweepstream.summarise_cells(sweepstream.run_sweep_cells(s))
    monkeypatch.setattr(fastfluid, "supports", lambda policy: False)
    same(sweepstream.summarise_cells(sweepstream.run_sweep_cells(s)), fast)


def test_tallies_merge_in_any_grouping_into_the_tally_of_all():
    rng = random.Random(1)
    gains = [rng.gauss(0, 0.03) for _ in range(500)] + [math.nan]
    whole = tally_of(gains, 0.01)
    parts = [tally_of(gains[a:a + 37], 0.01) for a in range(0, len(gains), 37)]
    left = Tally()
    for p in parts:
        left = left.merge(p)
    right = Tally()
    for p in reversed(parts):
        right = p.merge(right)
    finite = [g for g in gains if math.isfinite(g)]
    mean, low, high = mean_ci95(finite)
    for t in (left, right):
        assert (t.helps, t.neutral, t.hurts) == (whole.helps, whole.neutral, whole.hurts)
        assert t.n == 500 and t.helps == sum(g > 0.01 for g in finite) and t.hurts == sum(g < -0.01 for g in finite)
        stats = t.stats()
        assert stats["mean_gain"] == pytest.approx(mean, abs=1e-12)
        assert stats["mean_gain_ci95"] == pytest.approx([low, high], abs=1e-12)
    assert whole.two_sided() == sweep.two_sided(finite, 0.01)


def test_points_that_draw_alike_give_in_one_chunk_the_cells_each_gives_alone():
    """A chunk of several points (shared draws, shared simulations run once) counts each point exactly as a
    chunk of that point alone: the same simulations, so the same tallies bit for bit."""
    s = {**mapping.default_settings(samples=12), "policies": mapping.MAP_POLICIES}
    base = mapping.DEFAULT_POINT
    points = tuple(replace(base, **kw) for kw in ({}, {"quantum_ms": 50.0}, {"error": 0.02}, {"realign_s": 2.0}))
    assert len({mapstream.draws_alike(p) for p in points}) == 1
    assert mapstream.draws_alike(replace(base, comm="light")) != mapstream.draws_alike(base)
    together = mapstream.map_chunk((s, points, 3, 12))
    for p in points:
        assert together[p] == mapstream.map_chunk((s, (p,), 3, 12))[p]
        assert together[p].combinations == 9


def test_streamed_map_gives_the_reference_cells():
    s = mapping.default_settings(samples=3)
    s["panels"] = {"quantum_ms": (1.0, 50.0), "realign_s": (None, 2.0), "n_jobs": (2, 3), "mix": (0.0, 1.0),
                   "error": (0.0, 0.02)}
    same(mapstream.map_cells(s, mapstream.run_map_cells(s, chunk_samples=2)),
         mapping.map_cells(s, mapping.run_map(s)))


def test_the_default_map_sample_keeps_every_interval_within_two_points_and_is_barely_enough():
    n = mapstream.DEFAULT_SAMPLES
    assert max(wilson_half_width(k / n, n) for k in range(n + 1)) <= 0.02
    assert wilson_half_width(0.5, n) <= 0.02 < wilson_half_width(0.5, n - 3)  # the widest is at 1/2


def test_progress_in_a_log_is_a_plain_line_every_few_seconds_not_a_redrawn_bar(capsys):
    from controller.theory import chunks

    results = list(chunks.run_chunks(abs, list(range(-500, 500)), 1, "sweep", progress=True))
    assert results == [abs(x) for x in range(-500, 500)]
    err = capsys.readouterr().err  # captured: not a terminal
    assert "\r" not in err
    assert err.splitlines() == ["sweep: 1/1000 combinations", "sweep: 1000/1000 combinations"]
