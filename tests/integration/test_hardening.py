"""What a run exposes to the network: every socket it listens on is on loopback or inside one
of its Mininet hosts' network namespaces.

A real `shiftbed run` (one job, the `gate` policy, so the scheduler app fires edges) is
watched while it goes: every 0.2 s its processes are read from its run record (the
controller, the Mininet node shells, the job drivers, the iperf3 server daemons found
from their pid files) plus its descendants, and `ss -ltunp` lists the listening sockets
of the root namespace and of each host's namespace.
"""

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from topo import runrecord

pytestmark = pytest.mark.root

REPO = Path(__file__).resolve().parents[2]
SHIFTBED = str(Path(sys.executable).with_name("shiftbed"))
ONE_JOB = """\
name: exposure
fabric: {spines: 1, leaves: 2, hosts_per_leaf: 2, host_link_mbps: 50, fabric_link_mbps: 50}
jobs:
  - {name: a, period_ms: 300, comm_ms: 100, workers: [h1, h3]}
"""
LOOPBACK = {"127.0.0.1", "::1", "::ffff:127.0.0.1"}
MAX_RUN_S = 600.0  # calibration ~30 s, the policy, teardown; measured again when the host is busy


def netns_of(pid: int) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/ns/net")
    except OSError:
        return None


def descendants(pid: int) -> set[int]:
    found, pending = set(), [pid]
    while pending:
        parent = pending.pop()
        try:
            tasks = os.listdir(f"/proc/{parent}/task")
        except OSError:
            continue
        for task in tasks:
            try:
                kids = [int(p) for p in Path(f"/proc/{parent}/task/{task}/children").read_text().split()]
            except (OSError, ValueError):
                continue
            found.update(kids)
            pending += kids
    return found


def record_of(owner_pid: int) -> dict | None:
    for path in runrecord.RUN_DIR.glob("*.json"):
        try:
            doc = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if doc.get("owner_pid") == owner_pid:
            return doc
    return None


def listening(in_netns_of: int | None = None) -> list[tuple[str, int, set[int]]]:
    """``(address, port, owner PIDs)`` of every listening TCP and bound UDP socket of a namespace
    (the root namespace, or that of process ``in_netns_of``)."""
    argv = ["ss", "-H", "-l", "-t", "-u", "-n", "-p"]
    if in_netns_of is not None:
        argv = ["nsenter", f"--net=/proc/{in_netns_of}/ns/net", *argv]
    done = subprocess.run(argv, capture_output=True, text=True)
    if done.returncode != 0:  # the host's namespace went away meanwhile
        return []
    sockets = []
    for line in done.stdout.splitlines():
        local = line.split()[4]  # Netid State Recv-Q Send-Q Local Peer Process
        address, port = local.rsplit(":", 1)
        address = address.strip("[]").split("%", 1)[0]
        sockets.append((address, int(port) if port.isdigit() else -1, {int(p) for p in re.findall(r"pid=(\d+)", line)}))
    return sockets


def test_every_socket_a_run_listens_on_is_on_loopback_or_in_a_host(tmp_path, one_job_calibration):
    scenario = tmp_path / "exposure.yaml"
    scenario.write_text(ONE_JOB)
    stderr_path = tmp_path / "run.stderr"
    root_ns = netns_of(os.getpid())
    exposed, other_namespaces, host_namespaces = set(), set(), set()
    on_loopback, in_hosts = set(), set()
    controller_ports = {}
    with open(stderr_path, "w") as stderr:
        run = subprocess.Popen([SHIFTBED, "run", str(scenario), "--out", str(tmp_path / "out"), "--policy", "gate",
                                "--duration", "3", *one_job_calibration], stdout=subprocess.DEVNULL, stderr=stderr,
                               cwd=REPO)
    try:
        deadline = time.monotonic() + MAX_RUN_S
        while run.poll() is None:
            assert time.monotonic() < deadline, stderr_path.read_text()[-3000:]
            record = record_of(run.pid) or {"processes": [], "notes": {}}
            controller_ports.update(record["notes"].get("controller", {}))
            ours = {run.pid} | descendants(run.pid) | {p["pid"] for p in record["processes"]}
            namespaces = {pid: netns_of(pid) for pid in ours}
            hosts = {netns_of(p["pid"]): p["pid"] for p in record["processes"] if p["label"].startswith("node:h")}
            hosts.pop(None, None)
            hosts.pop(root_ns, None)
            host_namespaces.update(hosts)
            for address, port, owners in listening():
                if owners & ours:
                    (on_loopback if address in LOOPBACK else exposed).add((address, port, tuple(sorted(owners))))
            other_namespaces.update((pid, ns) for pid, ns in namespaces.items() if ns not in (None, root_ns))
            for pid in hosts.values():
                in_hosts.update((address, port) for address, port, owners in listening(pid) if owners)
            time.sleep(0.2)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    assert run.returncode in (0, 1, 3), stderr_path.read_text()[-3000:]  # 1: a gap, 3: fidelity lost; still a run
    assert not exposed, f"the run listened beyond loopback in the root namespace: {sorted(exposed)}"
    # Mininet starts the hosts' shells before the run's record lists them, so a namespace is judged
    # against every host namespace the record ever named, not the ones named at that instant
    foreign_namespaces = {(pid, ns) for pid, ns in other_namespaces if ns not in host_namespaces}
    assert not foreign_namespaces, f"run processes in a namespace that is no host's: {sorted(foreign_namespaces)}"
    # the test saw what it is about: the controller's two ports, and the iperf3 servers in the hosts
    loopback_ports = {port for _, port, _ in on_loopback}
    assert controller_ports and {controller_ports["ofp_port"], controller_ports["wsapi_port"]} <= loopback_ports, \
        (controller_ports, sorted(on_loopback))
    assert in_hosts, "no socket seen listening inside a host: the servers were never watched"
