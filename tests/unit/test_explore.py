"""shiftbed explore without a browser: the page's values through the spec and plan, the work budget,
the link's trace, saving, and the command's bad input (the browser test is tests/labs/test_lab6_explorer.py)."""

from __future__ import annotations

import dataclasses
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from controller.theory import fluid
from scenarios import spec
from scenarios.commands import plan
from scenarios.errors import InputError
from scenarios.explore import answer, budget, inputs, save, view

REPO = Path(__file__).resolve().parents[2]
CLASSROOM = REPO / "scenarios" / "classroom.yaml"
SHIFTBED = str(Path(sys.executable).with_name("shiftbed"))


@pytest.fixture(scope="module")
def start() -> inputs.Start:
    return inputs.load(CLASSROOM)


def with_period(edits: inputs.Edits, k: int, period_ms: float) -> inputs.Edits:
    jobs = list(edits.jobs)
    jobs[k] = dataclasses.replace(jobs[k], period_ms=period_ms)
    return dataclasses.replace(edits, jobs=tuple(jobs))


def test_the_answer_is_plans_own_for_the_edited_scenario(start):
    got = answer.answer(start, start.edits())
    assert got.ok and not got.budget.cut
    assert got.plan == plan.build_plan(spec.load(CLASSROOM))  # the same function, the same scenario
    assert got.plan["policies"]["shift"]["alpha"]["change_vs_none"] == pytest.approx(1 / 6, abs=1e-4)


def test_a_long_horizon_is_cut_to_the_budget_and_the_plan_command_says_so(start, tmp_path):
    got = answer.answer(start, with_period(start.edits(), 1, 603))
    assert got.budget.cut and got.budget.horizon_ms < got.budget.default_ms == 60_300
    assert got.budget.bursts <= budget.MAX_BURSTS and got.budget.horizon_ms % 1000 == 0
    command = answer.plan_command("x.yaml", got)
    assert command == f"shiftbed plan x.yaml --horizon-s {got.budget.horizon_ms / 1000:g} --json"
    shown = view.view(got, "x.yaml")
    assert "horizon is cut" in shown.status and "603" in shown.feasibility and "fails" in shown.feasibility


def test_a_change_beyond_the_budget_is_refused_in_words(start):
    got = answer.answer(start, start.edits(), max_bursts=100)
    assert not got.ok and got.refused.startswith("refused:")
    assert view.view(got, "x.yaml").status.count("refused") == 1


def test_the_link_trace_meets_where_the_plan_counts_overlap(start):
    """The black lane is the plan's overlap: the trace's meeting time over the measured span is ``overlap``."""
    scenario = inputs.scenario(start, start.edits())
    traces = {"none": fluid.LinkTrace()}
    doc = plan.build_plan(scenario, policies=("none",), link_traces=traces)
    warmup_ms = fluid.WARMUP_ITERATIONS * 600
    span = (warmup_ms, warmup_ms + doc["horizon_ms"])
    met = sum(max(0.0, min(b, span[1]) - max(a, span[0])) for a, b, _, meeting in traces["none"].steps if meeting)
    assert met / doc["horizon_ms"] == pytest.approx(doc["overlap"]["none"], abs=1e-3)
    assert doc["overlap"]["none"] > 0.2  # under none the classroom pair meets every hyper-period


def test_a_value_the_spec_refuses_goes_beside_its_box(start):
    got = answer.answer(start, with_period(start.edits(), 1, -5))
    assert got.problems == {"period/1": "jobs[1].period_ms: must be > 0, got -5"}
    jobs = list(start.edits().jobs)
    jobs[0] = dataclasses.replace(jobs[0], comm_ms=400)
    got = answer.answer(start, dataclasses.replace(start.edits(), jobs=tuple(jobs)))
    assert list(got.problems) == ["comm/0"] and "less than period_ms" in got.problems["comm/0"]
    assert inputs.box_of(f"{start.path}: quantum_ms: must be > 0, got 0", start.path)[0] == "quantum"
    with pytest.raises(ValueError, match="not a number"):
        inputs.number("abc", "period (ms)")


def test_added_jobs_take_free_names_and_a_zoo_job_is_written_out(start, tmp_path):
    edits = start.edits()
    edits = dataclasses.replace(edits, jobs=edits.jobs + (inputs.new_job(edits.jobs),))
    doc = inputs.document(start, edits)
    assert [j["name"] for j in doc["jobs"]] == ["alpha", "beta", "gamma"]
    assert doc["jobs"][2]["workers"] == ["h1", "h3"]
    zoo = inputs.load(REPO / "scenarios" / "model-zoo.yaml")
    written = inputs.document(zoo, zoo.edits())
    assert all("model" not in j and "period_ms" in j for j in written["jobs"])
    assert spec.parse(inputs.yaml_text(written)).jobs[0].period_ms == pytest.approx(zoo.scenario.jobs[0].period_ms)


def test_save_writes_a_scenario_run_accepts_and_only_inside_the_folder(start, tmp_path):
    edits = with_period(start.edits(), 1, 603)
    path = save.save(start, edits, "mine.yaml", tmp_path)
    saved = spec.load(path)
    saved.require_runnable()
    assert [j.period_ms for j in saved.jobs] == [300, 603] and saved.policies == start.scenario.policies
    for bad, said in (("../out.yaml", "outside"), ("/etc/x.yaml", "outside"), ("notes.txt", ".yaml"),
                      ("", "file name"), ("nodir/x.yaml", "no folder")):
        with pytest.raises(ValueError, match=said):
            save.save(start, edits, bad, tmp_path)
    (tmp_path / "link").symlink_to(tmp_path.parent)
    with pytest.raises(ValueError, match="outside"):
        save.save(start, edits, "link/escape.yaml", tmp_path)
    with pytest.raises(InputError, match="period_ms"):
        save.save(start, with_period(edits, 0, 0), "zero.yaml", tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link", "mine.yaml"]


@pytest.mark.parametrize("args, said", [
    (["nope.yaml"], "nope.yaml: no such file"),
    (["--port", "70000"], "--port: must be 0"),
    (["--host", "no.such.host.invalid"], "--host: not an address"),
])
def test_bad_command_line_input_is_one_line_and_exit_2(args, said):
    result = subprocess.run([SHIFTBED, "explore", *args, "--no-browser"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and said in result.stderr and result.stderr.count("\n") == 1, result.stderr
    assert result.stdout == ""


def test_a_port_in_use_is_refused_before_anything_is_served():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run([SHIFTBED, "explore", str(CLASSROOM), "--port", str(port), "--no-browser"],
                                capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and f"--port: cannot listen on 127.0.0.1:{port}" in result.stderr, result.stderr
