"""A real dask.distributed cluster on 127.0.0.1 for a test: ``dask scheduler`` on a free port and the
``dask worker`` processes asked for, their output in a folder, all ended by PID afterwards."""

import json
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

START_TIMEOUT_S = 60.0  # a loaded 2-core machine: the scheduler and workers import dask in a few s each


def tail(path: Path, lines: int = 15) -> str:
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:]) if path.exists() else ""


def stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@contextmanager
def dask_cluster(folder: Path, env: dict, workers: list[list[str]]):
    """The address of a running scheduler with one worker per entry of ``workers`` (each its extra
    ``dask worker`` arguments), once they all joined; every process ended when the block ends."""
    started: list[subprocess.Popen] = []

    def start(name: str, *argv: str) -> None:
        with open(folder / f"{name}.log", "w") as log:
            started.append(subprocess.Popen([sys.executable, "-m", "dask", *argv], env=env, cwd=folder,
                                            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL))

    def wait(what: str, ready) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not ready():
            dead = [p for p in started if p.poll() is not None]
            if dead or time.monotonic() > deadline:
                logs = "\n".join(f"--- {p.name}\n{tail(p)}" for p in sorted(folder.glob("*.log")))
                pytest.fail(f"dask cluster: {what} not ready after {time.monotonic() - deadline + START_TIMEOUT_S:.0f} "
                            f"s (exited: {[p.args[3:5] for p in dead]})\n{logs}")
            time.sleep(0.2)

    scheduler_file = folder / "scheduler.json"
    try:
        start("scheduler", "scheduler", "--host", "127.0.0.1", "--port", "0", "--dashboard-address", "127.0.0.1:0",
              "--scheduler-file", str(scheduler_file), "--idle-timeout", "900")
        wait("scheduler", lambda: scheduler_file.exists() and scheduler_file.stat().st_size > 0)
        address = json.loads(scheduler_file.read_text())["address"]
        for k, extra in enumerate(workers):
            start(f"worker{k}", "worker", address, "--name", f"w{k}", "--dashboard-address", "127.0.0.1:0",
                  "--local-directory", str(folder), "--death-timeout", "60", *extra)
        from distributed import Client

        with Client(address, timeout=START_TIMEOUT_S, set_as_default=False) as client:
            wait(f"{len(workers)} workers", lambda: len(client.nthreads()) >= len(workers))
        yield address
    finally:
        for process in reversed(started):  # the workers, then the scheduler
            stop(process)
