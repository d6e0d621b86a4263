"""Every lab sheet is well formed, and its no-root commands print what the sheet promises.

The root parts (mn, shiftbed run) are in test_labs_root.py; both read the
commands and the promised numbers from the sheets themselves (labsheet.py).
"""

import json
import re

import labsheet
import pytest

SHEETS = labsheet.sheets()


def test_there_are_seven_labs_each_with_an_answer_key():
    assert [p.name for p in SHEETS] == ["lab1-fabric.md", "lab2-contention.md", "lab3-theory.md",
                                        "lab4-policy.md", "lab5-map.md", "lab6-explorer.md", "lab7-patterns.md"]
    for path in SHEETS:
        key = labsheet.LABS / "answers" / f"{path.name.split('-')[0]}-answers.md"
        assert key.is_file(), f"{path.name}: no answer key {key}"


@pytest.mark.parametrize("path", SHEETS, ids=lambda p: p.stem)
def test_each_sheet_has_its_sections_commands_and_promises(path):
    text = path.read_text()
    for heading in ("**Goal.**", "## Background", "## Commands", "## What you should see", "## Questions"):
        assert heading in text, f"{path.name}: no {heading}"
    sheet = labsheet.parse(path)
    assert any(b.kind in ("lab", "lab-root") for b in sheet.blocks)
    assert len(sheet.expectations) >= 5
    for e in sheet.expectations:  # every promise is one the checker understands
        assert e.form() in ("literal", "tolerance", "range", "bound", "number", "word"), e
    leftover = re.findall(r"\b(?:NOTES\w*|RUNS_LAB\d|[A-Z]+_LAB\d|[A-Z]+3)\b", text)
    assert not leftover, f"{path.name}: placeholders left: {leftover}"


@pytest.mark.parametrize("path", [p for p in SHEETS if any(b.kind == "lab" for b in labsheet.parse(p).blocks)],
                         ids=lambda p: p.stem)
def test_the_no_root_commands_print_the_promised_numbers(path):
    run = labsheet.LabRun(labsheet.parse(path), kinds=("lab",), timeout_s=120)
    values = run.run()
    labsheet.keep_no_root_output(run.sheet, run.output)  # the root test judges the whole sheet on it
    checked = [e for e in run.sheet.expectations if e.key in values]
    assert checked, f"{path.name}: the no-root commands printed none of the promised keys"
    assert run.failures(values, keys_only_from_output=True) == []


@pytest.mark.parametrize("expected, got, holds", [
    ("at least 60 ms", "60", True), ("at least 60 ms", "59.9", False), ("at least 60", "250", True),
    ("at most 20 ms", "20", True), ("at most 20 ms", "30", False), ("at most 0.08", "-1", True),
    ("10 to 20 %", "10", True), ("10 to 20 %", "20.1", False), ("5 ± 1 ms", "4", True), ("5 ± 1 ms", "6.5", False),
])
def test_a_promise_holds_exactly_inside_its_bounds(expected, got, holds):
    promise = labsheet.Expectation("what", "key", expected)
    assert promise.form() in ("bound", "range", "tolerance")
    failure = promise.check({"key": got}, "")
    assert (failure is None) == holds, failure


def test_only_the_hosts_cpu_makes_a_lab_run_inconclusive(tmp_path):
    """A run's measurements the host disturbed in every attempt count (with what it took); jobs that
    drifted under a policy are shiftbed's doing and do not; a folder without a summary is skipped."""
    def folder(scenario, fidelity):
        path = tmp_path / "lab3" / scenario / "20260101T000000Z"
        path.mkdir(parents=True)
        (path / "summary.json").write_text(json.dumps({"fidelity": fidelity}))
        return path

    busy = folder("classroom", {"disturbed": ["solo alpha", "gate"], "drifted": [], "host_steal_max_pct": 5.0,
                                "host_steal_pct": {"solo alpha": 12.5, "gate": 7.25, "none": 1.0}})
    drifted = folder("lab-contention", {"disturbed": [], "drifted": ["alpha", "beta"],
                                        "speed_drift_pct_of_period": {"alpha": 9.0, "beta": -4.0},
                                        "host_steal_pct": {"none": 0.5}})
    empty = tmp_path / "lab3" / "classroom" / "partial"
    empty.mkdir()
    assert labsheet.host_disturbed([busy, drifted, empty]) == {"classroom solo alpha": 12.5, "classroom gate": 7.25}
    assert labsheet.host_disturbed([drifted]) == {}


def test_a_command_past_the_deadline_is_ended_with_sigterm_and_keeps_what_it_printed():
    """A run ended so keeps its measurements and removes its network; the test reads its output
    (``hoststeal.measured_again_pcts``) to tell a busy host's delay from shiftbed's."""
    from pathlib import Path
    from types import SimpleNamespace

    run = labsheet.LabRun(SimpleNamespace(path=Path("lab9-x.md")), timeout_s=1.0)
    command = "trap 'echo ended by TERM; exit 3' TERM; echo started; sleep 3 > /dev/null & wait"
    with pytest.raises(labsheet.LabTimeout, match=r"lab9-x.md: `.*` took more than 1 s") as late:
        run.run_command(command)
    assert late.value.output == "started\nended by TERM\n" and run.output == late.value.output


def test_a_run_that_lost_fidelity_is_judged_by_its_promises_but_any_other_failure_stops_the_lab(tmp_path):
    """`shiftbed run` exits 3 when it measured but lost fidelity: the lab goes on and its promises
    (and whether the host disturbed it) judge the run; exit 3 of anything else still fails it."""
    from types import SimpleNamespace

    fake = tmp_path / "shiftbed"
    fake.write_text("#!/bin/sh\necho measured = 1\nexit 3\n")
    fake.chmod(0o755)
    run = labsheet.LabRun(SimpleNamespace(path=tmp_path / "lab9-x.md"))
    run.run_command(f"{fake} run scenarios/classroom.yaml")
    assert "measured = 1" in run.output and run.log[-1].endswith("(exit 3: fidelity lost)")
    with pytest.raises(AssertionError, match="exited 3"):
        run.run_command("echo other; exit 3")


def test_a_sheets_bare_shiftbed_runs_this_checkouts_program(monkeypatch):
    """`sudo shiftbed run ...` is what a student types after `make install`; the test runs this checkout's."""
    mine = str(labsheet.REPO / ".venv" / "bin" / "shiftbed")
    monkeypatch.setattr(labsheet.os, "geteuid", lambda: 0)
    assert labsheet.as_run("sudo shiftbed run s.yaml --out results/lab2") == f"{mine} run s.yaml --out results/lab2"
    assert labsheet.as_run(".venv/bin/shiftbed plan s.yaml") == ".venv/bin/shiftbed plan s.yaml"
    assert labsheet.as_run("sudo ip link") == "ip link"
    monkeypatch.setattr(labsheet.os, "geteuid", lambda: 1000)
    assert labsheet.as_run("sudo shiftbed run s.yaml") == f"sudo {mine} run s.yaml"
