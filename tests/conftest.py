"""Shared test set-up.

- The ``root`` marker skips cleanly, with the reason, when not root.
- A measurement the machine's host disturbed in every attempt (``apps.hoststeal.HostBusy``:
  it took more than ``MAX_STEAL_PCT`` of the CPU each time) cannot judge shiftbed: the test
  is reported as skipped, with the host's figures as the reason, not as passed or failed.
- A suite started in the background by a shell (``make test &``) inherits SIGINT ignored,
  and so would every ``shiftbed run`` it starts: Python then installs no Ctrl-C handler,
  and the interrupt tests' Ctrl-C would be lost. Ctrl-C is restored for the session.
- Hypothesis is derandomised and has no per-example deadline, so a property
  test gives the same verdict on every run and on a loaded 2-core CI machine.
"""

import os
import signal

import pytest
from hypothesis import settings

from apps.hoststeal import HostBusy

settings.register_profile("shiftbed", derandomize=True, deadline=None, print_blob=True)
settings.load_profile("shiftbed")


def pytest_configure(config):
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_collection_modifyitems(config, items):
    if os.geteuid() == 0:
        return
    skip = pytest.mark.skip(reason="needs root: builds real Mininet/OVS/Ryu networks (run `sudo make test`)")
    for item in items:
        if "root" in item.keywords:
            item.add_marker(skip)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if call.excinfo is not None and call.excinfo.errisinstance(HostBusy):
        report.outcome = "skipped"
        report.longrepr = (str(item.path), item.location[1] or 0, f"Skipped: inconclusive: {call.excinfo.value}")
