"""`shiftbed demo` runs each scenario as `shiftbed run` does: the same options, checks and API (no root needed)."""

import json
from types import SimpleNamespace

import pytest

from scenarios import spec
from scenarios.commands import demo
from scenarios.errors import EnvironmentProblem
from scenarios.experiment import session
from scenarios.experiment.session import SessionResult
from scenarios.report import terminal


@pytest.mark.parametrize("name", demo.DEMO_SCENARIOS)
def test_every_demo_scenario_passes_the_run_commands_input_checks(name, tmp_path, monkeypatch):
    scenario = spec.load(demo.SCENARIOS_DIR / name)
    options = demo.run_options(scenario, 6.0, str(tmp_path))
    assert (options.duration_s, options.out_root, options.policies) == (6.0, tmp_path, scenario.policies)
    scenario.require_runnable()
    session.check_scenario(scenario, options)
    monkeypatch.setattr(session.os, "geteuid", lambda: 1000)  # stop where the fabric would be built
    with pytest.raises(EnvironmentProblem, match="needs root"):
        session.require_root("shiftbed run")



def test_with_json_the_demo_prints_one_object_and_each_runs_table_goes_to_stderr(tmp_path, monkeypatch, capsys):
    def fake_run(scenario, text, options, display, solo_cache=None):  # what a run leaves: a results folder
        folder = options.out_root / scenario.name / "20261130T020000Z"
        folder.mkdir(parents=True)
        return SessionResult(0, folder)

    def fake_say(results_dir, problem, as_json):  # and what `shiftbed run` says of it: its table on stdout
        print(f"policy job ... table of {results_dir.parent.name}")

    monkeypatch.setattr(session, "run_session", fake_run)
    monkeypatch.setattr(terminal, "say_run_end", fake_say)
    monkeypatch.setattr(terminal, "results_json", lambda folder: {"results_dir": str(folder)})  # no summary here
    monkeypatch.setattr(demo.os, "geteuid", lambda: 0)
    assert demo.run(SimpleNamespace(duration="6", out=str(tmp_path), json=True)) == 0
    out, err = capsys.readouterr()
    doc = json.loads(out)  # the whole of stdout is one JSON object
    folders = {name: tmp_path / name / "20261130T020000Z" for name in ("classroom", "two-jobs-coprime")}
    assert doc["reports"] == {name: str(folder / "report.md") for name, folder in folders.items()}
    assert doc["runs"] == {name: {"results_dir": str(folder)} for name, folder in folders.items()}
    assert "table of classroom" in err and "table of two-jobs-coprime" in err


def test_without_json_the_demo_ends_naming_each_report_and_its_page_for_a_browser(tmp_path, monkeypatch, capsys):
    def fake_run(scenario, text, options, display, solo_cache=None):
        folder = options.out_root / scenario.name / "20261130T020000Z"
        folder.mkdir(parents=True)
        return SessionResult(0, folder)

    monkeypatch.setattr(session, "run_session", fake_run)
    monkeypatch.setattr(terminal, "say_run_end", lambda results_dir, problem, as_json: None)
    monkeypatch.setattr(demo.os, "geteuid", lambda: 0)
    assert demo.run(SimpleNamespace(duration="6", out=str(tmp_path), json=False)) == 0
    lines = capsys.readouterr().out.splitlines()
    folder = tmp_path / "two-jobs-coprime" / "20261130T020000Z"
    assert lines[-2:] == [f"two-jobs-coprime: {folder / 'report.md'}",
                          f"{' ' * 16}  {folder / 'report.html'} (the same, to open in a browser)"]


def test_a_runs_json_object_is_read_back_from_its_results_folder(tmp_path):
    """What `shiftbed demo --json` prints per scenario: the folder's summary as `run --json` gives it."""
    import results_example

    folder = results_example.write_example(tmp_path)
    doc = terminal.results_json(folder)
    assert doc["results_dir"] == str(folder) and doc["fidelity_ok"] is True and doc["complete"] is True
    assert set(doc["policies"]) == {"none", "shift", "gate"}
    assert doc["policies"]["gate"]["throughput_change_vs_none_pct"] == pytest.approx(results_example.GATE_CHANGE_PCT)
