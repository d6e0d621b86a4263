"""The table `shiftbed run` prints at the end: one row per policy and job."""

from dataclasses import replace
from pathlib import Path

import pytest
from results_example import MEASURED_MS, PREDICTED_MS, summary_json

from scenarios.analysis.verdict import policy_changes
from scenarios.report.terminal import print_table
from scenarios.summary_record import SummaryRecord

REPO = Path(__file__).resolve().parents[2]


def _print(summary: SummaryRecord) -> None:
    print_table(summary, Path("/r"), policy_changes(summary))


def test_the_table_gives_each_mean_with_its_standard_error_where_there_is_one(capsys):
    _print(SummaryRecord.from_dict(summary_json()))
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


def test_the_table_gives_each_policys_interval_and_verdict_and_ends_with_in_shorts_phrase(capsys):
    """The coprime run's samples (test_verdict.py): shift within the noise, gate hurting."""
    from test_verdict import ITERATION_MS, summary_of

    measured = summary_of(ITERATION_MS)  # the table prints a prediction beside each mean: any will do here
    policies = {p: replace(e, jobs={j: replace(r, predicted_iteration_ms=1.0, error_pct=0.0) for j, r in e.jobs.items()})
                for p, e in measured.policies.items()}
    _print(SummaryRecord(fidelity_ok=True, policies=policies))
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[-4:] == ["95", "%", "interval", "verdict"]
    verdict_at = next(i for i, line in enumerate(lines) if line.startswith("policies: "))
    rows = {tuple(line.split()[:2]): line for line in lines[1:verdict_at]}
    assert rows[("shift", "alpha")].endswith("+0.1%    [-1.6, +1.9] neutral")
    assert rows[("gate", "beta")].endswith("-41.2%  [-43.7, -38.7] hurts")
    assert rows[("none", "beta")].endswith("+0.0%             n/a -")
    said = " ".join(line.strip() for line in lines[verdict_at:-1])  # the verdict, wrapped; then the report's path
    assert said.startswith("policies: no policy beat `none` beyond the noise (`gate` hurt); the largest "
                           "change was `shift`, +0.1 % [-1.6, +1.9]")
    assert max(len(line) for line in lines[verdict_at:]) <= 100  # short lines in a log too


def test_json_is_one_object_with_the_summarys_verdicts_and_numbers(tmp_path):
    import json

    from results_example import write_example

    from scenarios.analysis.verdict import folder_changes, headline
    from scenarios.report.terminal import json_view
    from scenarios.results import load_results

    folder = write_example(tmp_path)
    results = load_results(folder)
    changes = folder_changes(results)
    view = json.loads(json.dumps(json_view(results.summary, folder, changes)))
    assert list(view) == ["results_dir", "time_scale", "fidelity_ok", "complete", "crosschecks", "policies", "policy_verdict",
                          "gaps"]
    written = json.loads((folder / "summary.json").read_text())
    assert view["results_dir"] == str(folder) and view["policy_verdict"] == headline(changes)
    assert view["time_scale"] == 1
    same = ("fidelity_ok", "complete", "crosschecks", "gaps")
    assert {key: view[key] for key in same} == {key: written[key] for key in same}
    added = ("throughput_change_vs_none_ci95", "throughput_verdict", "duration_to_tell_s")
    for policy, entry in view["policies"].items():  # the summary's entry, and the change's interval and verdict
        assert {k: v for k, v in entry.items() if k not in added} == written["policies"][policy]
        assert {k: entry[k] for k in added} == changes[policy].to_json()
    assert view["policies"]["gate"]["throughput_verdict"] == "helps"
    assert view["policies"]["none"]["throughput_change_vs_none_ci95"] is None


@pytest.mark.parametrize("as_json", [False, True])
def test_after_the_run_the_command_prints_its_table_or_one_json_object(as_json, tmp_path, monkeypatch, capsys):
    """Everything `shiftbed run` does once the experiment has written its folder (no fabric built)."""
    import argparse
    import json

    from results_example import write_example

    from apps import iperf
    from scenarios.commands import run as run_command
    from scenarios.experiment import runner, session

    folder = write_example(tmp_path / "results")
    # an iperf3 that keeps a burst's time: a newer one adds its transport notice (test_burst_transport.py)
    monkeypatch.setattr(iperf, "installed_version", lambda: (3, 12))
    monkeypatch.setattr(session.os, "geteuid", lambda: 0)
    monkeypatch.setattr(session, "preflight", lambda: None)
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
    _print(SummaryRecord.from_dict(data))
    rows = {tuple(line.split()[:2]): line for line in capsys.readouterr().out.splitlines()[1:-2]}
    assert rows[("none", "a")].endswith("together 460 / apart 384 ms, 25% apart")
    assert "apart" not in rows[("none", "b")]
