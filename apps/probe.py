"""Measure what a fabric really carries: concurrent iperf3 flows, receiver-side Mbit/s.

Used by ``shiftbed check``, ``bench/fabric.py`` and the integration tests, so
all three judge fidelity (realized / configured rate) the same way. Each flow
gets its own server port (an iperf3 server serves one test at a time).
"""

import json
import time
from concurrent.futures import ThreadPoolExecutor

from topo.tcp_ports import FIRST_SERVER_PORT

BASE_PORT = FIRST_SERVER_PORT  # flow i's server listens on BASE_PORT + i


def cross_leaf_pairs(wiring, count: int) -> list[tuple[str, str]]:
    """``count`` (src, dst) host pairs whose paths share no link direction whatever
    ECMP picks, while the fabric allows: flow i goes from leaf i to leaf i+1 (a
    ring), from host slot s to slot s+1, so with two or more hosts per leaf no
    host both sends and receives in the first round of the ring."""
    leaves = wiring.params.leaves
    if leaves < 2:
        raise ValueError("cross-leaf flows need at least 2 leaves")
    pairs = []
    for index in range(count):
        src_leaf = index % leaves + 1
        dst_leaf = src_leaf % leaves + 1
        slot = (index // leaves) % wiring.params.hosts_per_leaf
        dst_slot = (slot + 1) % wiring.params.hosts_per_leaf
        pairs.append((wiring.hosts_on_leaf(src_leaf)[slot].name, wiring.hosts_on_leaf(dst_leaf)[dst_slot].name))
    return pairs


def measure_flows(fabric, pairs, seconds: float = 4.0, omit_s: float = 1.0, base_port: int = BASE_PORT,
                  attempts: int = 3, busy_raises: bool = False) -> list[float]:
    """Run one TCP flow per (src, dst) pair at the same time; return receiver Mbit/s per flow.

    The first ``omit_s`` seconds (slow start) are left out of the average. A
    measurement during which the machine's host took more than
    ``apps.hoststeal.MAX_STEAL_PCT`` of its CPU measures the host, not the
    fabric (35 % stolen: 43-45 of 50 Mbit/s; 1-3 %: 49.3-49.6): it is measured
    again, up to ``attempts`` times in all, and the last one is returned (or, with
    ``busy_raises``, ``apps.hoststeal.HostBusy`` raised if every one was disturbed).
    """
    from apps import hoststeal

    return hoststeal.undisturbed(lambda _attempt: _measure_once(fabric, pairs, seconds, omit_s, base_port),
                                 f"flows {pairs}", attempts, busy_raises)


def _measure_once(fabric, pairs, seconds: float, omit_s: float, base_port: int) -> list[float]:
    servers = [fabric.spawn(dst, ["iperf3", "-s", "-1", "-p", str(base_port + i)], label=f"iperf3-server:{dst}")
               for i, (_src, dst) in enumerate(pairs)]
    try:
        time.sleep(0.3)

        def client(i_pair):
            i, (src, dst) = i_pair
            argv = ["iperf3", "-c", fabric.ip(dst), "-p", str(base_port + i), "-t", f"{seconds:g}",
                    "-O", f"{omit_s:g}", "-J"]
            result = fabric.run(src, argv, timeout_s=seconds + omit_s + 20)
            report = json.loads(result.stdout)
            if "error" in report:
                raise RuntimeError(f"iperf3 {src}->{dst}: {report['error']}")
            return report["end"]["sum_received"]["bits_per_second"] / 1e6

        with ThreadPoolExecutor(max_workers=len(pairs)) as pool:
            return list(pool.map(client, enumerate(pairs)))
    finally:
        for server in servers:
            fabric.stop_process(server)
