"""`shiftbed batch` on the real fabric: two small scenarios, killed with SIGKILL in the middle of the
second, resumed, then resumed again with nothing left to do (root; 112 s on the reference machine,
2026-12-07). Each policy stops at a target standard error, the duration its ceiling. The seed draws
bursts of 61-94 ms, which keep fidelity (a scenario that loses it is run twice by the batch).

Nothing lost, nothing twice: the first scenario's folder, done before the kill, is the same folder
after both resumes; the second is run again from nothing and done once; each done scenario has its
prediction written before its run began, and the batch's table has a row per scenario, policy and job.
"""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

REPO = Path(__file__).resolve().parents[2]
SHIFTBED = str(Path(sys.executable).with_name("shiftbed"))
POLICIES = ("none", "shift")
CEILING_S, TARGET_SE_PCT = 8, 2.0  # each policy stops at the target standard error, else at the ceiling
BATCH = ["--scenarios", "2", "--jobs", "2", "--period-ms", "150:300", "--seed", "4",
         "--policy", ",".join(POLICIES), "--duration", str(CEILING_S), "--target-se-pct", str(TARGET_SE_PCT)]
KILL_AFTER_START_S = 8  # into the second scenario's run: its fabric up, calibrating
TIMEOUT_S = 600


def run_folders(scenario_dir: Path) -> list[str]:
    return sorted(p.name for p in scenario_dir.iterdir() if p.is_dir() and not p.name.startswith("."))


def wait_for(predicate, proc, log: Path, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert proc.poll() is None, f"the batch ended early ({proc.returncode}): {log.read_text()[-3000:]}"
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.5)


@pytest.fixture(scope="module")
def killed_and_resumed(tmp_path_factory):
    """The batch killed (SIGKILL) in its second scenario, then ``--resume`` twice: (OUT, what the
    folder held at the kill, the two resumes' completed processes)."""
    if os.geteuid() != 0:
        pytest.skip("needs root")
    out = tmp_path_factory.mktemp("batch") / "b"
    log = out.with_name("first.log")
    with open(log, "w") as stream:
        proc = subprocess.Popen([SHIFTBED, "batch", str(out), *BATCH], cwd=REPO, stdout=stream, stderr=stream)
    second = out / ".partial" / "s001"
    wait_for(lambda: (out / "s000" / "outcome.json").is_file() and second.is_dir()
             and any(p.name.endswith(".partial") for p in second.iterdir()), proc, log, TIMEOUT_S)
    time.sleep(KILL_AFTER_START_S)
    assert proc.poll() is None, log.read_text()[-3000:]
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    at_kill = {"s000": run_folders(out / "s000"),
               "s000_outcome": (out / "s000" / "outcome.json").read_text(),
               "s001_done": (out / "s001").exists(), "s001_partial": second.is_dir()}
    resumes = [subprocess.run([SHIFTBED, "batch", "--resume", str(out)], cwd=REPO, capture_output=True,
                              text=True, timeout=TIMEOUT_S) for _ in range(2)]
    return out, at_kill, resumes


@pytest.mark.root
@pytest.mark.slow
def test_the_kill_left_one_scenario_done_and_one_partial(killed_and_resumed):
    _, at_kill, _ = killed_and_resumed
    attempts = [a["results_dir"] for a in json.loads(at_kill["s000_outcome"])["attempts"]]
    assert at_kill["s000"] == attempts and len(attempts) in (1, 2), at_kill  # 2: the first lost fidelity
    assert not at_kill["s001_done"] and at_kill["s001_partial"], at_kill


@pytest.mark.root
@pytest.mark.slow
def test_resume_runs_only_what_was_not_done_and_then_nothing(killed_and_resumed):
    out, at_kill, (first, second) = killed_and_resumed
    for result in (first, second):
        assert result.returncode in (0, 3), result.stderr[-3000:]  # 3: a run kept without fidelity
    assert run_folders(out / "s000") == at_kill["s000"]  # the scenario done before the kill: untouched
    assert (out / "s000" / "outcome.json").read_text() == at_kill["s000_outcome"]
    outcome = json.loads((out / "s001" / "outcome.json").read_text())
    assert run_folders(out / "s001") == [a["results_dir"] for a in outcome["attempts"]]  # the killed run is gone
    assert not list((out / ".partial").iterdir())
    assert "0 of 2 scenarios to run" in second.stderr, second.stderr[-2000:]
    assert "run again" not in second.stderr and "fabric up" not in second.stderr  # nothing built


@pytest.mark.root
@pytest.mark.slow
def test_each_prediction_was_written_before_its_run_and_the_table_has_every_row(killed_and_resumed):
    out, _, _ = killed_and_resumed
    for name in ("s000", "s001"):
        prediction = json.loads((out / name / "prediction.json").read_text())
        first_run = run_folders(out / name)[0]
        assert prediction["kind"] == "before the run" and prediction["written"] <= first_run, (prediction, first_run)
        assert set(prediction["policies"]) == set(POLICIES)
    table = pd.read_parquet(out / "batch.parquet")
    assert len(table) == 2 * len(POLICIES) * 2  # scenarios × policies × jobs
    assert set(table["policy"]) == set(POLICIES) and table["measured_iteration_ms"].gt(0).all()
    assert table.loc[table.policy == "shift", "model_verdict"].notna().all()
    report = (out / "report.md").read_text()
    assert "Cohen's kappa" in report and "## Each kind of prediction's error" in report
    assert (out / "report.html").read_text().startswith("<!DOCTYPE html>")


@pytest.mark.root
@pytest.mark.slow
def test_each_policy_stopped_at_the_target_or_the_ceiling_and_says_which(killed_and_resumed):
    from scenarios.experiment.stopping import MIN_ITERATIONS
    from scenarios.results import load_results

    out, _, _ = killed_and_resumed
    table = pd.read_parquet(out / "batch.parquet")
    assert set(table["stopped_by"]) <= {"target", "ceiling"} and table["stopped_by"].notna().all()
    early = table[table["stopped_by"] == "target"]
    assert len(early), table[["scenario", "policy", "job", "stopped_by", "stopped_after_s"]]  # the target was reached
    assert (early["stopped_after_s"] < CEILING_S).all() and (early["iterations"] >= MIN_ITERATIONS).all()
    for name in ("s000", "s001"):
        summary = load_results(out / name / json.loads((out / name / "outcome.json").read_text())["kept"]).summary
        for policy, entry in summary.policies.items():
            stop = entry.stopped
            assert stop.target_se_pct == TARGET_SE_PCT, (name, policy, stop)
            if stop.by == "target":  # every job was at the target when the policy stopped
                assert all(v is not None and v <= TARGET_SE_PCT for v in stop.se_pct.values()), (name, policy, stop)
    assert "What each scenario cost" in (out / "report.md").read_text()
