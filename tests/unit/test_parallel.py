"""The dispatch (controller/theory/parallel.py) on a real dask.distributed cluster on loopback.

A module fixture starts ``dask scheduler`` and two ``dask worker`` processes (one thread each,
the project on their PYTHONPATH, no policy files in their environment) and ends them by PID.
The sweep and the map through the cluster must give the local run's rows and summary exactly;
a policy file loaded only on the client must reach the workers; a malformed address is bad
input (exit 2), an unreachable scheduler an environment problem (exit 1), both one line.
"""

import json
import math
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import dask_cluster as cluster
import pytest

from controller.theory import parallel, policies
from controller.theory.mapping import DEFAULT_POINT, run_map
from controller.theory.sweep import run_sweep
from scenarios import cli

pytestmark = pytest.mark.xdist_group("serial")  # starts dask clusters and times a connection: one at a time (make test)

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "docs" / "labs" / "examples" / "realign.py"
RUN_KEYS = ("elapsed_s", "combinations_per_s", "backend", "workers")  # what may differ between backends


@pytest.fixture(scope="module")
def dask_cluster(tmp_path_factory):
    """The address of a running scheduler with two single-thread workers."""
    env = {k: v for k, v in os.environ.items() if k != policies.POLICY_FILES_ENV}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, (str(REPO), env.get("PYTHONPATH"))))
    single_thread = ["--nthreads", "1", "--no-nanny"]
    with cluster.dask_cluster(tmp_path_factory.mktemp("dask"), env, [single_thread, single_thread]) as address:
        yield address


def _without_run_keys(text: str) -> str:
    summary = json.loads(text)
    for key in RUN_KEYS:
        summary.pop(key, None)
    return json.dumps(summary, sort_keys=True)


def _cli_json(capsys, argv: list[str]) -> tuple[str, str]:
    assert cli.main(argv) == 0
    out, err = capsys.readouterr()
    return out, err


# ---------------------------------------------------------------- through the cluster


def test_run_tasks_yields_in_task_order_on_every_backend(dask_cluster):
    tasks = list(range(1, 300))
    expected = [math.sqrt(x) for x in tasks]
    assert list(parallel.run_tasks(math.sqrt, tasks, 1)) == expected
    assert list(parallel.run_tasks(math.sqrt, tasks, 2)) == expected
    assert list(parallel.run_tasks(math.sqrt, tasks, 1, dask_cluster)) == expected
    found = parallel.backend(1, dask_cluster)
    assert (found.kind, found.workers, found.threads, found.address) == ("dask", 2, 2, dask_cluster)


def test_sweep_rows_and_summary_match_the_local_run(dask_cluster, capsys):
    settings = {"seed": 5, "jobs": [2, 3], "samples": 8, "period_range": (100, 1000), "frac_range": (0.1, 0.5),
                "quanta": [1.0, 10.0], "zoo": False, "zoo_link_mbps": 1e4, "iterations": 20,
                "policies": ["shift", "gate", "random"]}
    rows = run_sweep(settings, workers=1)
    assert len(rows) == 32 and len({(r.n_jobs, r.sample, r.quantum_ms) for r in rows}) == 32
    assert run_sweep(settings, workers=1, scheduler_address=dask_cluster) == rows

    argv = ["sweep", "--jobs", "2,3", "--samples", "6", "--quantum-ms", "1,10", "--iterations", "20",
            "--policy", "shift,gate", "--seed", "3", "--json"]
    local, err_local = _cli_json(capsys, argv)
    remote, err_remote = _cli_json(capsys, [*argv, "--dask-scheduler", dask_cluster])
    assert _without_run_keys(remote) == _without_run_keys(local)
    assert json.loads(remote)["backend"] == {"kind": "dask", "workers": 2, "threads": 2, "address": dask_cluster}
    assert "sweep: running on this machine, in this process" in err_local
    assert f"sweep: running on the dask cluster at {dask_cluster}: 2 workers, 2 threads" in err_remote


def test_map_summary_matches_the_local_run(dask_cluster, capsys):
    argv = ["map", "--samples", "4", "--only", "quantum_ms,error", "--panel", "quantum_ms=1,50",
            "--panel", "error=0,0.02", "--seed", "2", "--json"]
    local, _ = _cli_json(capsys, argv)
    remote, err = _cli_json(capsys, [*argv, "--dask-scheduler", dask_cluster])
    assert _without_run_keys(remote) == _without_run_keys(local)
    assert json.loads(remote)["workers"] == 2 and "map: running on the dask cluster" in err
    settings = {"seed": 2, "samples": 3, "panels": {"n_jobs": (2, 3)}, "default": DEFAULT_POINT,
                "policies": ("shift", "align"), "period_range": (100, 1000), "zoo_link_mbps": 1e4}
    local_rows = run_map(settings, workers=1)
    remote_rows = run_map(settings, workers=1, scheduler_address=dask_cluster)
    assert json.dumps({str(k): v for k, v in remote_rows.items()}, sort_keys=True) == \
        json.dumps({str(k): v for k, v in local_rows.items()}, sort_keys=True)


def test_a_policy_file_loaded_only_here_reaches_the_workers(dask_cluster, tmp_path):
    folder = tmp_path / "mine"
    folder.mkdir(mode=0o755)
    policy_file = folder / "realign3.py"  # a name the workers cannot know from anywhere but this file
    policy_file.write_text(EXAMPLE.read_text().replace('"realign4"', '"realign3x"').replace("every = 4", "every = 3"))
    policy_file.chmod(0o644)
    env = {k: v for k, v in os.environ.items() if k != policies.POLICY_FILES_ENV}
    env["PYTHONPATH"] = str(REPO)
    argv = [sys.executable, "-m", "scenarios.cli", "sweep", "--jobs", "2", "--samples", "6", "--quantum-ms", "10",
            "--iterations", "20", "--policy", "realign3x", "--policy-file", str(policy_file), "--json"]
    local = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=REPO, timeout=120)
    remote = subprocess.run([*argv, "--dask-scheduler", dask_cluster], capture_output=True, text=True, env=env,
                            cwd=REPO, timeout=120)
    assert local.returncode == 0 and remote.returncode == 0, remote.stderr
    assert '"realign3x"' in remote.stdout
    assert _without_run_keys(remote.stdout) == _without_run_keys(local.stdout)


# ---------------------------------------------------------------- bad addresses, before any work


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("command", [["sweep", "--jobs", "2", "--samples", "2"], ["map", "--samples", "2"]])
def test_an_unreachable_scheduler_is_one_line_and_exit_1(command, capsys):
    address = f"tcp://127.0.0.1:{_free_port()}"
    started = time.monotonic()
    assert cli.main([*command, "--dask-scheduler", address]) == 1
    assert time.monotonic() - started < parallel.CONNECT_TIMEOUT_S + 10
    out, err = capsys.readouterr()
    (line,) = err.strip().splitlines()
    assert out == "" and line.startswith(f"shiftbed {command[0]}: dask scheduler {address}: not reachable"), line


@pytest.mark.parametrize("address", ["nohost", "http://127.0.0.1:8786", "127.0.0.1:99999", "tcp://:8786",
                                     "tcp://host:port", ""])
def test_a_malformed_address_is_one_line_and_exit_2(address, capsys):
    assert cli.main(["sweep", "--jobs", "2", "--samples", "2", "--dask-scheduler", address]) == 2
    out, err = capsys.readouterr()
    (line,) = err.strip().splitlines()
    assert out == "" and line.startswith("shiftbed sweep: --dask-scheduler: ") and repr(address) in line, line


@pytest.mark.parametrize("given, used", [("tcp://10.0.0.5:8786", "tcp://10.0.0.5:8786"),
                                         ("sched.example:8786", "tcp://sched.example:8786"),
                                         ("tls://[::1]:8786", "tls://[::1]:8786")])
def test_well_formed_addresses(given, used):
    assert parallel.check_address(given) == used


# ---------------------------------------------------------------- a policy file's source on a worker


@pytest.fixture
def registry(policy_registry):
    """Whatever a test registers is forgotten afterwards (tests/conftest.py)."""


def test_a_shipped_source_registers_once_and_a_changed_one_replaces_it(registry):
    path = "/elsewhere/realign.py"  # a path that does not exist here: only the source travels
    source = EXAMPLE.read_text()
    assert policies.load_policy_source(path, source) == ["realign4"]
    first = policies.get_policy("realign4")
    assert policies.load_policy_source(path, source) == ["realign4"] and policies.get_policy("realign4") is first
    assert policies.policy_sources()[path] == source
    changed = source.replace("every = 4", "every = 2")
    assert policies.load_policy_source(path, changed) == ["realign4"]
    assert [k for k in range(6) if policies.get_policy("realign4").waits_for_window(k)] == [0, 2, 4]


def test_a_broken_shipped_source_names_its_path_and_line(registry):
    with pytest.raises(policies.PolicyFileError, match=r"^/elsewhere/bad\.py, line 2: ZeroDivisionError"):
        policies.load_policy_source("/elsewhere/bad.py", "x = 1\ny = 1 / 0\n")
    assert "/elsewhere/bad.py" not in policies.policy_sources()
