"""Where the sweep's and the map's combinations run: here, on local processes, or on a dask cluster.

:func:`run_tasks` is the one dispatch: ``fn(task)`` for every task, yielded in
task order whatever the backend, so a caller can stream and merge the results.
Every task carries its own seed, so the results are the same on every backend
(docs/scale.md).

- no scheduler, ``workers`` 1: in this process;
- no scheduler, ``workers`` > 1: that many processes on this machine (they
  inherit the loaded policy files through ``SHIFTBED_POLICY_FILES``);
- ``scheduler_address`` (``tcp://host:8786``): the workers of a running
  ``dask.distributed`` cluster. ``fn`` travels by reference (module and name),
  so every worker needs the same shiftbed installed: :func:`backend` checks
  that the workers' theory code is this one's before any work. The tasks go in
  batches, a few per worker thread in flight at a time, so memory stays bounded
  however many there are; the source of every policy file loaded here travels
  with each batch and the worker registers it first
  (``policies.load_policy_source``): the file itself need not exist there.
"""

from __future__ import annotations

import hashlib
import platform
import re
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from controller.theory import policies
from controller.theory.fluid import exception_line

CONNECT_TIMEOUT_S = 5.0  # to reach the scheduler, and for it to have a worker
BATCHES_PER_WORKER = 20  # tasks are cut into about this many batches per worker (process or thread)
IN_FLIGHT_PER_THREAD = 4  # dask: batches submitted ahead per worker thread (bounds memory)
SCHEMES = ("tcp", "tls")
_ADDRESS = re.compile(r"^(?:(?P<scheme>[a-z]+)://)?(?P<host>\[[0-9a-fA-F:.]+\]|[A-Za-z0-9_.-]+):(?P<port>\d{1,5})$")
_THEORY = Path(__file__).resolve().parent


class SchedulerUnavailable(RuntimeError):
    """The dask cluster cannot do the work: unreachable, no workers, or workers without this shiftbed."""


@dataclass(frozen=True)
class Backend:
    """What runs the tasks: ``kind`` ``"local"`` or ``"dask"``, its worker processes and their threads."""

    kind: str
    workers: int
    threads: int
    address: str | None = None

    def __str__(self) -> str:
        if self.kind == "dask":
            return f"on the dask cluster at {self.address}: {self.workers} workers, {self.threads} threads"
        return "on this machine, in this process" if self.workers == 1 else \
            f"on this machine: {self.workers} processes"


def check_address(address: str) -> str:
    """A scheduler address as dask takes it (``tcp://host:port``, ``tls://host:port`` or ``host:port``);
    ValueError (one line naming it) otherwise."""
    m = _ADDRESS.match(address.strip())
    if not m or (m["scheme"] or "tcp") not in SCHEMES or not 1 <= int(m["port"]) <= 65535:
        raise ValueError(f"{address!r} is not a scheduler address (expected tcp://HOST:PORT, e.g. "
                         "tcp://10.0.0.5:8786)")
    return address.strip() if m["scheme"] else f"tcp://{address.strip()}"


def backend(workers: int, scheduler_address: str | None = None) -> Backend:
    """The backend :func:`run_tasks` would use; for a cluster, connect and check it first
    (:class:`SchedulerUnavailable`, one line naming the address)."""
    if scheduler_address is None:
        return Backend("local", workers, workers)
    with connect(scheduler_address) as client:
        threads = client.nthreads()
        return Backend("dask", len(threads), sum(threads.values()), scheduler_address)


def run_tasks(fn: Callable, tasks: Sequence, workers: int, scheduler_address: str | None = None) -> Iterator:
    """``fn(task)`` for every task, in task order: in this process (``workers`` 1), on ``workers``
    local processes, or on the dask cluster at ``scheduler_address`` (``workers`` is then not used)."""
    tasks = list(tasks)
    if scheduler_address is not None:
        yield from _on_cluster(fn, tasks, scheduler_address)
    elif workers <= 1:
        yield from map(fn, tasks)
    else:
        with ProcessPoolExecutor(workers) as pool:
            yield from pool.map(fn, tasks, chunksize=max(1, len(tasks) // (workers * BATCHES_PER_WORKER)))


def code_fingerprint(package: Path = _THEORY) -> str:
    """What a worker's results depend on: the code and data of ``package`` (the theory's), the Python and
    numpy versions."""
    import numpy

    digest = hashlib.sha256(f"{platform.python_version()} numpy {numpy.__version__}".encode())
    for path in sorted(p for p in package.rglob("*") if p.is_file() and (p.suffix == ".py" or "data" in p.parts)
                       and "__pycache__" not in p.parts):
        digest.update(str(path.relative_to(package)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


# ---------------------------------------------------------------- dask


def connect(address: str):
    """A ``distributed.Client`` of the cluster at ``address``, with a worker that runs this shiftbed."""
    from distributed import Client

    try:
        client = Client(address, timeout=CONNECT_TIMEOUT_S, set_as_default=False)
    except (OSError, TimeoutError) as exc:
        raise SchedulerUnavailable(f"dask scheduler {address}: not reachable within {CONNECT_TIMEOUT_S:g} s "
                                   f"({exception_line(exc)})") from None
    try:
        client.wait_for_workers(1, timeout=CONNECT_TIMEOUT_S)
        mine, theirs = code_fingerprint(), client.run(code_fingerprint)
    except TimeoutError:
        client.close()
        raise SchedulerUnavailable(f"dask scheduler {address}: no worker joined within "
                                   f"{CONNECT_TIMEOUT_S:g} s (start `dask worker {address}`)") from None
    except Exception as exc:  # what a worker that cannot import shiftbed raises is the worker's own
        client.close()
        raise SchedulerUnavailable(f"dask scheduler {address}: a worker cannot run shiftbed ({exception_line(exc)}); "
                                   "install the project on every worker (docs/scale.md)") from None
    other = sorted(w for w, fp in theirs.items() if fp != mine)
    if other:
        client.close()
        raise SchedulerUnavailable(f"dask scheduler {address}: worker {other[0]} runs other theory code or "
                                   "Python/numpy versions than this machine; install the same commit everywhere")
    return client


def _run_batch(fn: Callable, batch: list, policy_sources: dict[str, str]) -> list:
    """On a worker: register the client's policy files, then ``fn`` over the batch."""
    for path, source in policy_sources.items():
        policies.load_policy_source(path, source)
    return [fn(task) for task in batch]


def _on_cluster(fn: Callable, tasks: list, address: str) -> Iterator:
    """Batches submitted in order, at most ``IN_FLIGHT_PER_THREAD`` per worker thread ahead; results
    yielded in order as each batch at the head finishes."""
    client = connect(address)
    in_flight: deque = deque()
    try:
        threads = max(1, sum(client.nthreads().values()))
        size = max(1, len(tasks) // (threads * BATCHES_PER_WORKER))
        batches = iter(tasks[i:i + size] for i in range(0, len(tasks), size))
        sources = policies.policy_sources()
        for batch in batches:
            in_flight.append(client.submit(_run_batch, fn, batch, sources, pure=False))
            if len(in_flight) >= threads * IN_FLIGHT_PER_THREAD:
                yield from in_flight.popleft().result()
        while in_flight:
            yield from in_flight.popleft().result()
    finally:
        if in_flight:
            client.cancel(list(in_flight))
        client.close()
