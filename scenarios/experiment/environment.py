"""``environment.json``: the versions and settings a reader needs to reproduce a run."""

from __future__ import annotations

import os
import platform
import subprocess
from pathlib import Path

from apps import iperf as iperf_app
from scenarios.version import baked_commit, checkout_commit

REPO = Path(__file__).resolve().parents[2]


def controller_record(fabric) -> dict | None:
    """``{framework, version, hub, python}`` from the running controller's ``/fabric/status``."""
    try:
        return fabric.controller.status().get("controller")
    except (AttributeError, OSError, ValueError):
        return None


def environment_record(fabric) -> dict:
    """Versions and settings a reader needs to reproduce the run."""

    def output(argv):
        try:
            return subprocess.run(argv, capture_output=True, text=True, timeout=10).stdout.strip()
        except (OSError, subprocess.TimeoutExpired):
            return None

    iperf = output(["iperf3", "--version"])
    return {
        "shiftbed_commit": checkout_commit(REPO) or baked_commit(),  # as `shiftbed --version` names it
        "ovs_version": fabric.ovs_version,
        # the framework the run's controller ran on, as it says itself: ryu or os-ken, version, hub
        "controller": controller_record(fabric),
        "iperf3_version": iperf.splitlines()[0] if iperf else None,
        "kernel": platform.release(),
        "python": platform.python_version(),
        "datapath": fabric.datapath,
        "mtu": fabric.mtu,
        "queue_ms": fabric.queue_ms,
        "tcp_rto_min_ms": fabric.tcp_rto_min_ms,  # None: the kernel's (200 ms)
        "cores": os.cpu_count(),
        "link_mbps": min(fabric.params.host_link_mbps, fabric.params.fabric_link_mbps),  # a flow's rate
        "shared_link_mbps": fabric.params.fabric_link_mbps,  # what the jobs' bursts share (a leaf uplink)
        "fabric_startup_s": fabric.startup_s,
        "ovs_tx_sndbuf_bytes": fabric.ovs_tx_sndbuf_bytes,
        "ovs_heap": fabric.ovs_heap,  # topo/ovs_heap.py: tuned, warmed or shared (userspace datapath)
        "burst_tcp": {"congestion_control": iperf_app.CONGESTION, "nodelay": True},
    }
