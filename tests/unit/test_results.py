"""The results folder: written atomically, read back exactly, refused when it is not one."""

import json
import os
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from results_example import (
    EPOCHS_S,
    GATE_CHANGE_PCT,
    JOBS,
    LINK_MBPS,
    MEASURED_MS,
    PREDICTED_MS,
    PREDICTED_RANGE_MS,
    SCENARIO,
    error_pct,
    write_example,
)

from scenarios.errors import InputError
from scenarios.results import FORMAT, TABLES, ResultsWriter, finish_abandoned, load_results
from scenarios.schedule_record import schedule_record
from scenarios.throughput import throughput_change_pct


def test_loader_round_trips_what_the_writer_wrote(tmp_path):
    folder = write_example(tmp_path)
    results = load_results(folder)

    assert folder == tmp_path.resolve() / SCENARIO / "20261130T020000Z"
    assert results.complete and results.summary.incomplete_reason is None
    assert results.summary.format == FORMAT
    assert results.summary.results_dir == str(folder)
    assert results.scenario == {"name": SCENARIO, "link_mbps": LINK_MBPS}
    assert results.environment["datapath"] == "netdev"

    gate = results.summary.policies["gate"]
    assert gate.throughput_change_vs_none_pct == GATE_CHANGE_PCT
    assert gate.epoch_s == EPOCHS_S["gate"]
    assert gate.jobs["b"].mean_iteration_ms == MEASURED_MS["gate"]["b"]
    assert gate.jobs["b"].predicted_iteration_ms == PREDICTED_MS["gate"]["b"]
    assert gate.jobs["b"].error_pct == pytest.approx(error_pct("gate", "b"))
    assert gate.jobs["b"].predicted_range_ms == PREDICTED_RANGE_MS["gate"]["b"]
    assert gate.jobs["b"].knife_edge is True and gate.jobs["a"].knife_edge is False

    schedule = results.schedule
    assert [j.name for j in schedule.jobs] == list(JOBS)
    assert schedule.job("b").shift_ms == JOBS["b"]["shift_ms"]
    assert schedule.pairs[0].gcd_ms == 100 and schedule.pairs[0].separable

    for table, name in [(results.iterations, "iterations.csv"), (results.windows, "windows.csv"),
                        (results.link_bandwidth, "link_bandwidth.csv"),
                        (results.port_stats, "port_stats.csv")]:
        assert list(table.columns[: len(TABLES[name])]) == list(TABLES[name])
        assert len(table) > 0
    # 3 s at 100 ms per 10 ms bin: job a busy 3 bins in 10, job b 4 in 20, for 3 policies
    assert len(results.link_bandwidth) == 3 * (90 + 60)
    gate_rows = results.link_bandwidth[results.link_bandwidth["policy"] == "gate"]
    assert gate_rows["mbps"].max() == LINK_MBPS
    assert set(results.windows["policy"]) == {"shift", "gate"}


def test_each_csv_reads_with_one_plain_read_csv(tmp_path):
    folder = write_example(tmp_path)
    for name, columns in TABLES.items():
        frame = pd.read_csv(folder / name)
        assert list(frame.columns) == list(columns)


def test_writing_happens_in_a_hidden_partial_folder_then_renames(tmp_path):
    writer = ResultsWriter(tmp_path, "demo", timestamp="20260101T000000Z")
    assert writer.partial_dir.name == ".20260101T000000Z.partial" and writer.partial_dir.is_dir()
    assert not writer.final_dir.exists()
    writer.write_json("summary.json", {"scenario": "demo", "policies": {}})
    final = writer.finish(complete=False, reason="test")
    assert final.is_dir() and not writer.partial_dir.exists()
    assert writer.finish() == final  # finishing twice is harmless
    assert sorted(p.name for p in (tmp_path / "demo").iterdir()) == ["20260101T000000Z"]


def test_two_runs_in_the_same_second_get_distinct_folders(tmp_path):
    first = ResultsWriter(tmp_path, "demo", timestamp="20260101T000000Z").finish(False, "x")
    second = ResultsWriter(tmp_path, "demo", timestamp="20260101T000000Z").finish(False, "x")
    assert first != second and first.is_dir() and second.is_dir()


def test_rows_are_on_disk_as_soon_as_they_are_appended(tmp_path):
    writer = ResultsWriter(tmp_path, "demo")
    row = {"policy": "none", "job": "a", "worker": "w0", "iteration": 0, "start": 1.0,
           "comm_start": 1.05, "comm_end": 1.08, "end": 1.1, "bytes": 75000}
    writer.append_rows("iterations.csv", [row])
    writer.append_rows("iterations.csv", [{**row, "iteration": 1}])
    on_disk = pd.read_csv(writer.partial_dir / "iterations.csv")  # before finish()
    assert on_disk["iteration"].tolist() == [0, 1]
    writer.finish(False, "test")


@pytest.mark.parametrize("exception, reason", [
    (KeyboardInterrupt(), "interrupted (Ctrl-C)"),
    (RuntimeError("ovs-vswitchd died"), "RuntimeError: ovs-vswitchd died"),
])
def test_an_interrupted_run_still_leaves_a_renamed_incomplete_folder(tmp_path, exception, reason):
    row = {"policy": "none", "job": "a", "worker": "w0", "iteration": 0, "start": 1.0,
           "comm_start": 1.05, "comm_end": 1.08, "end": 1.1, "bytes": 75000}
    with pytest.raises(type(exception)):
        with ResultsWriter(tmp_path, "demo", timestamp="20260101T000000Z") as writer:
            writer.write_text("scenario.yaml", "name: demo\n")
            writer.append_rows("iterations.csv", [row])
            raise exception
    folder = tmp_path.resolve() / "demo" / "20260101T000000Z"
    assert not writer.partial_dir.exists()
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["complete"] is False and summary["incomplete_reason"] == reason
    assert summary["fidelity_ok"] is False
    results = load_results(folder)
    assert len(results.iterations) == 1 and results.schedule is None
    assert results.windows.empty and list(results.windows.columns) == list(TABLES["windows.csv"])


def test_claiming_completeness_without_the_files_is_recorded_as_incomplete(tmp_path):
    writer = ResultsWriter(tmp_path, "demo")
    writer.write_text("scenario.yaml", "name: demo\n")
    folder = writer.finish(complete=True)
    summary = load_results(folder).summary
    assert not summary.complete
    assert "iterations.csv" in summary.incomplete_reason


def test_a_table_without_its_schema_columns_is_refused(tmp_path):
    writer = ResultsWriter(tmp_path, "demo")
    with pytest.raises(ValueError, match="mbps"):
        writer.write_table("link_bandwidth.csv", pd.DataFrame({"policy": ["none"], "link": ["l"],
                                                               "t_s": [0.0], "job": ["a"]}))
    writer.finish(False, "test")


def test_json_has_no_nan_and_no_numpy_types(tmp_path):
    writer = ResultsWriter(tmp_path, "demo")
    path = writer.write_json("extra.json", {"x": float("nan"), "n": np.int64(3), "f": np.float64(0.5),
                                           "v": np.array([1.5, np.inf]), "b": np.bool_(True)})
    assert json.loads(path.read_text()) == {"x": None, "n": 3, "f": 0.5, "v": [1.5, None], "b": True}
    writer.finish(False, "test")


def test_job_names_stay_labels_even_when_they_look_like_numbers(tmp_path):
    writer = ResultsWriter(tmp_path, "demo")
    writer.write_table("windows.csv", pd.DataFrame({"policy": ["gate"], "job": ["1"],
                                                    "open_s": [0.0], "close_s": [0.03]}))
    windows = load_results(writer.finish(False, "test")).windows
    assert windows["job"].tolist() == ["1"]


def test_the_partial_folder_of_a_killed_run_is_finished_as_incomplete(tmp_path):
    writer = ResultsWriter(tmp_path, "demo")  # the run was SIGKILLed: finish() never ran
    writer.append_rows("iterations.csv", [{"policy": "none", "job": "a", "worker": "h1", "iteration": 0,
                                           "start": 1.0, "comm_start": 1.2, "comm_end": 1.3, "end": 1.3,
                                           "bytes": 10}])
    final = finish_abandoned(writer.partial_dir, "killed")
    assert final == writer.final_dir and not writer.partial_dir.exists()
    results = load_results(final)
    assert results.summary.complete is False and results.summary.incomplete_reason == "killed"
    assert len(results.iterations) == 1
    assert finish_abandoned(writer.partial_dir, "killed") is None  # idempotent: nothing left to finish
    assert finish_abandoned(final, "killed") is None  # a finished folder is never touched


def test_a_table_with_a_header_and_no_rows_reads_as_empty_numbers(tmp_path):
    writer = ResultsWriter(tmp_path, "demo")  # e.g. windows.csv of a run with only `none`
    writer.write_table("windows.csv", pd.DataFrame(columns=list(TABLES["windows.csv"])))
    windows = load_results(writer.finish(False, "test")).windows
    assert windows.empty and list(windows.columns) == list(TABLES["windows.csv"])
    assert pd.api.types.is_float_dtype(windows["open_s"]) and pd.api.types.is_string_dtype(windows["job"])


@pytest.mark.parametrize("make, message", [
    (lambda p: p / "missing", "no such results folder"),
    (lambda p: p, "not a shiftbed results folder"),
    (lambda p: (p / "summary.json").write_text('{"hello": 1}') and p, "not a shiftbed summary"),
    (lambda p: (p / "summary.json").write_text("{") and p, "unreadable JSON"),
])
def test_a_folder_that_is_not_a_results_folder_is_one_clear_line(tmp_path, make, message):
    with pytest.raises(InputError, match=message) as caught:
        load_results(make(tmp_path))
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("edit, message", [
    (lambda f: (f / "summary.json").write_text('{"complete": true, "policies": {"gate": 3}}'),
     "policies: not in the shiftbed summary form"),
    (lambda f: (f / "windows.csv").write_text("policy,job,open_s,close_s\ngate,a,soon,later\n"),
     "column 'open_s' must hold numbers"),
    (lambda f: (f / "schedule.json").write_text('{"quantum_ms": 1}'), "not a shiftbed schedule"),
])
def test_a_damaged_results_folder_is_one_clear_line(tmp_path, edit, message):
    folder = write_example(tmp_path)
    edit(folder)
    with pytest.raises(InputError, match=message) as caught:
        load_results(folder)
    assert "\n" not in str(caught.value)


def test_a_complete_run_missing_a_table_is_refused(tmp_path):
    folder = write_example(tmp_path)
    (folder / "windows.csv").unlink()
    with pytest.raises(InputError, match="windows.csv"):
        load_results(folder)


def test_schedule_record_states_gcd_and_comm_sum_per_pair():
    jobs = [SimpleNamespace(name="a", period_ms=100.0, comm_ms=20.0),
            SimpleNamespace(name="b", period_ms=150.0, comm_ms=25.0),
            SimpleNamespace(name="c", period_ms=103.0, comm_ms=10.0)]
    schedule = SimpleNamespace(jobs=jobs, quantum_ms=1.0, shifts_ms={"a": 0.0, "b": 20.0, "c": 50.0},
                               hyperperiod_ms=30900.0, feasible=False, overlap_ms=12.0, method="exact")
    record = schedule_record(schedule, solo={"a": (99.6, 19.8)})
    assert record["jobs"][0]["solo_period_ms"] == 99.6 and "solo_period_ms" not in record["jobs"][1]
    pairs = {(p["a"], p["b"]): (p["gcd_ms"], p["comm_sum_ms"], p["separable"]) for p in record["pairs"]}
    assert pairs == {("a", "b"): (50.0, 45.0, True), ("a", "c"): (1.0, 30.0, False),
                     ("b", "c"): (1.0, 35.0, False)}


def test_throughput_change_is_the_mean_per_job_rate_change():
    # a: 100 -> 80 ms is +25 % iterations/s; b: 200 -> 250 ms is -20 %
    assert throughput_change_pct({"a": 80.0, "b": 250.0}, {"a": 100.0, "b": 200.0}) == pytest.approx(2.5)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root: only root can give files away")
def test_under_sudo_the_folder_goes_to_the_invoking_user(tmp_path, monkeypatch):
    monkeypatch.setenv("SUDO_UID", "65534")
    monkeypatch.setenv("SUDO_GID", "65534")
    writer = ResultsWriter(tmp_path / "results", "demo")
    writer.write_text("scenario.yaml", "name: demo\n")
    folder = writer.finish(False, "test")
    owned = [tmp_path / "results", folder.parent, folder, folder / "scenario.yaml", folder / "plots"]
    assert {p.stat().st_uid for p in owned} == {65534}
    assert tmp_path.stat().st_uid == 0  # what existed before is left alone
