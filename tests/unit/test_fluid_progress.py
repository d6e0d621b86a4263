"""The fluid model always makes progress on drifting pairs held to windows: two jobs whose true
periods are off the quantum grid, under ``gate``, ``guard`` and ``align``, through the plan's model
(reference and compiled) and through a run's model (``scenarios/experiment/prediction.py``) fed with
solo figures like calibration's, over standing connections or iperf3."""

import math

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from controller.theory import fastfluid, fluid
from controller.theory.fluidjob import FluidJob
from controller.theory.policies import PolicyKnobs, get_policy, policy_schedule
from controller.theory.schedule import quantize_job
from scenarios.experiment.calibration import BURST_TARGET, PERIOD_MARGIN, launch_leads_ms
from scenarios.experiment.prediction import WIRE_SHARING, RunModel

WINDOWED = ("gate", "guard", "align")
KNOBS = PolicyKnobs()


@st.composite
def drifting_pairs(draw):
    """(quantum ms, [(name, true period ms, comm ms)] of two jobs): periods 100-1500 ms, off the grid."""
    quantum_ms = draw(st.sampled_from([1.0, 2.0, 5.0, 7.0, 10.0, 20.0, 25.0, 50.0]))
    jobs = []
    for name in ("a", "b"):
        period_ms = draw(st.floats(100.0, 1500.0, allow_nan=False))
        assume(abs(period_ms / quantum_ms - round(period_ms / quantum_ms)) > 1e-3)  # off the grid
        jobs.append((name, period_ms, draw(st.floats(0.05, 0.45)) * period_ms))
    return quantum_ms, jobs


def _schedule(policy, quantum_ms, jobs):
    """The policy's schedule of the pair on the grid (as plan and run compute it); None where the policy
    cannot schedule it (a guard that does not fit the period)."""
    timings = [quantize_job(name, period_ms, comm_ms, quantum_ms) for name, period_ms, comm_ms in jobs]
    try:
        return timings, policy_schedule(get_policy(policy), timings, quantum_ms, KNOBS)
    except ValueError:
        return timings, None


@settings(max_examples=100)
@given(drifting_pairs(), st.sampled_from(WINDOWED))
def test_plans_model_makes_progress_on_a_drifting_pair_and_the_compiled_one_agrees(pair, policy):
    quantum_ms, jobs = pair
    timings, schedule = _schedule(policy, quantum_ms, jobs)
    assume(schedule is not None)
    true_jobs = [FluidJob(name, period_ms, comm_ms) for name, period_ms, comm_ms in jobs]
    length = {"horizon_ms": 8 * max(j.period_ms for j in true_jobs)}
    result = fluid.predict_policy(policy, timings, true_jobs, quantum_ms, KNOBS, **length)[1]
    for name, period_ms, _ in jobs:
        mean_ms = result.jobs[name].mean_iteration_ms
        assert math.isfinite(mean_ms) and mean_ms >= 0.99 * period_ms, (name, mean_ms)
    compiled = fastfluid.predict_throughput(policy, timings, true_jobs, quantum_ms, KNOBS, **length)
    assert compiled == result.normalised_throughput or abs(compiled - result.normalised_throughput) <= 1e-6


@st.composite
def calibrated(draw, jobs):
    """Per job, solo figures as calibration keeps them: the iteration set just under the period,
    a burst of about :data:`BURST_TARGET` of comm, the lead of standing connections (under a
    millisecond) or of iperf3 (a process start), link and after samples around them."""
    standing = draw(st.booleans())
    solo = {}
    for name, period_ms, comm_ms in jobs:
        data_ms = draw(st.floats(0.5, 1.0)) * BURST_TARGET * comm_ms
        lead_ms = draw(st.floats(0.05, 0.95)) if standing else draw(st.floats(5.0, 30.0))
        count = draw(st.integers(3, 8))
        solo[name] = {"iteration_ms": (1 - PERIOD_MARGIN) * period_ms * draw(st.floats(0.98, 1.02)),
                      "data_ms": data_ms, "lead_ms": lead_ms, "burst_mbps": draw(st.floats(30.0, 50.0)),
                      "comm_ms": data_ms + lead_ms,
                      "link_samples_ms": [data_ms * draw(st.floats(0.8, 1.5)) for _ in range(count)],
                      "after_samples_ms": [draw(st.floats(-3.0, 10.0)) for _ in range(count)],
                      "late_samples_ms": [draw(st.floats(-1.0, 5.0)) for _ in range(count)],
                      "launch_overhead_ms": lead_ms if draw(st.booleans()) else None}
    return solo, WIRE_SHARING["persistent" if standing else "iperf3"]


@settings(max_examples=40)
@given(st.data(), drifting_pairs(), st.sampled_from(WINDOWED))
def test_a_runs_model_makes_progress_on_a_drifting_pair(data, pair, policy):
    quantum_ms, jobs = pair
    timings, schedule = _schedule(policy, quantum_ms, jobs)
    assume(schedule is not None)
    solo, sharing = data.draw(calibrated(jobs))
    padding = {j.name: j.period_ms - t.period_ms for j, t in zip(schedule.jobs, timings, strict=True)}
    model = RunModel(schedule, solo, launch_leads_ms(solo), link_mbps=50.0,
                     queue_ms=data.draw(st.sampled_from([0.0, 20.0])), padding_ms=padding, tcp_sharing=sharing)
    offsets = dict(schedule.shifts_ms)
    iterations = {name: data.draw(st.integers(5, 25)) for name, _, _ in jobs}
    busy = {name: data.draw(st.floats(0.0, 15.0)) for name, _, _ in jobs}
    predicted, ranges = model.predict_with_range(policy, offsets, iterations, busy)
    windows = {j.name: j for j in schedule.jobs}
    for name, _, _ in jobs:
        low, high = ranges[name]
        assert all(math.isfinite(x) for x in (predicted[name], low, high)), (name, predicted, ranges)
        # each burst in a window of its own: no faster than its windows come round, but for where in
        # its first and last windows the bursts end
        w = windows[name]
        assert low >= w.period_ms - w.comm_ms / iterations[name] - 1e-6, (name, ranges, w)
