"""The table `shiftbed run` prints at the end: one row per policy and job."""

from pathlib import Path

import pytest
from results_example import MEASURED_MS, PREDICTED_MS, summary_json

from scenarios.commands.run import _print_table
from scenarios.summary_record import SummaryRecord

REPO = Path(__file__).resolve().parents[2]


def test_the_table_gives_each_mean_with_its_standard_error_where_there_is_one(capsys):
    _print_table(SummaryRecord.from_dict(summary_json()), Path("/r"))
    lines = capsys.readouterr().out.splitlines()
    assert "measured ms ± se" in lines[0]
    rows = {tuple(line.split()[:2]): line for line in lines[1:] if line.split()[0] in MEASURED_MS}
    assert set(rows) == {(p, j) for p, jobs in MEASURED_MS.items() for j in jobs}
    # gate's b carries a standard error of 6.5 ms in the example; the others none
    assert f"{MEASURED_MS['gate']['b']:.1f} ± 6.5" in rows[("gate", "b")]
    assert "±" not in rows[("none", "a")]
    for (policy, job), line in rows.items():
        assert f"{PREDICTED_MS[policy][job]:.1f}" in line
    assert lines[-1] == "report: /r/report.md"


def test_json_is_one_object_with_the_summarys_verdicts_and_numbers(tmp_path):
    import json

    from results_example import write_example

    from scenarios.commands.run import _json_view
    from scenarios.results import load_results

    folder = write_example(tmp_path)
    view = json.loads(json.dumps(_json_view(load_results(folder).summary, folder)))
    assert list(view) == ["results_dir", "fidelity_ok", "complete", "crosschecks", "policies", "gaps"]
    written = json.loads((folder / "summary.json").read_text())
    assert view["results_dir"] == str(folder)
    assert {key: view[key] for key in list(view)[1:]} == {key: written[key] for key in list(view)[1:]}


@pytest.mark.parametrize("as_json", [False, True])
def test_after_the_run_the_command_prints_its_table_or_one_json_object(as_json, tmp_path, monkeypatch, capsys):
    """Everything `shiftbed run` does once the experiment has written its folder (no fabric built)."""
    import argparse
    import json

    from results_example import write_example

    from scenarios.commands import run as run_command
    from scenarios.experiment import runner

    folder = write_example(tmp_path / "results")
    monkeypatch.setattr(run_command.os, "geteuid", lambda: 0)
    monkeypatch.setattr(run_command, "preflight", lambda: None)
    monkeypatch.setattr(runner.Experiment, "run", lambda self: folder)
    parser = argparse.ArgumentParser()
    run_command.add_arguments(parser)
    argv = [str(REPO / "scenarios" / "classroom.yaml"), "--out", str(tmp_path)] + (["--json"] if as_json else [])
    assert run_command.run(parser.parse_args(argv)) == 0
    out, err = capsys.readouterr()
    display = err.splitlines()[:2]  # the run's display: its estimate first, how long it took at the end
    assert display[0].startswith("classroom: about ") and display[1].startswith("done in ")
    if as_json:
        assert json.loads(out)["results_dir"] == str(folder)  # the whole of stdout is one object
        assert err.splitlines()[2:] == [f"report: {folder / 'report.md'}"]
    else:
        assert out.splitlines()[-1] == f"report: {folder / 'report.md'}" and len(err.splitlines()) == 2


def test_a_free_running_job_shows_both_states_and_its_share_apart(capsys):
    data = summary_json()
    data["policies"]["none"]["jobs"]["a"].update(apart_share=0.25, predicted_together_ms=460.0,
                                                 predicted_apart_ms=384.0)
    _print_table(SummaryRecord.from_dict(data), Path("/r"))
    rows = {tuple(line.split()[:2]): line for line in capsys.readouterr().out.splitlines()[1:]}
    assert rows[("none", "a")].endswith("together 460 / apart 384 ms, 25% apart")
    assert "apart" not in rows[("none", "b")]
