"""Shared test fixtures: the `root` marker skips cleanly when not root."""

import os

import pytest


def pytest_collection_modifyitems(config, items):
    if os.geteuid() == 0:
        return
    skip = pytest.mark.skip(reason="needs root: builds real Mininet/OVS/Ryu networks (run `sudo make test`)")
    for item in items:
        if "root" in item.keywords:
            item.add_marker(skip)
