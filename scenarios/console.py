"""How a shiftbed process speaks on stderr: quiet logging, and the problems that end a command.

The command line (``scenarios/cli.py``) and the child a fleet's worker starts for a scenario
(``batch/fleetchild.py``) both speak this way, so a problem reads the same wherever the work ran:
one line, ``shiftbed COMMAND: ...``, and its exit status (``scenarios/exitcodes.py``).
"""

import logging
import sys

from scenarios import exitcodes
from scenarios.errors import EnvironmentProblem, InputError


def configure_logging(verbosity: int) -> None:
    """Logs on stderr, the message only: warnings by default, INFO with ``-v``, DEBUG with ``-vv``.

    Libraries speak only at ``-vv``: matplotlib, for one, warns that it is
    building its font cache the first time it draws on a fresh machine.
    """
    level = logging.WARNING if verbosity <= 0 else logging.INFO if verbosity == 1 else logging.DEBUG
    logging.basicConfig(level=level, format="%(message)s", stream=sys.stderr)
    if verbosity < 2:
        logging.getLogger("matplotlib").setLevel(logging.ERROR)


def exit_status(command: str, work) -> int:
    """``work()``'s exit status; bad input (``InputError``, 2), a missing component
    (``EnvironmentProblem``, 1) and Ctrl-C outside a run's own handling (130) said in one line on
    stderr, ``shiftbed COMMAND: ...``."""
    try:
        return int(work() or 0)
    except InputError as exc:
        print(f"shiftbed {command}: {exc}", file=sys.stderr)
        return exitcodes.BAD_INPUT
    except EnvironmentProblem as exc:
        print(f"shiftbed {command}: {exc}", file=sys.stderr)
        return exitcodes.FAULT
    except KeyboardInterrupt:  # Ctrl-C outside a run's own handling (which keeps its measurements)
        print(f"shiftbed {command}: interrupted", file=sys.stderr)
        return exitcodes.INTERRUPTED
