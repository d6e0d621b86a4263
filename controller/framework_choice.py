"""Which OpenFlow framework runs the controller, decided without importing either.

``$SHIFTBED_CONTROLLER`` (``ryu`` or ``os-ken``) when set, else Ryu where it
runs (Python before 3.12, installed), else os-ken. ``python -m controller
--framework NAME`` sets the variable for its own process. Tests and the
command line ask here which frameworks exist, since importing one (eventlet's
monkey patching under Ryu) must stay out of processes that build Mininet
networks; ``controller/framework.py`` imports the chosen one.
"""

from __future__ import annotations

import importlib.util
import os
import sys

FRAMEWORK_ENV = "SHIFTBED_CONTROLLER"
PACKAGES = {"ryu": "ryu", "os-ken": "os_ken"}


class FrameworkError(RuntimeError):
    """No usable framework: the message is one line that says what to do."""


def installed() -> list[str]:
    """The frameworks this Python can run, in order of preference."""
    found = []
    if sys.version_info < (3, 12) and importlib.util.find_spec("ryu") is not None:
        found.append("ryu")
    if importlib.util.find_spec("os_ken") is not None:
        found.append("os-ken")
    return found


def choose(requested: str | None = None) -> str:
    """The framework to run: ``requested``, else ``$SHIFTBED_CONTROLLER``, else the first installed."""
    requested = requested or os.environ.get(FRAMEWORK_ENV) or None
    available = installed()
    if requested is not None:
        if requested not in PACKAGES:
            raise FrameworkError(f"{FRAMEWORK_ENV}={requested!r}: must be one of {', '.join(PACKAGES)}")
        if requested not in available:
            why = ("Ryu 4.34 does not run on Python 3.12 or later" if requested == "ryu" and sys.version_info >= (3, 12)
                   else f"{PACKAGES[requested]} is not installed in {sys.prefix}")
            raise FrameworkError(f"controller framework {requested} is not available here: {why} (run make install)")
        return requested
    if not available:
        raise FrameworkError(f"neither Ryu nor os-ken is installed in {sys.prefix}: run make install")
    return available[0]
