"""The exit status: 0 measured with fidelity, 1 fault, 2 bad input, 3 fidelity lost, 4 results kept but a
prediction missing, 130 interrupted."""

import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
import results_example

from scenarios import exitcodes, runnable
from scenarios.commands import demo
from scenarios.commands import run as run_command
from scenarios.experiment import session
from scenarios.experiment.session import SessionResult
from scenarios.report import terminal
from scenarios.summary_record import Gap, PolicySummary, SummaryRecord

REPO = Path(__file__).resolve().parents[2]
GAP = Gap(policy="gate", job="a", worker="h1", message="iperf3 exited -9", iterations_kept=3)
UNPREDICTED = {"none": PolicySummary(), "gate": PolicySummary(prediction_unavailable="RuntimeError: no progress")}


@pytest.mark.parametrize("summary, code", [
    (SummaryRecord(complete=True, fidelity_ok=True), 0),
    (SummaryRecord(complete=True, fidelity_ok=False), 3),
    (SummaryRecord(complete=False, fidelity_ok=True, gaps=(GAP,)), 1),
    (SummaryRecord(complete=False, fidelity_ok=False, gaps=(GAP,)), 1),  # the fault is said first
    (SummaryRecord(complete=False, fidelity_ok=True, incomplete_reason="files not written: windows.csv"), 1),
    (SummaryRecord(complete=True, fidelity_ok=True, policies=UNPREDICTED), 4),
    (SummaryRecord(complete=True, fidelity_ok=False, policies=UNPREDICTED), 3),  # not the scenario's figures
    (SummaryRecord(complete=False, fidelity_ok=True, policies=UNPREDICTED, gaps=(GAP,)), 1),
])
def test_a_finished_runs_status_comes_from_its_summary(summary, code):
    assert exitcodes.run_exit_code(summary) == code


@pytest.mark.parametrize("codes, combined", [
    ([0, 0], 0), ([0, 3], 3), ([3, 0], 3), ([3, 3], 3), ([3, 1], 1), ([130], 130), ([0, 2], 2), ([], 0),
    ([0, 4], 4), ([4, 3], 3), ([4, 1], 1),
])
def test_several_runs_give_the_status_that_stopped_them_else_lost_fidelity(codes, combined):
    assert exitcodes.combined_exit_code(codes) == combined


def test_the_help_and_the_reliability_page_list_every_status():
    out = subprocess.run([sys.executable, "-m", "scenarios.cli", "--help"], capture_output=True, text=True,
                         timeout=60, cwd=REPO).stdout
    page = (REPO / "docs" / "reliability.md").read_text()
    for code in (0, 1, 2, 3, 4, 130):
        assert f"\n  {code} " in out, out
        assert f"| {code} |" in page, code


def finished_run(tmp_path, monkeypatch, fidelity_ok: bool):
    """`shiftbed run` up to its end on the example folder: the checks and the experiment stand aside."""
    folder = results_example.write_example(tmp_path / "results", fidelity_ok=fidelity_ok)

    class Finished:
        writer = None

        def __init__(self, *args, **kwargs):
            pass

        def run(self):
            return folder

    for name in ("require_emulated", "require_capturable"):
        monkeypatch.setattr(runnable, name, lambda *a, **k: None)
    for name in ("check_free_space", "preflight"):
        monkeypatch.setattr(session, name, lambda *a, **k: None)
    monkeypatch.setattr(runnable, "emulation_load_mbps", lambda scenario: 1.0)
    monkeypatch.setattr(session.os, "geteuid", lambda: 0)
    import scenarios.experiment.runner as runner

    monkeypatch.setattr(runner, "Experiment", Finished)
    return folder


@pytest.mark.parametrize("fidelity_ok, code", [(True, 0), (False, 3)])
def test_run_exits_3_when_fidelity_was_lost_and_keeps_its_results(tmp_path, monkeypatch, capsys, fidelity_ok, code):
    folder = finished_run(tmp_path, monkeypatch, fidelity_ok)
    import argparse

    parser = argparse.ArgumentParser()
    run_command.add_arguments(parser)
    args = parser.parse_args([str(REPO / "scenarios" / "classroom.yaml"), "--duration", "6", "--out",
                              str(tmp_path / "results"), "--json"])
    assert run_command.run(args) == code
    out, err = capsys.readouterr()
    assert json.loads(out)["fidelity_ok"] is fidelity_ok and (folder / "summary.json").is_file()
    assert ("fidelity lost (exit 3)" in err) is (not fidelity_ok), err


@pytest.mark.parametrize("first, second, code, ran", [
    (0, 0, 0, 2), (3, 0, 3, 2), (0, 3, 3, 2), (1, 0, 1, 1), (130, 0, 130, 1), (4, 0, 4, 2),
])
def test_the_demo_goes_on_past_lost_fidelity_and_stops_at_a_fault(tmp_path, monkeypatch, capsys, first, second,
                                                                  code, ran):

    codes, started = [first, second], []

    def fake_run(scenario, text, options, display, solo_cache=None):
        folder = options.out_root / scenario.name / "20261130T020000Z"
        folder.mkdir(parents=True)
        started.append(scenario.name)
        return SessionResult(codes[len(started) - 1], folder)

    monkeypatch.setattr(session, "run_session", fake_run)
    monkeypatch.setattr(terminal, "say_run_end", lambda results_dir, problem, as_json: None)
    monkeypatch.setattr(demo.os, "geteuid", lambda: 0)
    assert demo.run(SimpleNamespace(duration="6", out=str(tmp_path), json=False)) == code
    assert len(started) == ran


def test_an_interrupt_outside_a_run_exits_130_in_one_line():
    """Ctrl-C during a long `shiftbed sweep` (a run has its own handler: tests/integration/test_reliability.py)."""
    proc = subprocess.Popen([sys.executable, "-m", "scenarios.cli", "sweep", "--samples", "100000", "--jobs", "4"],
                            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(3.0)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert err.strip().splitlines()[-1] == "shiftbed sweep: interrupted" and out == ""  # after its progress lines


def test_version_names_the_release_and_the_commit():
    done = subprocess.run([sys.executable, "-m", "scenarios.cli", "--version"], capture_output=True, text=True,
                          timeout=60, cwd=REPO)
    head = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, cwd=REPO).stdout.strip()
    assert done.returncode == 0 and done.stderr == ""
    assert done.stdout == f"shiftbed 0.1.0 (commit {head})\n"
