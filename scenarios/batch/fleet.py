"""``shiftbed batch --dask-scheduler ADDRESS``: the batch's scenarios on a fleet of fabric workers.

The client (this process) plans the batch and owns its folder; each scenario
not done goes to the dask cluster as one task needing the worker resource
``fabric`` (a worker offers ``fabric=1``, so it builds one fabric at a time).
The worker runs it as a batch here does (``batch/fleetworker.py``) and returns
the done folder packed; the client writes it in (``batch/pack.py``), complete
or not at all. Nothing is shared but the scheduler: no common disk.

A worker that dies mid-scenario: the scheduler gives the task to another
worker (dask's own reassignment, up to its ``allowed-failures``) and the
scenario runs again from nothing, since only the client writes its folder.
Every scenario carries the batch's seed, and the table is made from the
folder in the batch's order, so it does not depend on which worker, or how
many, ran what. ``--resume`` sends only the scenarios not done.

Checked before anything is written (docs/scale.md): the address (exit 2),
then a scheduler that answers, at least one worker offering ``fabric``, and
every such worker running as root with this machine's shiftbed (exit 1).
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass

from scenarios.batch.fleetworker import RESOURCE, run_scenario_here, shiftbed_fingerprint
from scenarios.batch.fleetworker import worker_state as fabric_worker_state
from scenarios.batch.results import write_results
from scenarios.errors import EnvironmentProblem, InputError
from scenarios.exitcodes import FAULT, INTERRUPTED, keeps_going
from scenarios.interrupts import interrupts_as_keyboard

WAIT_S = 1.0  # how often the client looks at the fleet while it waits
WORKERLESS_S = 120.0  # the batch stops when no worker offers a fabric for this long


def add_argument(parser) -> None:
    parser.add_argument("--dask-scheduler", metavar="ADDRESS",
                        help=f"run the scenarios on the dask workers at ADDRESS (tcp://HOST:8786) that offer the "
                             f"resource {RESOURCE} (`dask worker ADDRESS --resources {RESOURCE}=1`, as root; "
                             "docs/scale.md); the results come back here")


@dataclass
class Fleet:
    """A connected, checked cluster: the client, its address and the workers offering a fabric."""

    client: object
    address: str
    workers: list[str]

    def __str__(self) -> str:
        n = len(self.workers)
        return f"the dask cluster at {self.address}: {n} worker{'s' * (n != 1)} offering a {RESOURCE}"

    def fabric_workers(self) -> list[str]:
        return fabric_workers(self.client.scheduler_info(n_workers=-1)["workers"])


def fabric_workers(workers: dict) -> list[str]:
    """The addresses, among the scheduler's ``workers`` (address → info), of those offering a fabric."""
    return sorted(a for a, info in workers.items() if (info.get("resources") or {}).get(RESOURCE, 0) >= 1)


def refusal(address: str, states: dict[str, dict], mine: str) -> str | None:
    """Why the fabric workers' ``states`` (address → :func:`fleetworker.worker_state`) cannot run this
    batch, in one line, or None."""
    if not states:
        return (f"dask scheduler {address}: no worker offers the resource {RESOURCE}; start one as root on a "
                f"machine with shiftbed installed: `dask worker {address} --nworkers 1 --nthreads 1 "
                f"--resources {RESOURCE}=1` (docs/scale.md)")
    for worker, state in sorted(states.items()):
        if state["fingerprint"] != mine:
            return (f"dask scheduler {address}: worker {worker} ({state['host']}) runs other shiftbed code or "
                    "Python/numpy versions than this machine; install the same commit everywhere")
        if not state["root"]:
            return (f"dask scheduler {address}: worker {worker} ({state['host']}) does not run as root, and "
                    f"building a fabric needs root: start it with `sudo dask worker ...`")
    return None


def connect(address: str) -> Fleet:
    """The cluster at ``address``, checked (module docstring); one line on stderr saying where it runs."""
    from controller.theory import parallel
    from scenarios.cluster import unavailable_is_environment

    try:
        address = parallel.check_address(address)
    except ValueError as exc:
        raise InputError(f"--dask-scheduler: {exc}") from None
    with unavailable_is_environment():
        client = parallel.connect(address)
    try:
        workers = fabric_workers(client.scheduler_info(n_workers=-1)["workers"])
        states = client.run(fabric_worker_state, workers=workers) if workers else {}
    except Exception as exc:  # what a worker that cannot import this shiftbed raises is the worker's own
        client.close()
        raise EnvironmentProblem(f"dask scheduler {address}: a worker cannot run shiftbed's batch "
                                 f"({exc.__class__.__name__}: {exc}); install the project on every worker") from None
    why = refusal(address, states, shiftbed_fingerprint())
    if why:
        client.close()
        raise EnvironmentProblem(why)
    fleet = Fleet(client, address, workers)
    print(f"batch: running on {fleet}", file=sys.stderr)
    return fleet


def run_fleet(folder, fleet: Fleet) -> int:
    """Every scenario not done, sent to the fleet, each written in as it comes back; then the table and
    the report (``results.write_results``). Like the batch here: 130 when interrupted, the first
    status that stops a batch (the rest cancelled), else the batch's combined status."""
    try:
        with interrupts_as_keyboard():
            code = _dispatch(folder, fleet)
    finally:
        fleet.client.close()
    return write_results(folder) if code is None else code


def _dispatch(folder, fleet: Fleet) -> int | None:
    """Submit, wait, write in; None when every scenario came back to go on, else the status to stop with."""
    from controller.framework_choice import FRAMEWORK_ENV
    from scenarios.batch.progress import BatchProgress
    from scenarios.experiment.progressview import duration_text

    pending = folder.pending()
    progress = BatchProgress(folder, pending)
    say = progress.display.record
    say(f"batch {folder.root}: {len(pending)} of {len(folder.names)} scenarios to run on {fleet}", False)
    controller = os.environ.get(FRAMEWORK_ENV)
    futures = {}
    for i, name in enumerate(pending):  # earlier scenarios first
        futures[fleet.client.submit(run_scenario_here, name, folder.scenario_file(name).read_text(), folder.record,
                                    controller, resources={RESOURCE: 1}, priority=len(pending) - i, pure=False,
                                    key=f"shiftbed-batch-{name}-{os.urandom(4).hex()}")] = name
    started, workerless_since, mine = time.monotonic(), None, shiftbed_fingerprint()
    try:
        while futures:
            done = [f for f in futures if f.done()]
            if not done:
                time.sleep(WAIT_S)
            for future in sorted(done, key=lambda f: pending.index(futures[f])):
                name = futures.pop(future)
                code = _write_in(folder, name, future, mine)
                # the scheduler recomputes a result the client still holds if the worker holding it dies:
                # a scenario written in is let go at once, so a killed worker costs only its own scenario
                future.release()
                if not keeps_going(code):
                    print(f"shiftbed batch: {name} stopped the batch (exit {code}); `shiftbed batch --resume "
                          f"{folder.root} --dask-scheduler {fleet.address}` runs it again and the rest",
                          file=sys.stderr)
                    return code
                progress.scenario_done(name)
                left = len(futures) * (time.monotonic() - started) / (len(pending) - len(futures))
                if futures:
                    say(f"about {duration_text(left)} left for the {len(futures)} scenarios still out", False)
            workerless_since = None if fleet.fabric_workers() else (workerless_since or time.monotonic())
            if workerless_since is not None and time.monotonic() - workerless_since > WORKERLESS_S:
                raise EnvironmentProblem(f"dask scheduler {fleet.address}: no worker has offered a {RESOURCE} for "
                                         f"{WORKERLESS_S:g} s; {len(futures)} scenarios not done (`--resume` runs "
                                         "them)")
    except KeyboardInterrupt:
        print(f"shiftbed batch: interrupted; `shiftbed batch --resume {folder.root} --dask-scheduler "
              f"{fleet.address}` runs what is not done", file=sys.stderr)
        return INTERRUPTED
    finally:
        if futures:
            fleet.client.cancel(list(futures))  # the workers stop their runs (fleetworker._cancelled)
    return None


def _keep_attempt(folder, name: str, returned: dict) -> str:
    """What the worker's attempt at a scenario not done wrote, kept as a batch here keeps it; said as
    the end of the one line that reports it (nothing when the attempt wrote nothing)."""
    from scenarios.batch.pack import WORKER_LOG, keep_unfinished

    if returned["partial"] is None:
        return ""
    try:
        work = keep_unfinished(folder, name, returned["partial"], returned["worker_log"])
    except ValueError as exc:
        return f" (what it wrote could not be kept: {exc})"
    return f" (what it wrote, and its output in {WORKER_LOG}: {work})"


def _write_in(folder, name: str, future, mine: str) -> int:
    """What a scenario's task returned, written into the batch when it is a done scenario from a worker
    with this shiftbed; the scenario's status, or the one that stops the batch (said in one line)."""
    from controller.theory.fluid import exception_line
    from scenarios.batch.pack import adopt

    try:
        returned = future.result()
    except Exception as exc:  # the task's own error, or dask's KilledWorker after too many workers died
        print(f"shiftbed batch: {name}: on the fleet: {exception_line(exc)}", file=sys.stderr)
        return FAULT
    where = f"{name} on {returned['host']}"
    if returned["fingerprint"] != mine:
        print(f"shiftbed batch: {where}: that worker runs other shiftbed code than this machine; its results are "
              "not kept (install the same commit everywhere)", file=sys.stderr)
        return FAULT
    if returned["outcome"] is None:
        last = returned["worker_log"].splitlines()[-1:] or ["no output"]
        kept = _keep_attempt(folder, name, returned)
        print(f"shiftbed batch: {where}: not done (exit {returned['exit_code']}): {last[0]}{kept}", file=sys.stderr)
        return returned["exit_code"] if not keeps_going(returned["exit_code"]) else FAULT
    try:
        adopt(folder, name, returned["folder"], returned["outcome"])
    except ValueError as exc:
        print(f"shiftbed batch: {where}: its results could not be written in: {exc}", file=sys.stderr)
        return FAULT
    return returned["outcome"]["exit_code"]
