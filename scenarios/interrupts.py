"""SIGTERM and SIGHUP (a dropped ssh session) take Ctrl-C's path while a command measures.

``run`` and ``batch``, here or on a fleet, turn them into ``KeyboardInterrupt``, so that every
way of stopping them ends as Ctrl-C does: what was measured is kept, and the exit status is 130.
"""

from __future__ import annotations

import contextlib
import os
import signal

SIGNALS = (signal.SIGTERM, signal.SIGHUP)


@contextlib.contextmanager
def interrupts_as_keyboard():
    """Inside the block, SIGTERM and SIGHUP raise ``KeyboardInterrupt``; their handlers are restored after."""
    previous = {sig: signal.signal(sig, _raise_interrupt) for sig in SIGNALS}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _raise_interrupt(signum, frame):
    """SIGTERM and SIGHUP take Ctrl-C's path: teardown, partial results kept; the signal is named."""
    if signum == signal.SIGHUP:
        _detach_from_terminal()
    raise KeyboardInterrupt(signal.Signals(signum).name)


def _detach_from_terminal() -> None:
    """After a hang-up the terminal is gone and writing to it fails: send stdout and stderr to
    /dev/null, so teardown's messages cannot stop it."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    for fd in (1, 2):
        if os.isatty(fd):
            os.dup2(devnull, fd)
    os.close(devnull)
