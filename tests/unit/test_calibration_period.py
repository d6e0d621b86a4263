"""Calibration's period check (scenarios.experiment.calibration.with_phase, period_correction): a job's solo
iteration lands on (1 − PERIOD_MARGIN) of its period, with the bytes of its bursts unchanged."""

import pytest

from apps.jobmodel import JobSpec, Worker, burst_bytes
from scenarios.experiment.calibration import (
    LAUNCH_GUARD_MS,
    PERIOD_MARGIN,
    PERIOD_TOLERANCE,
    launch_leads_ms,
    period_correction,
    trimmed_to_target,
    with_phase,
)

WORKERS = (Worker("h1", "10.0.0.1"), Worker("h3", "10.0.0.3"))
# classroom alpha after sizing and a first re-phase: 76.8-ms phase, 36.5 ms of data
ALPHA = JobSpec("alpha", 300.0, 76.8, WORKERS, link_mbps=50.0, fill=0.475)


def test_a_solo_iteration_near_its_target_is_left_alone():
    target_ms = (1 - PERIOD_MARGIN) * 300.0
    for iteration_ms in (target_ms, target_ms + 0.99 * PERIOD_TOLERANCE * 300, target_ms - 5.9):
        assert period_correction(ALPHA, iteration_ms) is None


def test_a_slow_solo_iteration_gets_that_much_less_compute_and_the_same_bytes():
    # measured: 299.7 ms for 300 (the fill of the last sizing round, never measured)
    fixed = period_correction(ALPHA, 299.7)
    assert fixed.compute_ms == pytest.approx(ALPHA.compute_ms - (299.7 - 288.0))
    assert fixed.period_ms == ALPHA.period_ms
    # the same bytes, but for the float's last digit (int() rounds down)
    assert abs(burst_bytes(fixed.comm_ms, 50.0, fixed.fill) - burst_bytes(ALPHA.comm_ms, 50.0, ALPHA.fill)) <= 1


def test_a_fast_solo_iteration_gets_more_compute():
    fixed = period_correction(ALPHA, 277.0)
    assert fixed.compute_ms == pytest.approx(ALPHA.compute_ms + 11.0)


def test_no_job_is_made_that_cannot_exist():
    assert with_phase(ALPHA, 300.0) is None  # no compute left
    assert with_phase(ALPHA, 0.0) is None
    assert with_phase(ALPHA, 0.4 * 76.8) is None  # the same bytes would need more than the link
    assert period_correction(ALPHA, 600.0) is None  # 312 ms too slow: more phase than period


def test_what_is_left_of_the_error_is_trimmed_off_the_compute_phase():
    solo = {"iteration_ms": 282.5, "comm_ms": 66.0}  # within the tolerance of 288, so not measured again
    spec, trimmed = trimmed_to_target(ALPHA, solo)
    assert spec.compute_ms == pytest.approx(ALPHA.compute_ms + 5.5) and spec.period_ms == ALPHA.period_ms
    assert trimmed["iteration_ms"] == pytest.approx(288.0) and trimmed["measured_iteration_ms"] == 282.5
    assert trimmed["compute_trim_ms"] == pytest.approx(5.5) and trimmed["comm_ms"] == 66.0  # the bursts stay
    assert abs(burst_bytes(spec.comm_ms, 50.0, spec.fill) - burst_bytes(ALPHA.comm_ms, 50.0, ALPHA.fill)) <= 1


def test_commensurate_jobs_end_up_commensurate():
    beta = JobSpec("beta", 600.0, 130.0, WORKERS, link_mbps=50.0, fill=0.5)
    _, alpha_solo = trimmed_to_target(ALPHA, {"iteration_ms": 285.0})
    _, beta_solo = trimmed_to_target(beta, {"iteration_ms": 583.0})  # each within 2 % of its own target
    assert 2 * alpha_solo["iteration_ms"] == pytest.approx(beta_solo["iteration_ms"])


def test_a_job_whose_compute_cannot_move_is_left_as_it_is():
    solo = {"iteration_ms": 600.0}
    assert trimmed_to_target(ALPHA, solo) == (ALPHA, solo)


def test_a_job_launches_so_its_data_meets_an_open_gate_even_when_it_follows_at_once():
    """The launch lead is the solo lead less the guard: iperf3's ~19 ms start-up launches 16 ms early;
    a standing connection's data follows within a millisecond, so its job launches after the window
    opens and its data still comes LAUNCH_GUARD_MS in."""
    leads = launch_leads_ms({"iperf": {"lead_ms": 19.0, "burst_lead_ms": 19.0},
                             "stream": {"lead_ms": 0.4, "burst_lead_ms": 0.4}})
    assert leads == {"iperf": pytest.approx(19.0 - LAUNCH_GUARD_MS), "stream": pytest.approx(0.4 - LAUNCH_GUARD_MS)}
    assert leads["stream"] < 0
