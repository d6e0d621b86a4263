"""`shiftbed compare`: one table across runs, scenarios and policies, from results folders of any format read."""

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import results_example as ex
from results_format1 import FORMAT_1, write_format1_example

from apps.iterations import iteration_table
from scenarios.analysis import compare
from scenarios.analysis.tables import job_means
from scenarios.errors import InputError
from scenarios.report.compare import draw_compare
from scenarios.results import load_results
from scenarios.summary_record import FORMAT

REPO = Path(__file__).resolve().parents[2]


def test_one_row_per_policy_and_job_with_the_summarys_figures(tmp_path):
    results = load_results(ex.write_example(tmp_path))
    table = compare.compare_table([results])
    assert list(table.columns) == list(compare.COLUMNS)
    assert list(zip(table["policy"], table["job"], strict=True)) == [
        (p, j) for p in ("none", "shift", "gate") for j in ("a", "b")]
    gate_b = table[(table["policy"] == "gate") & (table["job"] == "b")].iloc[0]
    assert gate_b["measured_iteration_ms"] == ex.MEASURED_MS["gate"]["b"]
    assert gate_b["predicted_iteration_ms"] == ex.PREDICTED_MS["gate"]["b"]
    assert gate_b["error_pct"] == pytest.approx(ex.error_pct("gate", "b"))
    assert gate_b["measured_se_ms"] == 6.5  # the summary's own
    assert gate_b["throughput_change_vs_none_pct"] == ex.GATE_CHANGE_PCT
    assert gate_b["throughput_change_low_pct"] < ex.GATE_CHANGE_PCT < gate_b["throughput_change_high_pct"]
    assert gate_b["format"] == FORMAT and gate_b["fidelity_ok"] and gate_b["complete"]
    none = table[table["policy"] == "none"]
    assert (none["throughput_change_vs_none_pct"] == 0).all() and none["throughput_change_low_pct"].isna().all()


def test_a_format_1_folder_gives_the_same_rows_its_standard_errors_from_iterations_csv(tmp_path):
    old = load_results(write_format1_example(tmp_path / "old"))
    assert old.summary.format == FORMAT_1
    table = compare.compare_table([old])
    assert set(table["format"]) == {FORMAT_1} and len(table) == 6
    it = old.iterations[old.iterations["policy"] == "shift"]
    expected_se = job_means(iteration_table(it))["a"]["iteration_se_ms"]
    shift_a = table[(table["policy"] == "shift") & (table["job"] == "a")].iloc[0]
    assert expected_se is not None and shift_a["measured_se_ms"] == pytest.approx(expected_se)
    assert shift_a["throughput_change_low_pct"] < ex.SHIFT_CHANGE_PCT < shift_a["throughput_change_high_pct"]
    assert table["predicted_throughput_change_vs_none_pct"].isna().sum() == 4  # format 1 did not record it


def test_a_run_folder_a_scenario_folder_and_a_results_root_are_all_accepted(tmp_path):
    first = write_format1_example(tmp_path / "results")
    second = ex.write_example(tmp_path / "results")
    (second.parent / ".20261201T000000Z.partial").mkdir()  # a run still writing is left out
    assert compare.run_folders(second) == [second]
    assert compare.run_folders(second.parent) == [first, second]
    assert compare.run_folders(tmp_path / "results") == [first, second]
    assert [r.path for r in compare.load_runs([second, second.parent])] == [second, first]  # each run once


@pytest.mark.parametrize("make", [lambda p: p / "missing", lambda p: (p / "empty").mkdir() or p / "empty",
                                  lambda p: (p / "f.txt").write_text("x") and p / "f.txt"])
def test_a_folder_that_holds_no_run_is_one_line_naming_it(tmp_path, make):
    path = make(tmp_path)
    with pytest.raises(InputError, match=str(path)) as caught:
        compare.run_folders(path)
    assert "\n" not in str(caught.value)


def test_the_figure_is_drawn_again_byte_for_byte(tmp_path):
    runs = [load_results(write_format1_example(tmp_path / "r", fidelity_ok=False)),
            load_results(ex.write_example(tmp_path / "r"))]
    table = compare.compare_table(runs)
    first, second = draw_compare(table, tmp_path / "a.png"), draw_compare(table, tmp_path / "b.png")
    assert first.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and first.read_bytes() == second.read_bytes()


def shiftbed(*args, cwd=REPO):
    return subprocess.run([sys.executable, "-m", "scenarios.cli", "compare", *map(str, args)],
                          capture_output=True, text=True, timeout=120, cwd=cwd)


def test_the_command_writes_csv_parquet_and_a_plot_and_prints_its_rows_as_json(tmp_path):
    old = write_format1_example(tmp_path / "results")
    new = ex.write_example(tmp_path / "results")
    out = tmp_path / "out"
    done = shiftbed(old, new.parent, "--json", "--out", out)
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)["rows"]  # the whole of stdout is one object
    assert len(rows) == 12 and {r["run"] for r in rows} == {old.name, new.name}
    csv = pd.read_csv(out / "compare.csv")
    parquet = pd.read_parquet(out / "compare.parquet")
    assert list(parquet.columns) == list(compare.COLUMNS) and len(parquet) == len(csv) == 12
    assert parquet["measured_iteration_ms"].tolist() == csv["measured_iteration_ms"].tolist()
    assert rows[0]["throughput_change_low_pct"] is None and rows[-1]["throughput_change_low_pct"] is not None
    assert (out / "compare.png").stat().st_size > 10_000


def test_the_command_without_json_prints_a_table_naming_each_run(tmp_path):
    new = ex.write_example(tmp_path / "results", fidelity_ok=False)
    done = shiftbed(new, "--out", tmp_path / "out")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split()[:3] == ["scenario", "run", "fidelity"] and len(lines) == 8
    assert all("LOST" in line for line in lines[1:7]) and "[" in lines[-2]


def test_a_dir_that_is_no_results_folder_exits_2_in_one_line_writing_nothing(tmp_path):
    good = ex.write_example(tmp_path / "results")
    (tmp_path / "notes").mkdir()
    done = shiftbed(good, tmp_path / "notes", "--out", tmp_path / "out")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and str(tmp_path / "notes") in done.stderr
    assert not (tmp_path / "out").exists()


def test_the_tables_schema_is_the_same_whatever_the_runs_hold(tmp_path):
    """A run without `none` has no throughput figures at all: the columns keep their types."""
    folder = ex.write_example(tmp_path)
    summary = json.loads((folder / "summary.json").read_text())
    del summary["policies"]["none"]
    for entry in summary["policies"].values():
        entry.pop("throughput_change_vs_none_pct", None)
    (folder / "summary.json").write_text(json.dumps(summary))
    table = compare.compare_table([load_results(folder)])
    assert table["throughput_change_vs_none_pct"].isna().all() and table["throughput_change_low_pct"].isna().all()
    assert all(table[c].dtype == "float64" for c in compare.FIGURES) and table["iterations"].dtype == "Int64"
    table.to_parquet(tmp_path / "t.parquet")
    assert pd.read_parquet(tmp_path / "t.parquet").dtypes.equals(table.dtypes)
