"""``--dask-scheduler ADDRESS`` for ``sweep`` and ``map``: where the combinations run.

Without it they run on this machine (``--workers`` processes); with it, on the
workers of a running ``dask.distributed`` cluster (``controller/theory/parallel.py``,
docs/scale.md). A malformed address is bad input (exit 2); a scheduler that
cannot be reached, has no worker, or whose workers run other code is a problem
of the environment (exit 1). Both are found before any work, and said in one
line naming the address.
"""

from __future__ import annotations

import sys
from contextlib import contextmanager

from controller.theory import parallel
from scenarios.errors import EnvironmentProblem, InputError


def add_argument(parser) -> None:
    parser.add_argument("--dask-scheduler", default=None, metavar="ADDRESS",
                        help="run on the dask.distributed cluster at ADDRESS (tcp://HOST:8786; docs/scale.md) "
                             "instead of this machine; --workers is then not used; results are the same")


@contextmanager
def unavailable_is_environment():
    """A cluster that cannot do the work (:class:`parallel.SchedulerUnavailable`) as an EnvironmentProblem."""
    try:
        yield
    except parallel.SchedulerUnavailable as exc:
        raise EnvironmentProblem(str(exc)) from None


def connect(args, command: str) -> parallel.Backend:
    """The backend ``args`` ask for, checked (address, reachability, workers); one line on stderr saying it."""
    address = args.dask_scheduler
    if address is not None:
        try:
            address = parallel.check_address(address)
        except ValueError as exc:
            raise InputError(f"--dask-scheduler: {exc}") from None
    with unavailable_is_environment():
        backend = parallel.backend(args.workers, address)
    print(f"{command}: running {backend}", file=sys.stderr)
    return backend
