"""`shiftbed batch --dask-scheduler` on the real fabric: a `dask scheduler` on 127.0.0.1 and one root
`dask worker --nworkers 1 --nthreads 1 --resources fabric=1`, two small scenarios (root; 118 s on the
reference machine, 2026-12-07). The seed draws bursts of 61-94 ms, which keep fidelity: a scenario
whose short bursts lose it is run twice by the batch, which tests nothing more here.

The worker process is killed (SIGKILL) in the middle of the second scenario: its nanny starts it
again, the scheduler gives the scenario to it, and it runs from nothing once the killed run's fabric
is down. The batch folder on the client then holds what a batch run here holds: the same settings,
draws and scenario files as the local plan, each scenario done once (its prediction, its runs, its
outcome), the table's rows per scenario, policy and job in the batch's order; a resume through the
fleet sends nothing. The measured numbers are not compared: they vary from run to run.
"""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import dask_cluster as cluster
import pandas as pd
import pytest

from scenarios import spec
from scenarios.batch.fleetworker import scratch_root
from scenarios.batch.settings import plan_batch
from scenarios.commands.batch import DEFAULTS
from scenarios.results import load_results

REPO = Path(__file__).resolve().parents[2]
SHIFTBED = str(Path(sys.executable).with_name("shiftbed"))
POLICIES = ("none", "shift")
BATCH = ["--scenarios", "2", "--jobs", "2", "--period-ms", "150:300", "--seed", "4",
         "--policy", ",".join(POLICIES), "--duration", "6"]
VALUES = {**DEFAULTS, "scenarios": 2, "jobs": "2", "period_ms": "150:300", "seed": 4, "policy": ",".join(POLICIES),
          "duration": "6"}
KILL_AFTER_START_S = 8  # into the second scenario's run on the worker: its fabric up, calibrating
TIMEOUT_S = 600


def run_folders(scenario_dir: Path) -> list[str]:
    return sorted(p.name for p in scenario_dir.iterdir() if p.is_dir() and not p.name.startswith("."))


def unfinished_logs(out: Path, lines: int = 25) -> str:
    """The ends of the logs a scenario not done came back with (its worker's output, its controller's
    log with each request's time): what a failure here is read from."""
    found = sorted(out.glob(".partial/*/worker.log")) + sorted(out.glob(".partial/*/*/controller.log"))
    return "\n".join(f"--- {p.relative_to(out)}\n" + "\n".join(p.read_text(errors="replace").splitlines()[-lines:])
                     for p in found)


def worker_pids(address: str) -> dict[str, int]:
    from distributed import Client

    with Client(address, timeout=30, set_as_default=False) as client:
        return client.run(os.getpid)


def wait_for(predicate, proc, log: Path, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert proc.poll() is None, f"the batch ended early ({proc.returncode}): {log.read_text()[-3000:]}"
        assert time.monotonic() < deadline, f"timed out: {log.read_text()[-3000:]}"
        time.sleep(0.5)


@pytest.fixture(scope="module")
def fleet_batch(tmp_path_factory):
    """The batch run on the fleet, its worker killed in the second scenario, then resumed through it:
    (OUT, the batch's exit status and output, the resume, the worker PIDs before and after the kill)."""
    if os.geteuid() != 0:
        pytest.skip("needs root")
    folder = tmp_path_factory.mktemp("fleet")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, (str(REPO), os.environ.get("PYTHONPATH"))))}
    worker = ["--nworkers", "1", "--nthreads", "1", "--resources", "fabric=1"]
    with cluster.dask_cluster(folder, env, [worker]) as address:
        out, log = folder / "b", folder / "batch.log"
        before = worker_pids(address)
        with open(log, "w") as stream:
            proc = subprocess.Popen([SHIFTBED, "batch", str(out), *BATCH, "--dask-scheduler", address], cwd=REPO,
                                    env=env, stdout=stream, stderr=stream)
        second = scratch_root() / "batch" / ".partial" / "s001"
        wait_for(lambda: (out / "s000" / "outcome.json").is_file() and second.is_dir()
                 and any(p.name.endswith(".partial") for p in second.iterdir()), proc, log, TIMEOUT_S)
        time.sleep(KILL_AFTER_START_S)
        os.kill(next(iter(before.values())), signal.SIGKILL)  # the worker process (its nanny restarts it)
        code = proc.wait(timeout=TIMEOUT_S)
        after = worker_pids(address)
        resume = subprocess.run([SHIFTBED, "batch", "--resume", str(out), "--dask-scheduler", address], cwd=REPO,
                                env=env, capture_output=True, text=True, timeout=TIMEOUT_S)
    return out, code, log.read_text(), resume, before, after


@pytest.mark.root
@pytest.mark.slow
def test_the_batch_ran_on_the_fleet_and_the_killed_workers_scenario_ran_again(fleet_batch):
    out, code, output, _, before, after = fleet_batch
    assert code in (0, 3), output[-3000:] + unfinished_logs(out)  # 3: a run kept without fidelity
    assert "batch: running on the dask cluster at tcp://127.0.0.1:" in output and "1 worker offering a fabric" in output
    assert len(after) == 1 and set(after.values()).isdisjoint(before.values())  # the worker was restarted
    assert "2 of 2 scenarios done" in output


@pytest.mark.root
@pytest.mark.slow
def test_the_killed_worker_cost_only_its_own_scenario(fleet_batch):
    """The first scenario, written in before the kill, is not run again: the client let its result go."""
    out = fleet_batch[0]
    scheduler_log = (out.parent / "scheduler.log").read_text()
    assert "lose already computed task" not in scheduler_log, scheduler_log[-3000:]


@pytest.mark.root
@pytest.mark.slow
def test_the_folder_holds_what_a_batch_run_here_holds(fleet_batch):
    out, _, _, _, _, _ = fleet_batch
    record, texts = plan_batch(VALUES, str(out))
    written = json.loads((out / "batch.json").read_text())
    assert written["settings"] == record["settings"] and written["draws"] == record["draws"]
    assert written["scenarios"] == list(texts) == ["s000", "s001"]
    for name, text in texts.items():
        assert (out / "scenarios" / f"{name}.yaml").read_text() == text
        outcome = json.loads((out / name / "outcome.json").read_text())
        runs = [a["results_dir"] for a in outcome["attempts"]]
        assert len(runs) in (1, 2) and outcome["kept"] == runs[-1], outcome  # 2: the first lost fidelity
        assert run_folders(out / name) == runs  # done once: the killed run is not here
        assert sorted(p.name for p in (out / name).iterdir() if p.is_file()) == \
            ["outcome.json", "prediction.json", "run.log"]
        prediction = json.loads((out / name / "prediction.json").read_text())
        assert prediction["kind"] == "before the run" and prediction["written"] <= runs[0]
        assert set(prediction["policies"]) == set(POLICIES)
        kept = load_results(out / name / outcome["kept"])
        assert set(kept.summary.policies) == set(POLICIES)
    assert not list((out / ".partial").iterdir())
    assert (out / "report.md").is_file() and (out / "report.html").is_file()


@pytest.mark.root
@pytest.mark.slow
def test_the_table_has_a_row_per_scenario_policy_and_job_in_the_batchs_order(fleet_batch):
    out, _, _, _, _, _ = fleet_batch
    table = pd.read_parquet(out / "batch.parquet")
    expected = [(name, policy, job.name, job.period_ms, job.comm_ms)
                for name in ("s000", "s001") for policy in POLICIES
                for job in spec.load(out / "scenarios" / f"{name}.yaml").jobs]
    found = list(table[["scenario", "policy", "job", "period_ms", "comm_ms"]].itertuples(index=False, name=None))
    assert found == expected
    draws = json.loads((out / "batch.json").read_text())["draws"]
    for row in table.itertuples():
        outcome = json.loads((out / row.scenario / "outcome.json").read_text())
        assert (row.n_jobs, row.sample) == (draws[row.scenario]["n_jobs"], draws[row.scenario]["sample"])
        assert (row.attempts, row.exit_code) == (len(outcome["attempts"]), outcome["exit_code"])
        assert row.results_dir == str(out / row.scenario / outcome["kept"])
    assert table["measured_iteration_ms"].gt(0).all()


@pytest.mark.root
@pytest.mark.slow
def test_a_resume_through_the_fleet_sends_nothing_when_every_scenario_is_done(fleet_batch):
    out, _, _, resume, _, _ = fleet_batch
    assert resume.returncode in (0, 3), resume.stderr[-3000:]
    assert "0 of 2 scenarios to run" in resume.stderr, resume.stderr[-2000:]
    assert "2 of 2 scenarios done" in resume.stdout + resume.stderr
