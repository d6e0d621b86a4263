"""`shiftbed report`: plots and report.md from a results folder alone, identical on redraw."""

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import matplotlib
import pytest
from results_example import (
    GATE_CHANGE_PCT,
    MEASURED_MS,
    PREDICTED_MS,
    SHIFT_CHANGE_PCT,
    error_pct,
    write_example,
)

from scenarios.errors import InputError
from scenarios.report import plots
from scenarios.report.draw import draw_report
from scenarios.results import PLOTS_DIR, REPORT_FILE, REPORT_HTML_FILE, ResultsWriter, load_results

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
SHIFTBED = Path(sys.executable).parent / "shiftbed"  # the venv's editable entry point
ALL_PLOTS = [plots.BANDWIDTH_PNG, plots.ITERATION_TIMES_PNG, plots.PREDICTION_PNG, plots.SCHEDULE_PNG]


def _data_only_copy(folder: Path, destination: Path) -> Path:
    """The folder as a run leaves its data: no plots, no report."""
    shutil.copytree(folder, destination, ignore=shutil.ignore_patterns(PLOTS_DIR, REPORT_FILE, REPORT_HTML_FILE))
    return destination


@pytest.fixture(scope="module")
def drawn(tmp_path_factory) -> list[Path]:
    """The example folder, drawn once for the tests that only read what was drawn."""
    return draw_report(write_example(tmp_path_factory.mktemp("drawn")))


def test_draw_report_writes_every_plot_as_a_real_png_and_the_report(drawn):
    paths = drawn
    assert [p.name for p in paths] == [*ALL_PLOTS, REPORT_HTML_FILE, REPORT_FILE]
    for path in paths[:-2]:
        data = path.read_bytes()
        assert data.startswith(PNG_SIGNATURE), path
        assert len(data) > 15_000, f"{path.name}: {len(data)} bytes, suspiciously empty"
    report = paths[-1].read_text()
    for name in ALL_PLOTS:
        assert f"]({PLOTS_DIR}/{name})" in report


def test_report_states_the_numbers_of_the_folder(drawn):
    report = drawn[-1].read_text()
    # the example's gain is clear: gate's whole interval is above the 1 % threshold (test_verdict.py)
    assert f"- Policies: `gate` helps: +{GATE_CHANGE_PCT:.1f} % [" in report
    none_ms, shift_ms = PREDICTED_MS["none"], PREDICTED_MS["shift"]
    predicted_shift_pct = sum(none_ms[j] / shift_ms[j] - 1 for j in none_ms) / len(none_ms) * 100
    assert re.search(rf"\| shift \| \+{SHIFT_CHANGE_PCT:.1f} % \| \[\+[0-9.]+, \+[0-9.]+\] \| helps "
                     rf"\| \+{predicted_shift_pct:.1f} % \|", report)
    errors = [abs(error_pct(p, j)) for p in MEASURED_MS for j in MEASURED_MS[p]]
    assert f"max |error| {max(errors):.1f} %, mean |error| {sum(errors) / len(errors):.1f} %" in report
    assert "| a – b | 100 | 70 | yes |" in report
    assert "**Feasible**" in report
    assert "FIDELITY LOST" not in report and "INCOMPLETE" not in report


def _drawn_bytes(folder: Path) -> dict[str, bytes]:
    """The plots and report.md as drawn (report.html names its folder and takes fresh Bokeh ids each time)."""
    return {p.name: p.read_bytes() for p in draw_report(folder) if p.name != REPORT_HTML_FILE}


def test_a_redraw_from_the_data_alone_is_byte_identical(tmp_path):
    folder = write_example(tmp_path / "run")
    first = _drawn_bytes(folder)
    with matplotlib.rc_context({"axes.facecolor": "red", "font.size": 20, "savefig.dpi": 300}):
        again = _drawn_bytes(folder)  # a user's matplotlibrc
    copy = _data_only_copy(folder, tmp_path / "elsewhere" / folder.name)
    from_copy = _drawn_bytes(copy)
    assert first == again
    assert first == from_copy


def test_lost_fidelity_is_the_first_thing_the_report_says(tmp_path):
    report = Path(draw_report(write_example(tmp_path, fidelity_ok=False))[-1]).read_text()
    first_paragraph = report.split("\n\n")[1]
    assert "FIDELITY LOST" in first_paragraph
    assert "71 %" in first_paragraph  # the measured solo rate ratio
    assert "lower link_mbps to 10" in report  # the run's own advice
    assert "jumbo frames" in report and "lower the link rate" in report and "fewer" in report


def test_a_job_that_could_not_keep_its_period_alone_is_in_the_fidelity_warning(tmp_path):
    folder = _data_only_copy(write_example(tmp_path / "run"), tmp_path / "overrun")
    summary = json.loads((folder / "summary.json").read_text())
    summary["fidelity_ok"] = False
    summary["fidelity"].update(overrun_jobs=["b"], advice="alone, b could not keep their periods (...)")
    (folder / "summary.json").write_text(json.dumps(summary))
    first_paragraph = Path(draw_report(folder)[-1]).read_text().split("\n\n")[1]
    assert "FIDELITY LOST" in first_paragraph
    assert "Solo bursts at the scenario's size reached 97 %" in first_paragraph
    assert "alone, b could not keep their periods." in first_paragraph


def test_a_drift_in_the_machines_speed_is_reported_and_named_beyond_calibrations_tolerance(tmp_path):
    folder = _data_only_copy(write_example(tmp_path / "run"), tmp_path / "drift")
    summary = json.loads((folder / "summary.json").read_text())
    summary["fidelity"].update(speed_drift_pct_of_period={"a": 2.54, "b": -0.4}, drifted=["a"], drift_max_pct=2.0)
    (folder / "summary.json").write_text(json.dumps(summary))
    report = Path(draw_report(folder)[-1]).read_text()
    assert "than its solo bursts in calibration, as a share of its period: a +2.5 %, b -0.4 %;" in report
    assert "**a drifted by more than 2 %**" in report
    summary["fidelity"].update(speed_drift_pct_of_period={"a": 0.5, "b": None}, drifted=[])
    (folder / "summary.json").write_text(json.dumps(summary))
    report = Path(draw_report(folder)[-1]).read_text()
    assert "as a share of its period: a +0.5 %." in report and "drifted by more than" not in report


def test_an_incomplete_run_is_reported_first_and_still_drawn(tmp_path):
    with pytest.raises(KeyboardInterrupt):
        with ResultsWriter(tmp_path, "demo") as writer:
            writer.write_text("scenario.yaml", "name: demo\n")
            raise KeyboardInterrupt
    paths = draw_report(writer.final_dir)
    assert all(p.read_bytes().startswith(PNG_SIGNATURE) for p in paths[:-2])
    report = paths[-1].read_text()
    assert report.split("\n\n")[1].startswith("> **⚠ INCOMPLETE RUN: interrupted (Ctrl-C).**")


def test_an_infeasible_pair_is_explained_by_gcd_versus_comm_sum(tmp_path):
    folder = _data_only_copy(write_example(tmp_path / "run"), tmp_path / "infeasible")
    schedule = json.loads((folder / "schedule.json").read_text())
    schedule.update(hyperperiod_ms=10403.0, feasible=False, overlap_ms=1234.0)
    schedule["jobs"][0]["period_ms"], schedule["jobs"][1]["period_ms"] = 101.0, 103.0
    schedule["pairs"][0].update(gcd_ms=1.0, separable=False)
    (folder / "schedule.json").write_text(json.dumps(schedule))
    report = Path(draw_report(folder)[-1]).read_text()
    assert "**Infeasible** (a – b: gcd 1 ms < 70 ms of bursts)" in report
    assert "1234 ms of pairwise overlap" in report
    assert "nearly coprime" in report


def test_bursts_on_the_wire_are_tabled_beside_the_solo_bursts(drawn):
    report = drawn[-1].read_text()
    assert "| solo | b | 9.0 | 14.0 | 33.0 |" in report
    assert "| gate | b | 9.5 | 16.0 | 36.0 |" in report
    assert "later than alone" not in report  # every pair is within the goal


def test_a_knife_edge_is_marked_in_the_table_and_named_under_it(drawn):
    # by hand from results_example: iterations int(3000 / 202) x 2 workers = 28 and int(3000 / 101) x 2
    # = 58; errors (202 - 200) / 200 = (101 - 100) / 100 = +1.0 %; the mean |error| over the six rows,
    # (300/115 + 600/220 + 200/110 + 400/215 + 1 + 1) / 6 = (2.61 + 2.73 + 1.82 + 1.86 + 1 + 1) / 6 = 1.8 %
    report = drawn[-1].read_text()
    assert "| gate | b | 28 | 202.0 ± 6.5 | 200.0 | **200.0–260.0** (knife edge) | 200.0 | +1.0 % |" in report
    assert "| gate | a | 58 | 101.0 | 100.0 | 100.0–102.0 | 100.0 | +1.0 % |" in report
    assert "On a knife edge: `b` under `gate` (200.0–260.0 ms, measured 202.0)." in report
    assert "mean |error| 1.8 %; 1 on a knife edge" in report  # the verdict in the summary at the top


def test_a_folder_from_before_model_ranges_is_drawn_with_n_a(tmp_path):
    folder = _data_only_copy(write_example(tmp_path / "run"), tmp_path / "old")
    summary = json.loads((folder / "summary.json").read_text())
    for entry in summary["policies"].values():
        for job in entry["jobs"].values():
            del job["predicted_range_ms"], job["knife_edge"]
            job.pop("iteration_se_ms", None)  # older still: no standard error either
    (folder / "summary.json").write_text(json.dumps(summary))
    report = Path(draw_report(folder)[-1]).read_text()
    assert "| gate | b | 28 | 202.0 | 200.0 | n/a | 200.0 | +1.0 % |" in report
    assert "(knife edge)" not in report and "On a knife edge" not in report


def test_a_miss_with_late_starting_flows_says_so(tmp_path):
    folder = _data_only_copy(write_example(tmp_path / "run"), tmp_path / "late")
    summary = json.loads((folder / "summary.json").read_text())
    b = summary["policies"]["gate"]["jobs"]["b"]
    b.update(mean_iteration_ms=260.0, error_pct=30.0, burst_all_flows_ms=40.0)
    summary["policies"]["shift"]["jobs"]["a"].update(error_pct=-12.0, burst_all_flows_ms=14.0)  # only 2 ms late
    (folder / "summary.json").write_text(json.dumps(summary))
    report = Path(draw_report(folder)[-1]).read_text()
    assert ("`b` under `gate` (+30.0 %): its bursts had every flow going 26.0 ms later than alone "
            "(median 40.0 vs 14.0 ms after launch)") in report
    assert "`a` under `shift`" not in report


def test_overlap_intervals_find_where_two_jobs_are_busy_at_once():
    busy = {"a": [(0.0, 30.0), (100.0, 130.0)], "b": [(20.0, 60.0)], "c": [(130.0, 140.0)]}
    assert plots.overlap_intervals(busy) == [(20.0, 30.0)]  # touching at 130 is not overlap


def test_draw_report_on_a_folder_that_is_not_results_raises_input_error(tmp_path):
    with pytest.raises(InputError, match="not a shiftbed results folder"):
        draw_report(tmp_path)


@pytest.mark.parametrize("make", [lambda p: p / "x", lambda p: p])
def test_shiftbed_report_on_a_non_results_folder_exits_2_with_one_line(tmp_path, make):
    result = subprocess.run([str(SHIFTBED), "report", str(make(tmp_path))],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert result.stderr.startswith("shiftbed report: ")


def test_shiftbed_report_json_prints_one_object_naming_what_it_drew(tmp_path):
    folder = write_example(tmp_path)
    result = subprocess.run([str(SHIFTBED), "report", str(folder), "--json"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)
    assert answer["report"] == str(folder / REPORT_FILE)
    assert answer["html"] == str(folder / REPORT_HTML_FILE)
    assert [Path(p).name for p in answer["plots"]] == ALL_PLOTS


def test_a_job_whose_solo_rate_could_not_be_measured_is_named_not_called_zero(tmp_path):
    folder = write_example(tmp_path, fidelity_ok=False)
    summary = json.loads((folder / "summary.json").read_text())
    summary["fidelity"].update(solo_rate_ratio=None, unmeasured_jobs=["beta"], advice="give it a longer comm_ms")
    (folder / "summary.json").write_text(json.dumps(summary))
    first_paragraph = Path(draw_report(folder)[-1]).read_text().split("\n\n")[1]
    assert "FIDELITY LOST" in first_paragraph
    assert "solo bursts of beta were too short to measure a rate" in first_paragraph
    assert "0 %" not in first_paragraph and "give it a longer comm_ms" in first_paragraph


def test_where_the_jobs_meet_is_in_the_report_with_what_was_captured(tmp_path):
    folder = _data_only_copy(write_example(tmp_path / "run"), tmp_path / "links")
    summary = json.loads((folder / "summary.json").read_text())
    summary["links"] = {"leaf2->spine1": {"jobs": ["a", "b"], "captured": True},
                        "spine1->leaf3": {"jobs": ["a", "b"], "captured": False, "same_flows_as": "leaf2->spine1"}}
    (folder / "summary.json").write_text(json.dumps(summary))
    report = Path(draw_report(folder)[-1]).read_text()
    assert "### Where the jobs meet" in report
    assert "| leaf2->spine1 | a, b | yes |" in report
    assert "| spine1->leaf3 | a, b | no (same flows as leaf2->spine1) |" in report
    plain = Path(draw_report(write_example(tmp_path / "plain"))[-1]).read_text()
    assert "Where the jobs meet" not in plain  # a folder without links says nothing of them


def test_solo_bursts_that_stalled_as_on_a_retransmission_timeout_are_named(tmp_path):
    folder = _data_only_copy(write_example(tmp_path / "run"), tmp_path / "stalled")
    summary = json.loads((folder / "summary.json").read_text())
    summary["fidelity"]["solo"] = {"a": {"bursts": 20, "stalled_bursts": 9}, "b": {"bursts": 20, "stalled_bursts": 0}}
    (folder / "summary.json").write_text(json.dumps(summary))
    report = Path(draw_report(folder)[-1]).read_text()
    assert "as on a TCP retransmission timeout" in report and ": a 9 of 20." in report
    summary["fidelity"]["solo"]["a"]["stalled_bursts"] = 0
    (folder / "summary.json").write_text(json.dumps(summary))
    assert "retransmission timeout" not in Path(draw_report(folder)[-1]).read_text()


def test_jobs_that_sorted_themselves_apart_are_tabled_and_named(tmp_path):
    folder = _data_only_copy(write_example(tmp_path / "run"), tmp_path / "apart")
    summary = json.loads((folder / "summary.json").read_text())
    for job, first, last, last_third_ms in (("a", 0.9, 0.05, 101.0), ("b", 0.6, 0.5, 210.0)):
        summary["policies"]["none"]["jobs"][job].update(met_share_first=first, met_share_last=last,
                                                         mean_iteration_last_third_ms=last_third_ms)
    for job in ("a", "b"):
        summary["policies"]["gate"]["jobs"][job].update(met_share_first=0.0, met_share_last=0.0)
    (folder / "summary.json").write_text(json.dumps(summary))
    report = Path(draw_report(folder)[-1]).read_text()
    assert "| none | a | 90% | 5% | 118.0 | 101.0 | 115.0 |" in report
    assert "| gate | b | 0% | 0% | 202.0 | n/a | 200.0 |" in report
    # a's share fell by 0.85, b's by only 0.1 (under MEETING_CHANGE): only a is named
    assert "Under `none` `a` met less as the run went on" in report
    assert "`b` met less" not in report and "met more" not in report


def test_no_meeting_table_without_shares_or_where_no_job_ever_met(drawn, tmp_path):
    assert "Did the jobs keep meeting?" not in drawn[-1].read_text()  # the example records no shares
    folder = _data_only_copy(write_example(tmp_path / "run"), tmp_path / "apart")
    summary = json.loads((folder / "summary.json").read_text())
    for entry in summary["policies"].values():
        for job in entry["jobs"].values():
            job.update(met_share_first=0.0, met_share_last=0.0)
    (folder / "summary.json").write_text(json.dumps(summary))
    assert "Did the jobs keep meeting?" not in Path(draw_report(folder)[-1]).read_text()


def test_a_free_running_jobs_share_apart_is_given_beside_its_prediction(tmp_path):
    folder = _data_only_copy(write_example(tmp_path / "run"), tmp_path / "parted")
    summary = json.loads((folder / "summary.json").read_text())
    summary["policies"]["none"]["jobs"]["a"].update(apart_share=0.25, predicted_together_ms=118.0,
                                                     predicted_apart_ms=106.0)
    (folder / "summary.json").write_text(json.dumps(summary))
    report = Path(draw_report(folder)[-1]).read_text()
    assert "| none | a | " in report and " | 115.0 (25% apart) | " in report
    assert "weighs them by the job's iterations before and after the jobs parted" in report
    assert report.count("% apart)") == 1  # b and the other policies have one state


def test_a_policy_without_a_prediction_is_measured_in_the_table_and_the_gap_said_in_words(tmp_path):
    folder = _data_only_copy(write_example(tmp_path / "run"), tmp_path / "gap")
    summary = json.loads((folder / "summary.json").read_text())
    gate = summary["policies"]["gate"]
    gate["prediction_unavailable"] = "RuntimeError: fluid model made no progress"
    for job in gate["jobs"].values():
        for key in ("predicted_iteration_ms", "predicted_range_ms", "knife_edge", "error_pct"):
            job.pop(key)
    (folder / "summary.json").write_text(json.dumps(summary))
    report = Path(draw_report(folder)[-1]).read_text()
    assert "| gate | b | 28 | 202.0 ± 6.5 | unavailable (the model failed) | n/a | 200.0 | n/a |" in report
    assert ("No prediction for `gate`: the model could not simulate it (RuntimeError: fluid model made no "
            "progress). Its measurement is kept above") in report
    assert f"| shift | a | {int(3000 / MEASURED_MS['shift']['a']) * 2} |" in report  # the others as ever


def test_a_run_of_pattern_jobs_reports_the_exact_schedule_and_each_phase(tmp_path):
    from scenarios import spec
    from scenarios.planning import pattern_plan

    folder = write_example(tmp_path)
    plan = pattern_plan(spec.load(Path(__file__).resolve().parents[2] / "scenarios" / "pattern-resnet50.yaml"))
    (folder / "pattern_plan.json").write_text(json.dumps(plan))
    phase = {"phase": 0, "start_ms": 79.1, "iterations": 9, "bytes": 65568.0, "waited_ms_median": 0.0,
             "launch_late_p95_ms": 0.1, "wire_start_late_p95_ms": 2.6, "capture_bytes_err_pct": 0.0,
             "within_bounds": False}
    (folder / "phases.json").write_text(json.dumps({"bounds": {"capture_bytes_err_pct": 2.0,
                                                               "wire_start_late_p95_ms": 2.0},
                                                    "policies": {"gate": {"resnet": [phase]}}}))
    draw_report(folder)
    text = (folder / REPORT_FILE).read_text()
    (pair,) = plan["pairs"]
    verdict = "yes" if pair["separable"] else "**no**"
    assert f"| resnet – beta | {pair['gcd_ms']:g} |" in text and f"| {verdict} |" in text
    assert "Pattern jobs (resnet), decided exactly" in text and "predicted from its phases' solo lengths" in text
    assert "## Each phase on the wire" in text and "| gate | resnet | 0 | 79.1 | 65568 | 0.0 | 2.60 | +0.00 % | **no** |" in text


def test_a_pattern_jobs_busy_arcs_lie_at_their_offsets_from_its_shift_and_meet_where_they_overlap():
    """Two jobs on a 400-ms hyper-period: p (200 ms, shift 10, arcs 0-20 and 100-130) twice, q (400 ms,
    shift 0) one 120-ms burst; p's arcs meet q's burst at 10-30 and 110-120 only."""
    from scenarios.schedule_record import JobSchedule, ScheduleRecord

    schedule = ScheduleRecord(1.0, 400.0, False, 30.0, "patterns",
                              (JobSchedule("p", 200.0, 50.0, 10.0), JobSchedule("q", 400.0, 120.0, 0.0)), ())
    busy = plots.busy_intervals(schedule, {"p": [(0.0, 20.0), (100.0, 30.0)], "q": [(0.0, 120.0)]})
    assert busy == {"p": [(10.0, 30.0), (110.0, 140.0), (210.0, 230.0), (310.0, 340.0)], "q": [(0.0, 120.0)]}
    assert plots.overlap_intervals(busy) == [(10.0, 30.0), (110.0, 120.0)]
    assert plots.busy_intervals(schedule)["p"] == [(10.0, 60.0), (210.0, 260.0)]  # one burst of comm_ms each


def test_the_circles_take_a_pattern_jobs_arcs_from_the_plan_and_any_other_jobs_one_burst(tmp_path):
    folder = write_example(tmp_path)
    results = load_results(folder)
    names = [j.name for j in results.schedule.jobs]
    assert plots.busy_arcs_ms(results) == {j.name: [(0.0, j.comm_ms)] for j in results.schedule.jobs}
    (folder / "pattern_plan.json").write_text(json.dumps({"jobs": [{"name": names[0], "busy_ms": [[79, 7], [121, 26]]},
                                                                    {"name": names[1], "busy_ms": None}]}))
    arcs = plots.busy_arcs_ms(load_results(folder))
    assert arcs[names[0]] == [(79.0, 7.0), (121.0, 26.0)]
    assert arcs[names[1]] == [(0.0, results.schedule.jobs[1].comm_ms)]
