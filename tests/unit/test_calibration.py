"""Calibration's decisions: burst sizing, the final phase, and the re-run of a solo run over its period.

``Experiment._solo`` is replaced by a made-up job (a fixed start-up cost plus
data at a set rate) so that the decisions can be checked without a fabric.
"""

from pathlib import Path

import pytest

from apps.dltjob import JobSpec, Worker
from scenarios import spec as spec_module
from scenarios.experiment import (
    BURST_TARGET,
    BURST_TOLERANCE,
    PERIOD_MARGIN,
    PERIOD_SLACK,
    Experiment,
    RunOptions,
    corrected_fill,
    period_excess_ms,
    with_phase,
)

REPO = Path(__file__).resolve().parents[2]
WORKERS = (Worker("h1", "10.0.0.1"), Worker("h3", "10.0.0.3"))


def job(fill=0.8, comm_ms=100.0, period_ms=300.0) -> JobSpec:
    return JobSpec("alpha", period_ms, comm_ms, WORKERS, fill=fill)


def made_up_solo(spec, startup_ms=14.0, extra_ms=0.0) -> dict:
    """A job alone whose data runs at the link rate after ``startup_ms``; ``extra_ms`` longer bursts."""
    data_ms = spec.fill * spec.comm_ms
    comm_ms = startup_ms + data_ms + extra_ms
    return {"iteration_ms": spec.period_ms - spec.comm_ms + comm_ms, "comm_ms": comm_ms,
            "data_ms": data_ms + extra_ms, "startup_ms": startup_ms, "lead_ms": 9.0, "sustained_mbps": 48.0}


def test_a_burst_within_tolerance_keeps_its_fill():
    spec = job(fill=0.56)
    assert abs(made_up_solo(spec)["comm_ms"] / spec.comm_ms - BURST_TARGET) <= BURST_TOLERANCE
    assert corrected_fill(spec, made_up_solo(spec)) is None


def test_only_the_data_part_of_a_burst_scales_with_the_fill():
    spec = job(fill=0.8)  # 14 + 80 ms: too long for 70 ms
    fill = corrected_fill(spec, made_up_solo(spec))
    assert fill == pytest.approx(0.8 * (70 - 14) / 80)
    assert made_up_solo(job(fill=fill))["comm_ms"] == pytest.approx(BURST_TARGET * 100)


def test_a_phase_keeps_the_bytes_and_refuses_what_cannot_fit():
    spec = job(fill=0.56)
    rephased = with_phase(spec, 82.0)
    assert rephased.comm_ms == 82.0 and rephased.fill * 82.0 == pytest.approx(0.56 * 100)
    assert with_phase(spec, 50.0) is None  # 56 ms of data do not fit 50 ms
    assert with_phase(spec, 300.0) is None  # no compute left


def test_a_solo_iteration_is_corrected_when_it_is_too_far_from_the_margin_either_way():
    target_ms = (1 - PERIOD_MARGIN) * 300
    assert period_excess_ms(300, target_ms) == 0.0
    assert period_excess_ms(300, target_ms + PERIOD_SLACK * 300) == 0.0
    assert period_excess_ms(300, target_ms - PERIOD_SLACK * 300) == 0.0
    assert period_excess_ms(300, 304.8) == pytest.approx(304.8 - target_ms)
    assert period_excess_ms(300, 277.2) == pytest.approx(277.2 - target_ms)  # short: compute gets longer


def calibrated(monkeypatch, tmp_path, solo_for) -> tuple[Experiment, list[JobSpec]]:
    """Calibrate the classroom's first job against ``solo_for(spec, call)``; the specs each solo run got."""
    scenario = spec_module.load(REPO / "scenarios" / "classroom.yaml")
    experiment = Experiment(scenario, "", RunOptions(("none",), 1.0, tmp_path))
    runs: list[JobSpec] = []

    def fake_solo(fabric, spec, iterations=0):
        runs.append(spec)
        return solo_for(spec, len(runs))

    monkeypatch.setattr(experiment, "_solo", fake_solo)
    experiment.specs = [job()]
    experiment._calibrate(fabric=None)
    return experiment, runs


def test_a_fill_corrected_after_the_last_round_sets_the_phase_from_the_burst_it_should_take(monkeypatch, tmp_path):
    # a job whose bursts never settle within tolerance: every sizing round is out
    def solo_for(spec, call):
        return made_up_solo(spec, extra_ms=30.0 if call % 2 else -25.0)

    experiment, runs = calibrated(monkeypatch, tmp_path, solo_for)
    sizing, final = runs[:3], runs[3]
    last = solo_for(sizing[-1], 3)
    fill = corrected_fill(sizing[-1], last)
    # the final run carries the corrected fill's bytes ...
    assert final.fill * final.comm_ms == pytest.approx(fill * sizing[-1].comm_ms)
    # ... in a phase set from what that fill's burst should take: start-up + data scaled
    expected_burst_ms = last["startup_ms"] + last["data_ms"] * fill / sizing[-1].fill
    assert final.comm_ms == pytest.approx(expected_burst_ms + PERIOD_MARGIN * final.period_ms)
    assert experiment.specs[0] == runs[-1]


def test_a_final_solo_run_over_its_period_runs_again_with_less_compute(monkeypatch, tmp_path):
    # the final runs' bursts (a phase other than the scenario's 100 ms) come out 15 ms longer than sizing's
    def solo_for(spec, call):
        return made_up_solo(spec, extra_ms=15.0 if spec.comm_ms != 100 else 0.0)

    experiment, runs = calibrated(monkeypatch, tmp_path, solo_for)
    first_final = made_up_solo(runs[-2], extra_ms=15.0)
    assert first_final["iteration_ms"] > 300  # the case this is about
    assert len(runs) == 2 + 2  # two sizing rounds (94 ms, then 70: within tolerance), two final runs
    assert runs[-1].comm_ms == pytest.approx(runs[-2].comm_ms + first_final["iteration_ms"] - 288.0)
    assert experiment.solo["alpha"]["iteration_ms"] == pytest.approx(288.0)
    assert experiment.specs[0] == runs[-1]


def test_a_final_solo_run_far_short_of_its_period_runs_again_with_more_compute(monkeypatch, tmp_path):
    # the final runs' bursts come out 15 ms shorter than sizing's: 273 ms for a 300-ms period
    def solo_for(spec, call):
        return made_up_solo(spec, extra_ms=-15.0 if spec.comm_ms != 100 else 0.0)

    experiment, runs = calibrated(monkeypatch, tmp_path, solo_for)
    assert len(runs) == 2 + 2
    assert runs[-1].comm_ms == pytest.approx(runs[-2].comm_ms - 15.0)
    assert experiment.solo["alpha"]["iteration_ms"] == pytest.approx(288.0)


def test_a_final_solo_run_within_its_period_is_not_repeated(monkeypatch, tmp_path):
    experiment, runs = calibrated(monkeypatch, tmp_path, lambda spec, call: made_up_solo(spec))
    assert len(runs) == 2 + 1
    assert experiment.solo["alpha"]["iteration_ms"] == pytest.approx((1 - PERIOD_MARGIN) * 300)
