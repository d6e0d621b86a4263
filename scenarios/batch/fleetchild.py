"""The child process a fleet's worker starts for one scenario: its one-scenario batch, run here.

``python -m scenarios.batch.fleetchild ROOT`` runs the batch folder ROOT that the worker wrote
(``batch/fleetworker.py``) as ``shiftbed batch --resume ROOT`` would, through the same code
(``batch/local.py``, each run through ``experiment/session.py``), in a process of its own whose
main thread takes the signals a fabric's teardown needs. Its output, the worker's log, says every
problem as the command line does (``scenarios/console.py``): the client shows its last line.
"""

import sys

from scenarios.batch.folder import BatchFolder
from scenarios.batch.local import run_batch
from scenarios.console import configure_logging, exit_status
from scenarios.experiment.session import require_root


def run_here(root: str) -> int:
    """The batch in ``root``: what is not done, then its table and report; its exit status."""
    folder = BatchFolder.open(root)
    require_root("shiftbed batch")
    return run_batch(folder)


def main(argv: list[str]) -> int:
    configure_logging(0)
    return exit_status("batch", lambda: run_here(argv[0]))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
