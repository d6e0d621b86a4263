"""Benchmark the sender stall: how often a host sending two flows at once waits 200 ms.

One host (h1) sends two 97-KB flows at once, as a parameter server's second
phase does (iperf3 ``-R``: the server on h1 sends, clients on two leaf-2
hosts receive), again and again on a 1-spine, 2-leaf fabric at 25 Mbit/s. The
hosts get shiftbed's TCP settings (``apps.iperf.tune_host_tcp``). Each
variant runs in turn, in alternating blocks of 50 bursts so that a slow
stretch of the machine falls on every variant alike: each ``--lowat`` value
for ``tcp_notsent_lowat``, and with ``--host-queue switch`` each also with the
hosts' own data queues as shallow as the switch ports' (20 ms), as they were
before ``topo.leafspine.HOST_QUEUE_FRAMES``.

Per variant: bursts, the median data time of a burst's slower flow, the bursts
whose slower flow took 100 ms or more over that median (a stall: the kernel's
200-ms probe timer), the CPU time the two iperf3 servers took per burst
(their select() loop spins from the last write to the end of the test), and
the packets the sending host's own egress queue dropped.

``sudo .venv/bin/python bench/sender_stall.py [--bursts 500] [--lowat 16384,32768] [--host-queue switch] [--json]``
(root; one fabric at a time; ~1 min per 400 bursts).
"""

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from apps import iperf  # noqa: E402
from topo.leafspine import (  # noqa: E402
    DEFAULT_QUEUE_MS,
    FAIR_CLASSES,
    JUMBO_MTU,
    data_queue_bytes,
    fair_classid,
)
from topo.tcp_ports import receiver_port  # noqa: E402
from topo.wiring import FabricParams  # noqa: E402

LINK_MBPS = 25
FLOW_BYTES = 96_988  # a parameter-server flow of scenarios/param-server.yaml, as calibrated
BLOCK = 50  # bursts in a row with one variant
STALL_MS = 100  # over the median
PARAMS = FabricParams(spines=1, leaves=2, hosts_per_leaf=2, host_link_mbps=LINK_MBPS, fabric_link_mbps=LINK_MBPS)
SENDER, RECEIVERS, PORTS = "h1", ("h3", "h4"), (5201, 5202)


def cpu_s(pids) -> float:
    """User + system CPU seconds of these processes so far."""
    ticks = 0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        ticks += int(fields[11]) + int(fields[12])
    return ticks / os.sysconf("SC_CLK_TCK")


def host_drops(fabric, host: str) -> int:
    """Packets the host's own egress queue dropped so far (its root qdisc counts its classes')."""
    out = fabric.run(host, ["tc", "-s", "qdisc", "show", "dev", f"{host}-eth0"]).stdout
    root = out.split("qdisc ", 2)[1]
    return int(root.split("dropped ", 1)[1].split(",", 1)[0])


def set_host_queues(fabric, as_hosts: bool) -> None:
    """Every data FIFO of the hosts' own interfaces: a host's depth (shiftbed's), or a switch port's."""
    limit = data_queue_bytes(LINK_MBPS, DEFAULT_QUEUE_MS, JUMBO_MTU, on_host=as_hosts)
    for host in (SENDER, *RECEIVERS):
        for dscp in range(FAIR_CLASSES + 1):
            classid = fair_classid(dscp)
            out = fabric.host(host).cmd(f"tc qdisc change dev {host}-eth0 parent {classid} "
                                        f"handle {0x30 + dscp:x}: bfifo limit {limit}")
            if out.strip():
                raise RuntimeError(f"{host}: tc qdisc change: {out.strip()}")


def summary(variant: tuple[int, str], slower_ms: list[float], cpu: float, drops: int) -> dict:
    median = statistics.median(slower_ms)
    stalled = sorted(ms for ms in slower_ms if ms >= median + STALL_MS)
    lowat, host_queue = variant
    return {"lowat_bytes": lowat, "host_queue": host_queue, "bursts": len(slower_ms), "median_data_ms": round(median, 1),
            "stalled": len(stalled), "stalled_ms": [round(ms, 1) for ms in stalled],
            "iperf3_cpu_ms_per_burst": round(1000 * cpu / len(slower_ms), 2), "sender_queue_drops": drops}


def measure(fabric, work: Path, variants: list[tuple[int, str]], bursts: int) -> list[dict]:
    hosts = [fabric.host(h).pid for h in (SENDER, *RECEIVERS)]
    servers = [iperf.start_server(port, str(work / f"s{port}.pid"), hosts[0]) for port in PORTS]
    slower = {variant: [] for variant in variants}
    cpu = dict.fromkeys(variants, 0.0)
    drops = dict.fromkeys(variants, 0)
    try:
        while any(len(slower[variant]) < bursts for variant in variants):
            for variant in variants:
                lowat, host_queue = variant
                set_host_queues(fabric, as_hosts=host_queue == "host")
                for pid in hosts:
                    iperf.tune_host_tcp(pid)
                    subprocess.run(["mnexec", "-a", str(pid), "sysctl", "-q", "-w", f"net.ipv4.tcp_notsent_lowat={lowat}"],
                                   check=True)
                before, dropped_before = cpu_s(s.pid for s in servers), host_drops(fabric, SENDER)
                for _ in range(min(BLOCK, bursts - len(slower[variant]))):
                    clients = [iperf.Client(fabric.ip(SENDER), port, receiver_port(port), FLOW_BYTES, pid)
                               for port, pid in zip(PORTS, hosts[1:], strict=True)]
                    results = [c.wait(30) for c in clients]
                    errors = [r.error for r in results if r.error]
                    if errors:
                        raise RuntimeError(f"burst failed: {errors[0]}")
                    slower[variant].append(1000 * max(r.seconds for r in results))
                    time.sleep(0.05)
                cpu[variant] += cpu_s(s.pid for s in servers) - before
                drops[variant] += host_drops(fabric, SENDER) - dropped_before
    finally:
        iperf.stop_servers(servers)
    return [summary(variant, slower[variant], cpu[variant], drops[variant]) for variant in variants]


def markdown(result: dict) -> str:
    lines = [f"# Sender stalls: one host, two {FLOW_BYTES}-byte flows at {LINK_MBPS} Mbit/s",
             "", f"machine: {result['machine']}", "",
             "| tcp_notsent_lowat (bytes) | hosts' queue | bursts | median data (ms) | stalled | iperf3 CPU per burst (ms) "
             "| sender's queue drops |", "|---:|---|---:|---:|---:|---:|---:|"]
    lines += [f"| {r['lowat_bytes']} | {r['host_queue']} | {r['bursts']} | {r['median_data_ms']} | {r['stalled']} "
              f"{r['stalled_ms'][:5] if r['stalled_ms'] else ''} | {r['iperf3_cpu_ms_per_burst']} "
              f"| {r['sender_queue_drops']} |" for r in result["rows"]]
    return "\n".join(lines)


def parse_lowats(text: str) -> list[int]:
    values = [int(v) for v in text.split(",")]
    if not values or any(v < 1 for v in values) or len(set(values)) != len(values):
        raise ValueError(text)
    return values


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bursts", type=int, default=500, help="bursts per value (default: %(default)s)")
    parser.add_argument("--lowat", default=str(iperf.NOTSENT_LOWAT_BYTES),
                        help="comma-separated tcp_notsent_lowat values, bytes (default: %(default)s, shiftbed's)")
    parser.add_argument("--host-queue", choices=("host", "switch"), action="append",
                        help="the hosts' own data queues: 'host' (shiftbed's, 1000 frames) or 'switch' (20 ms, "
                             "as deep as a switch port's); repeat to compare (default: host)")
    parser.add_argument("--json", action="store_true", help="one JSON object on stdout")
    args = parser.parse_args(argv)
    try:
        lowats = parse_lowats(args.lowat)
    except ValueError:
        print(f"bench/sender_stall.py: --lowat: expected distinct positive whole numbers of bytes, got {args.lowat!r}",
              file=sys.stderr)
        return 2
    if args.bursts < 1:
        print(f"bench/sender_stall.py: --bursts: must be at least 1, got {args.bursts}", file=sys.stderr)
        return 2
    if os.geteuid() != 0:
        print("bench/sender_stall.py: needs root (builds a Mininet fabric)", file=sys.stderr)
        return 2
    from controller.process import FabricController
    from topo.fabric import Fabric

    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="shiftbed-bench-stall-") as tmp, \
            Fabric(PARAMS, FabricController()) as fabric:
        variants = [(lowat, queue) for queue in dict.fromkeys(args.host_queue or ["host"]) for lowat in lowats]
        rows = measure(fabric, Path(tmp), variants, args.bursts)
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")), "?")
    result = {"machine": {"kernel": platform.release(), "cpus": os.cpu_count(), "cpu": cpu},
              "link_mbps": LINK_MBPS, "flow_bytes": FLOW_BYTES, "stall_ms_over_median": STALL_MS,
              "rows": rows, "elapsed_s": round(time.monotonic() - started, 1)}
    print(json.dumps(result) if args.json else markdown(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
