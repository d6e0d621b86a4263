"""A policy stopped at a target standard error: the decision (the results' own estimator, a floor of
iterations, every job), its watch (polled at most once a second, what stopped it), what the results keep."""

import time
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from scenarios.analysis.tables import batch_means_se
from scenarios.commands import run as run_command
from scenarios.errors import InputError
from scenarios.experiment import disk, drive
from scenarios.experiment.stopping import (
    CEILING,
    CHECK_INTERVAL_S,
    MIN_ITERATIONS,
    TARGET,
    PolicyStop,
    TargetSE,
    read_rows,
)
from scenarios.summary_record import PolicySummary, Stop, SummaryRecord
from scenarios.timescale import in_scenario_units

pytestmark = pytest.mark.xdist_group("serial")  # times a stop: one at a time (make test)


def driver_rows(job: str, iteration_ms: list[float], workers=("h1", "h3")) -> pd.DataFrame:
    """A driver's rows, one per worker and iteration, iterations back to back from t = 100 s."""
    rows, start = [], 100.0
    for k, ms in enumerate(iteration_ms):
        end = start + ms / 1000
        rows += [{"job": job, "worker": w, "iteration": k, "start": start, "comm_start": start + 0.01,
                  "comm_end": end, "end": end, "bytes": 1000, "policy": "none"} for w in workers]
        start = end
    return pd.DataFrame(rows)


def noisy(mean_ms: float, sd_ms: float, n: int, seed: int = 0) -> list[float]:
    return list(np.random.default_rng(seed).normal(mean_ms, sd_ms, n))


def test_the_standard_error_is_the_results_batch_means_of_the_steady_iterations():
    times = noisy(300, 20, 31)
    se = TargetSE(2.0).se_pct(driver_rows("a", times))["a"]
    steady = np.array(times[1:])  # the warm-up iteration skipped, as job_means skips it
    assert se == pytest.approx(100 * batch_means_se(steady) / steady.mean())


def test_no_stop_below_the_floor_of_iterations_however_steady():
    rule = TargetSE(5.0)
    few = rule.se_pct(driver_rows("a", [300.0] * MIN_ITERATIONS))  # the warm-up leaves one short of the floor
    assert few == {"a": None} and not rule.reached(few, ["a"])
    enough = rule.se_pct(driver_rows("a", noisy(300, 1, MIN_ITERATIONS + 1)))
    assert enough["a"] is not None and rule.reached(enough, ["a"])


def test_every_job_must_reach_the_target_and_a_missing_job_has_not():
    rows = pd.concat([driver_rows("a", noisy(300, 1, 40)), driver_rows("b", noisy(500, 150, 40, seed=1))])
    rule = TargetSE(1.0)
    se = rule.se_pct(rows)
    assert se["a"] < 1.0 < se["b"]
    assert not rule.reached(se, ["a", "b"])
    assert rule.reached(se, ["a"]) and not rule.reached(se, ["a", "c"])
    assert TargetSE(se["b"] + 0.01).reached(se, ["a", "b"])  # at most the target: reached


def test_the_watch_reads_at_most_once_a_second_and_stays_stopped():
    reads = []
    rows = driver_rows("a", noisy(300, 1, 30))
    watch = PolicyStop(TargetSE(2.0), ["a"], epoch_s=1000.0, ceiling_s=12.0)

    def read():
        reads.append(1)
        return rows.iloc[:0] if len(reads) == 1 else rows  # nothing measured yet at the first check

    assert not watch.poll(1001.0, read)
    assert not watch.poll(1001.0 + CHECK_INTERVAL_S / 2, read) and len(reads) == 1  # too soon: not read
    assert watch.poll(1001.0 + CHECK_INTERVAL_S, read) and len(reads) == 2
    assert watch.poll(1009.0, read) and len(reads) == 2  # stopped: no more reading
    stop = watch.outcome()
    assert stop.by == TARGET and stop.after_ms == pytest.approx((1 + CHECK_INTERVAL_S) * 1000)
    assert stop.target_se_pct == 2.0 and 0 < stop.se_pct["a"] <= 2.0


def test_a_target_never_reached_is_the_ceiling():
    watch = PolicyStop(TargetSE(0.01), ["a"], epoch_s=0.0, ceiling_s=12.0)
    assert not watch.poll(5.0, lambda: driver_rows("a", noisy(300, 30, 30)))
    stop = watch.outcome()
    assert stop.by == CEILING and stop.after_ms == 12000 and stop.se_pct["a"] > 0.01
    assert stop.phrase() == "at the ceiling, 12 s (target 0.01 % not reached)"


def test_past_the_ceiling_the_ceiling_stopped_it():
    """The drivers stop starting iterations at the ceiling and finish the one in flight: a check then
    finding the target met does not make it the target's stop."""
    watch = PolicyStop(TargetSE(2.0), ["a"], epoch_s=0.0, ceiling_s=10.0)
    assert not watch.poll(10.8, lambda: driver_rows("a", noisy(300, 1, 40)))
    assert watch.outcome().by == CEILING and watch.outcome().after_ms == 10000


def test_rows_being_written_are_left_out(tmp_path):
    full = driver_rows("a", [300.0] * 3)
    text = full.to_csv(index=False)
    (tmp_path / "a.csv").write_text(text + "a,h1,3,100.9,100.91,101.")  # a row half written
    rows = read_rows(str(tmp_path), ["a", "b"])  # b: no file yet
    assert len(rows) == len(full) and rows["end"].tolist() == pytest.approx(full["end"].tolist())
    (tmp_path / "b.csv").write_text(text.splitlines()[0] + "\n")  # a header only
    assert len(read_rows(str(tmp_path), ["a", "b"])) == len(full)
    assert read_rows(str(tmp_path), ["c"]).empty


def test_the_watch_ends_a_measurement_early(monkeypatch, tmp_path):
    fabric = SimpleNamespace(controller=SimpleNamespace(alive=lambda: True, pid=1), track=lambda pid, label: None)
    measurer = drive.Measurer(fabric, links=None, raw_dir=tmp_path, notes=drive.MeasureLog())
    monkeypatch.setattr(disk, "free_bytes", lambda path: disk.DISK_FLOOR_BYTES)
    running = {"a": SimpleNamespace(poll=lambda: None)}  # drivers that would run on
    asked = []
    t0 = time.monotonic()
    measurer._watch(running, str(tmp_path), "none", budget_s=30, stop_when=lambda: asked.append(1) or len(asked) > 2)
    assert len(asked) == 3 and time.monotonic() - t0 < 5


def test_what_stopped_a_policy_is_kept_in_the_summary_and_said():
    stop = Stop(by=TARGET, after_ms=7400.0, target_se_pct=2.0, se_pct={"a": 1.5, "b": None})
    summary = SummaryRecord(policies={"none": PolicySummary(stopped=stop), "shift": PolicySummary()})
    back = SummaryRecord.from_dict(summary.to_dict())
    assert back.policies["none"].stopped == stop and back.policies["shift"].stopped is None
    assert "stopped" not in summary.to_dict()["policies"]["shift"]  # a run without a target: no key
    assert stop.phrase() == "target 2 % reached at 7.4 s"
    assert back.stop_lines()[0].endswith("or to the ceiling: `none` target 2 % reached at 7.4 s.")
    assert SummaryRecord(policies={"none": PolicySummary()}).stop_lines() == []
    at_k4 = in_scenario_units(summary.to_dict(), 4.0)["policies"]["none"]["stopped"]  # the wire ran 4 times slower
    assert at_k4["after_ms"] == 1850.0 and at_k4["se_pct"] == {"a": 1.5, "b": None}


@pytest.mark.parametrize("text", ["0", "-1", "100", "two", "nan"])
def test_a_bad_target_is_one_line(text):
    with pytest.raises(InputError, match="^--target-se-pct: "):
        run_command.parse_target_se_pct(text)


def test_a_target_is_a_percentage():
    assert run_command.parse_target_se_pct("2.5") == 2.5 and run_command.parse_target_se_pct(None) is None


def test_the_runs_report_says_what_stopped_each_policy(tmp_path):
    import json

    from results_example import JOBS, write_example

    from scenarios.report.draw import draw_report
    from scenarios.results import REPORT_FILE, REPORT_HTML_FILE

    folder = write_example(tmp_path)
    (folder / "scenario.yaml").write_text("name: two-jobs\njobs:\n" + "".join(
        f"  - {{name: {name}, period_ms: {j['period_ms']:g}, comm_ms: {j['comm_ms']:g}}}\n" for name, j in JOBS.items()))
    summary = json.loads((folder / "summary.json").read_text())
    summary["policies"]["gate"]["stopped"] = Stop(TARGET, 7400.0, 2.0, {"a": 1.2, "b": 1.9}).to_dict()
    summary["policies"]["none"]["stopped"] = Stop(CEILING, 12000.0, 2.0, {"a": 1.2, "b": 2.4}).to_dict()
    (folder / "summary.json").write_text(json.dumps(summary))
    draw_report(folder)
    said = ("`none` at the ceiling, 12 s (target 2 % not reached); `gate` target 2 % reached at 7.4 s")
    assert said in (folder / REPORT_FILE).read_text()
    page = (folder / REPORT_HTML_FILE).read_text()
    assert "<code>gate</code> target 2 % reached at 7.4 s" in page


def test_the_runs_first_line_says_the_target():
    from scenarios.experiment.progress import plan_line

    schedule = SimpleNamespace(feasible=True, hyperperiod_ms=600.0)
    assert plan_line("s000", schedule, ("none", "shift"), 8.0, 2.0).endswith(
        "none, shift for 8 s each at most, until every job's mean is known to 2 %")
    assert plan_line("s000", schedule, ("none",), 8.0).endswith("none for 8 s each")
