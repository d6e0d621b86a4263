"""What a fleet's worker does with one scenario: run it as a batch here does, and hand back its folder.

Runs inside a ``dask worker`` started as root with ``--resources fabric=1``
(docs/scale.md). :func:`run_scenario_here` writes a one-scenario batch folder
(the client's settings, the scenario's file) in a scratch folder and runs it
in a child process (``batch/fleetchild.py``): the very code a batch runs on
one machine (``batch/local.py``, each run through ``experiment/session.py``),
in a process whose main thread can take signals, as a fabric's teardown
needs. The done folder comes back packed (``batch/pack.py``); the client
writes it into the batch.

One fabric per machine, whatever happens to the worker process: the child
holds :data:`LOCK_FILE` (inherited, so a child outliving a killed worker still
holds it while it tears its fabric down) and is sent SIGTERM if the worker
dies (``setpriv --pdeathsig``) or the client cancels the scenario.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

RESOURCE = "fabric"  # the dask worker resource a fabric takes: a worker offers 1
POLL_S = 0.5  # how often the child and a cancellation are looked at
TEARDOWN_WAIT_S = 120.0  # a cancelled child's time to take its fabric down
WORKER_LOG_MAX_BYTES = 65_536  # of a scenario not done: the end of the child's output, handed back whole
PACKAGES = ("apps", "controller", "scenarios", "topo")


def scratch_root() -> Path:
    """Where this machine's fleet runs a scenario; emptied before each (what a killed worker left)."""
    return Path(tempfile.gettempdir()) / "shiftbed-fleet"


def lock_path() -> Path:
    from topo.runrecord import RUN_DIR

    return RUN_DIR / "fleet.lock"


def shiftbed_fingerprint() -> str:
    """What a scenario's results depend on: every package's code and data, the Python and numpy versions."""
    import hashlib

    import scenarios
    from controller.theory.parallel import code_fingerprint

    top = Path(scenarios.__file__).resolve().parent.parent
    return hashlib.sha256("".join(code_fingerprint(top / name) for name in PACKAGES).encode()).hexdigest()


def worker_state() -> dict:
    """What the client checks of a fabric worker before sending it anything (``client.run``)."""
    return {"host": socket.gethostname(), "root": os.geteuid() == 0, "fingerprint": shiftbed_fingerprint()}


def run_scenario_here(name: str, scenario_text: str, record: dict, controller: str | None = None) -> dict:
    """Scenario ``name`` run here as the batch ``record`` runs it; ``controller``: the client's framework
    (``SHIFTBED_CONTROLLER``), if it chose one. Returns ``host``, ``fingerprint``, the child's
    ``exit_code``, and for a done scenario its ``outcome`` and ``folder`` (packed); else the end of the
    child's output (``worker_log``) and what its attempt wrote (``partial``, packed, or None)."""
    from scenarios.batch.folder import OUTCOME_FILE, BatchFolder
    from scenarios.batch.pack import pack

    returned = {"name": name, "host": socket.gethostname(), "fingerprint": shiftbed_fingerprint(),
                "outcome": None, "folder": None, "worker_log": "", "partial": None}
    with _machine_lock() as lock_fd:
        scratch = scratch_root()
        shutil.rmtree(scratch, ignore_errors=True)
        scratch.mkdir(mode=0o700, parents=True)
        try:
            root, log = scratch / "batch", scratch / "batch.log"
            folder = BatchFolder.create(root, record, {name: scenario_text})
            returned["exit_code"] = _run_child(root, log, lock_fd, controller)
            done, attempt = folder.done_dir(name), folder.work_root / name
            if (done / OUTCOME_FILE).is_file():
                returned["outcome"] = json.loads((done / OUTCOME_FILE).read_text())
                returned["folder"] = pack(done)
            else:
                text = log.read_text(errors="replace") if log.is_file() else ""
                returned["worker_log"] = text[-WORKER_LOG_MAX_BYTES:]
                if attempt.is_dir() and any(attempt.iterdir()):  # kept, as a batch here keeps it
                    returned["partial"] = pack(attempt)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    return returned


def _run_child(root: Path, log: Path, lock_fd: int, controller: str | None) -> int:
    """The one-scenario batch in ``root`` run by :mod:`fleetchild`, its output in ``log``; SIGTERM when the
    client cancels."""
    from controller.framework_choice import FRAMEWORK_ENV

    env = dict(os.environ)
    if controller:
        env[FRAMEWORK_ENV] = controller
    argv = ["setpriv", "--pdeathsig", "TERM", "--", sys.executable, "-m", "scenarios.batch.fleetchild", str(root)]
    with open(log, "w") as stream:
        child = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=stream, stderr=subprocess.STDOUT,
                                 pass_fds=(lock_fd,), env=env)
    while child.poll() is None:
        if _cancelled():
            child.send_signal(signal.SIGTERM)  # the run's own handling: teardown, then exit
            try:
                return child.wait(timeout=TEARDOWN_WAIT_S)
            except subprocess.TimeoutExpired:
                child.kill()
                return child.wait()
        time.sleep(POLL_S)
    return child.returncode


@contextmanager
def _machine_lock():
    """The fleet's lock of this machine, waited for (a child of a killed worker may still tear down)."""
    path = lock_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if _cancelled():
                    raise RuntimeError("cancelled while waiting for this machine's fabric") from None
                time.sleep(POLL_S)
        yield fd
    finally:
        os.close(fd)


def _cancelled() -> bool:
    """Whether the scheduler no longer wants this task (the client cancelled it or went away)."""
    try:
        from distributed import get_worker
        from distributed.worker import thread_state

        task = get_worker().state.tasks.get(thread_state.key)
    except (ImportError, ValueError, AttributeError):  # not on a dask worker
        return False
    return task is None or task.state == "cancelled"

