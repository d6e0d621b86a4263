"""What a run tells the user to change when fidelity is lost (scenarios.experiment.fidelity.fidelity_advice)."""

from scenarios.experiment.drive import MEASURE_ATTEMPTS
from scenarios.experiment.fidelity import (
    FIDELITY_MIN_RATIO,
    SOLO_OVERRUN_SHARE,
    fidelity_advice,
    overrun_jobs,
)

SOLO = {"x": {"data_ms": 36.0, "startup_ms": 13.0}, "y": {"data_ms": 8.0, "startup_ms": 31.0}}


def test_a_slow_link_is_advised_with_its_measured_share():
    advice = fidelity_advice(SOLO, 100.0, 0.84, [], 0)
    assert advice.startswith("solo bursts reached only 84% of the rate the 100-Mbit/s links give them")
    assert "too short" not in advice and "tcpdump" not in advice


def test_bursts_too_short_to_measure_name_the_job_and_its_start_up():
    advice = fidelity_advice(SOLO, 100.0, 0.97, ["y"], 0)
    assert advice == ("the solo bursts of y were too short to measure a rate (y: 8 ms of data after 31 ms "
                      "of process start-up); give those jobs a longer comm_ms")


def test_every_cause_is_listed_and_none_is_invented():
    advice = fidelity_advice(SOLO, 50.0, FIDELITY_MIN_RATIO - 0.01, ["y"], 7)
    assert "solo bursts of y were too short" in advice and "reached only 89%" in advice
    assert "tcpdump dropped 7 packets" in advice
    assert fidelity_advice(SOLO, 50.0, None, [], 0) == "fidelity was not confirmed"


def test_a_job_that_cannot_keep_its_period_alone_is_named_with_its_times():
    solo = {"x": {"iteration_ms": 288.0}, "y": {"iteration_ms": 2766.0}, "z": {"iteration_ms": 374.0}}
    periods = {"x": 300.0, "y": 300.0, "z": 300.0}
    # calibration makes a solo iteration ~4 % shorter than the period; over 25 % longer is an overrun
    assert SOLO_OVERRUN_SHARE == 0.25
    assert overrun_jobs(solo, periods) == ["y"]
    assert overrun_jobs({"z": {"iteration_ms": 376.0}}, {"z": 300.0}) == ["z"]
    advice = fidelity_advice(SOLO | solo, 50.0, 0.97, [], 0, {"y": 300.0})
    assert advice == ("alone, y could not keep their periods (y: 2766 ms per iteration for a 300-ms period); "
                      "give them a longer comm_ms or period, or look in raw/ for a burst that stalled")


def test_the_first_solo_run_whose_rate_is_the_fidelity_figure_is_judged_for_the_host_too():
    from scenarios.experiment.fidelity import measurement_steal

    solo = {"a": {"nominal_host_steal_pct": 12.3, "host_steal_pct": 1.2}, "b": {"host_steal_pct": 3.8}}
    steal = measurement_steal(solo, {"gate": {"mean_pct": 3.8, "peak_pct": 9.0}})
    assert steal == {"first solo a": 12.3, "solo a": 1.2, "solo b": 3.8, "gate": 3.8}
    solo["a"]["host_steal_peak_pct"] = 2.5
    assert measurement_steal(solo, {"gate": {"mean_pct": 3.8, "peak_pct": 9.0}}, peak=True) == {"solo a": 2.5, "gate": 9.0}
    advice = fidelity_advice(SOLO, 50.0, 0.77, [], 0, disturbed={"first solo a": 12.3})
    assert advice.startswith("this machine's host took more than 5 % of its CPU in all "
                             f"{MEASURE_ATTEMPTS} attempts at first solo a")
    assert "solo bursts reached only 77% of the rate the 50-Mbit/s links give them" in advice


def _spans(rows):
    """burst_spans-like rows: (job, first_s, last_s, data_ms)."""
    import pandas as pd

    return pd.DataFrame(rows, columns=["job", "first_s", "last_s", "data_ms"])


def test_bursts_beside_jobs_they_never_meet_are_measured_against_alone():
    from scenarios.analysis.tables import apart_slowdown

    # a and c never meet; b meets both. a's bursts 1-3 run beside c only, its 4th beside b
    spans = _spans([("a", 0.0, 0.1, 60.0), ("c", 0.05, 0.15, 100.0),
                    ("a", 1.0, 1.1, 66.0), ("c", 1.02, 1.1, 100.0),
                    ("a", 2.0, 2.1, 54.0), ("c", 2.05, 2.2, 100.0),
                    ("a", 3.0, 3.1, 99.0), ("b", 3.05, 3.2, 100.0),
                    ("a", 4.0, 4.1, 50.0)])  # alone: not counted
    meets = {frozenset("ab"), frozenset("bc")}
    out = apart_slowdown(spans, {"a": 50.0, "b": 80.0, "c": 50.0}, meets)
    assert out["a"] == 60.0 / 50.0  # the median of 60, 66 and 54, over alone
    assert out["b"] is None  # never beside a job it does not meet
    assert out["c"] == 2.0  # 100 beside a, three times
    # on one link every pair meets: nothing is apart
    everyone = meets | {frozenset("ac")}
    assert apart_slowdown(spans, {"a": 50.0, "c": 50.0}, everyone) == {"a": None, "c": None}
    assert apart_slowdown(spans.iloc[:0], {"a": 50.0}, meets) == {"a": None}


def test_jobs_the_machine_slowed_beside_strangers_are_advised_with_their_figures():
    advice = fidelity_advice(SOLO, 50.0, 0.97, [], 0, slowed={"near": 1.5, "far": 1.47})
    assert advice == ("beside jobs they share no link with, the bursts of near, far took longer than alone "
                      "(near 50 %, far 47 %): the machine's cores, not a link, slowed them; lower the link rates "
                      "or run fewer jobs at once")
