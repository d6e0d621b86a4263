"""The one sampler (controller/theory/draws.py): a sample's draws do not depend on the chunk that asks for
them, they follow the sampling model, and the harmonic mix holds exactly."""

import numpy as np
import pytest

from controller.theory import draws, mapping, sweep


def test_a_samples_draws_are_the_same_whichever_chunk_draws_it():
    whole = draws.draw(7, 3, 0, 3000, (100, 1000), (0.1, 0.5), mix=0.5)
    for a, b in ((0, 97), (97, 1500), (1023, 1025), (2999, 3000)):
        part = draws.draw(7, 3, a, b, (100, 1000), (0.1, 0.5), mix=0.5)
        for field in ("periods_ms", "fracs", "normals", "offsets"):
            assert np.array_equal(getattr(part, field), getattr(whole, field)[a:b]), (field, a, b)
    assert sweep.sample_raw(7, 2, 1500, (100, 1000), (0.1, 0.5), False, 1e4) == draws.draw(
        7, 2, 1400, 1600, (100, 1000), (0.1, 0.5)).raw(1500)


def test_draws_follow_the_sampling_model():
    block = draws.draw(1, 4, 0, 5000, (100, 1000), (0.1, 0.5))
    p, f, u = block.periods_ms, block.fracs, block.offsets
    assert (p == np.round(p)).all() and p.min() == 100 and p.max() == 1000
    assert 0.1 <= f.min() and f.max() < 0.5 and 0 <= u.min() and u.max() < 1
    assert abs(p.mean() - 550) < 5 and abs(f.mean() - 0.3) < 0.005 and abs(block.normals.std() - 1) < 0.02
    other = draws.draw(2, 4, 0, 5000, (100, 1000), (0.1, 0.5))
    assert not np.array_equal(other.periods_ms, p)  # another seed, other combinations


def test_zoo_draws_are_zoo_jobs():
    block = draws.draw(3, 2, 0, 200, (100, 1000), (0.1, 0.5), "zoo", 10_000.0)
    timings = {draws._zoo_timing(m, w, 10_000.0) for m in mapping_models() for w in draws.ZOO_WORKERS}
    for r in range(200):
        assert all((p, f) in timings for p, f in block.raw(r))


def mapping_models():
    from controller.theory import zoo
    return sorted(zoo.models())


def test_vectorised_harmonic_count_is_the_definitions():
    rng = np.random.default_rng(4)
    periods = rng.choice([100, 150, 200, 300, 301, 450, 600, 900], size=(2000, 4))
    want = [sum(mapping.harmonic_jobs([float(x) for x in row])) for row in periods]
    assert draws.harmonic_counts(periods).tolist() == want


@pytest.mark.parametrize("n_jobs", [2, 3, 4, 6])
def test_mixed_periods_hold_every_rows_count(n_jobs):
    counts = np.arange(4000) % (n_jobs + 1)
    periods = draws.mixed_periods(np.random.default_rng(n_jobs), counts, n_jobs, 100, 1000)
    assert draws.harmonic_counts(periods).tolist() == counts.tolist()
    assert periods.min() >= 100 and periods.max() <= 1000
    last = periods[counts == n_jobs - 1][:, -1]  # harmonic jobs are not always the last ones
    assert len(set(last.tolist())) > 100


def test_uniforms_draw_offsets_on_the_grid():
    gen = draws.Uniforms([0.0, 0.5, 0.999999999])
    assert [gen.randrange(10), gen.randrange(10), gen.randrange(10)] == [0, 5, 9]
