"""Shared test set-up.

- The ``root`` marker skips cleanly, with the reason, when not root.
- Hypothesis is derandomised and has no per-example deadline, so a property
  test gives the same verdict on every run and on a loaded 2-core CI machine.
"""

import os

import pytest
from hypothesis import settings

settings.register_profile("shiftbed", derandomize=True, deadline=None, print_blob=True)
settings.load_profile("shiftbed")


def pytest_collection_modifyitems(config, items):
    if os.geteuid() == 0:
        return
    skip = pytest.mark.skip(reason="needs root: builds real Mininet/OVS/Ryu networks (run `sudo make test`)")
    for item in items:
        if "root" in item.keywords:
            item.add_marker(skip)
