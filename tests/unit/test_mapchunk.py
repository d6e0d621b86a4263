"""The map's chunks as arrays: every combination's gains, feasibility, harmonic share and unsimulated
arms are the reference's (``mapping.evaluate_point``, the pure-Python fluid model) within 1e-6, at every
kind of point, and the cells they count are those counted one combination at a time."""

import math
from dataclasses import replace

import numpy as np
import pytest

from controller.theory import fluid, mapchunk, mapping, mapstream
from controller.theory.mapping import MAP_POLICIES, MAX_HORIZON_ITERATIONS, MapPoint
from controller.theory.policies import PolicyKnobs

# points that draw alike go in one chunk, as the map sends them; between them every factor and policy
GROUPS = [
    (MapPoint(), MapPoint(quantum_ms=10.0), MapPoint(quantum_ms=50.0), MapPoint(quantum_ms=100.0),
     MapPoint(error=0.02), MapPoint(realign_s=2.0)),
    (MapPoint(n_jobs=3), MapPoint(n_jobs=3, quantum_ms=50.0), MapPoint(n_jobs=3, realign_s=2.0)),
    (MapPoint(n_jobs=4, mix=0.5), MapPoint(n_jobs=4, mix=0.5, error=0.02)),
    (MapPoint(comm="heavy"),),
    (MapPoint(comm="light", quantum_ms=50.0),),
    (MapPoint(mix=1.0), MapPoint(mix=1.0, error=0.005)),
    (MapPoint(workload="zoo"),),
]
SAMPLES = 10


def reference(block, point, sample):
    raw = block.raw(sample)
    view = mapping.scheduler_view(raw, point.error, block.normals[sample - block.start])
    return mapping.evaluate_point(raw, view, point.quantum_ms, MAP_POLICIES, PolicyKnobs(realign_s=point.realign_s),
                                  block.uniforms(sample))


def close(a, b):
    return (math.isnan(a) and math.isnan(b)) or abs(a - b) <= 1e-6


@pytest.mark.parametrize("group", range(len(GROUPS)))
def test_every_combination_is_the_references_within_1e_6(group):
    points = GROUPS[group]
    assert len({mapstream.draws_alike(p) for p in points}) == 1
    block = mapping.point_block(7, points[0], 40, 40 + SAMPLES)
    got = mapchunk.evaluate_chunk(block, points, MAP_POLICIES)
    checked = 0
    for point in points:
        arrays = got[point]
        vs_none, vs_random, sham = arrays.gains(MAP_POLICIES)
        for r in range(SAMPLES):
            ref = reference(block, point, 40 + r)
            assert bool(arrays.feasible[r]) == ref["feasible"]
            assert arrays.harmonic_share[r] == ref["harmonic_share"]
            assert sorted(a for a, flags in arrays.unsimulated.items() if flags[r]) == sorted(ref["unsimulated"])
            assert close(arrays.throughput["none"][r], ref["throughput_none"])
            assert close(sham[r], ref["sham_gain"]), (point, r)
            for p in MAP_POLICIES:
                assert close(vs_none[p][r], ref["gain"][p]), (point, r, p, vs_none[p][r], ref["gain"][p])
                assert close(vs_random[p][r], ref["gain_vs_random"][p]), (point, r, p)
                checked += 1
    assert checked == len(points) * SAMPLES * len(MAP_POLICIES)


def test_a_policy_that_cannot_schedule_the_jobs_is_nan_and_not_unsimulated():
    """guard at a 100 ms quantum: a burst with its band rounded up to the grid fills the period of some jobs."""
    point = MapPoint(comm="heavy", quantum_ms=100.0)
    block = mapping.point_block(0, point, 0, 64)
    arrays = mapchunk.evaluate_chunk(block, (point,), ("guard",))[point]
    refused = np.isnan(arrays.throughput["guard"])
    assert refused.any() and not refused.all()
    assert not arrays.unsimulated["guard"].any()
    r = int(np.flatnonzero(refused)[0])
    assert math.isnan(reference(block, point, r)["throughput"]["guard"])


def test_cells_counted_as_arrays_are_the_cells_counted_one_by_one(monkeypatch):
    """The same counts; the means and spreads to rounding (merged in another order)."""
    s = {**mapping.default_settings(samples=12), "policies": MAP_POLICIES}
    points = (mapping.DEFAULT_POINT, replace(mapping.DEFAULT_POINT, quantum_ms=50.0))
    arrays = mapstream.map_chunk((s, points, 0, 12))
    monkeypatch.setattr(mapchunk, "applies", lambda *a: False)  # the compiled batch, combination by combination
    one_by_one = mapstream.map_chunk((s, points, 0, 12))
    for p in points:
        a, b = arrays[p], one_by_one[p]
        assert (a.combinations, a.feasible, a.unsimulated) == (b.combinations, b.feasible, b.unsimulated)
        assert a.harmonic_share_sum == pytest.approx(b.harmonic_share_sum, abs=1e-12)
        for mine, theirs in [(a.noise, b.noise), *((a.vs_none[k], b.vs_none[k]) for k in MAP_POLICIES),
                             *((a.vs_random[k], b.vs_random[k]) for k in MAP_POLICIES)]:
            assert (mine.helps, mine.neutral, mine.hurts) == (theirs.helps, theirs.neutral, theirs.hurts)
            assert mine.mean == pytest.approx(theirs.mean, abs=1e-12)
            assert mine.m2 == pytest.approx(theirs.m2, abs=1e-12)


def test_a_grid_beyond_the_closed_form_goes_the_batch_way():
    """A quantum of 5 µs puts a period beyond the pair's closed form: the chunk says so, and the map's chunk
    then takes the compiled batch, which gives the reference's cells."""
    point = MapPoint(quantum_ms=0.005)
    block = mapping.point_block(0, point, 0, 2)
    with pytest.raises(mapchunk.NotClosedForm):
        mapchunk.evaluate_chunk(block, (point,), ("shift",))
    s = {**mapping.default_settings(samples=2), "policies": ("shift",), "panels": {"quantum_ms": (0.005,)}}
    cells = mapstream.map_chunk((s, (point,), 0, 2))[point]
    assert cells.combinations == 2 and cells.vs_none["shift"].n == 2


def test_horizons_as_arrays_are_the_models_for_any_number_of_jobs():
    rng = np.random.default_rng(5)
    for n in (2, 3, 4, 5):
        periods = rng.integers(100, 1001, (600, n)).astype(float)
        periods[::7, 1] = 2 * periods[::7, 0]  # an lcm within the horizon's bounds
        periods[::11, 0] += 0.5  # not whole ms: sample by sample
        periods[::13] *= 1000  # beyond 100 s: sample by sample
        want = [fluid.default_horizon_ms([fluid.FluidJob(f"j{i}", float(p), 0.0) for i, p in enumerate(row)],
                                         MAX_HORIZON_ITERATIONS) for row in periods]
        assert mapchunk._horizons(periods).tolist() == want
