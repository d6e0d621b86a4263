"""The compiled pattern model against the reference (``patternfluid.simulate_patterns``)."""

import pytest

from controller.theory import patternfluid, profilesweep
from controller.theory.patternschedule import pattern_schedule

SETTINGS = profilesweep.ProfileSweep(workers=(4, 8, 16), bucket_caps_mb=(5, 25, 100), seed=11, horizon_periods=8)


@pytest.mark.parametrize("n_jobs", [2, 3])
@pytest.mark.parametrize("sample", range(6))
def test_the_compiled_loop_gives_the_references_throughput(n_jobs, sample):
    mix = profilesweep.draw_mix(SETTINGS, n_jobs, sample)
    for jobs, grid in profilesweep.forms(SETTINGS, mix).values():
        found = pattern_schedule(grid)
        schedule = patternfluid.pattern_schedule_record([j.name for j in jobs], grid, found.shifts_q, 1.0,
                                                        found.feasible)
        horizon_ms = 8 * max(j.period_ms for j in jobs)
        for policy in ("none", "shift", "gate", "random", "priority"):
            reference = patternfluid.predict_pattern_policy(policy, jobs, grid, schedule, seed=sample,
                                                            horizon_ms=horizon_ms).normalised_throughput
            fast = patternfluid.pattern_throughput(policy, jobs, grid, schedule, seed=sample, horizon_ms=horizon_ms)
            assert fast == pytest.approx(reference, rel=1e-9), policy


def test_a_policy_the_loop_does_not_cover_goes_to_the_reference():
    mix = profilesweep.draw_mix(SETTINGS, 2, 0)
    jobs, grid = profilesweep.forms(SETTINGS, mix)["patterns"]
    schedule = patternfluid.pattern_schedule_record(["j0", "j1"], grid, (0, 0), 1.0, False)
    reference = patternfluid.predict_pattern_policy("mltcp", jobs, grid, schedule, horizon_ms=5000)
    assert patternfluid.pattern_throughput("mltcp", jobs, grid, schedule, horizon_ms=5000) == \
        reference.normalised_throughput
