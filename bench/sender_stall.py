"""Benchmark the sender stall: how often a host sending two flows at once waits 200 ms, per unsent limit.

One host (h1) sends two 97-KB flows at once, as a parameter server's second
phase does (iperf3 ``-R``: the server on h1 sends, clients on two leaf-2
hosts receive), again and again on a 1-spine, 2-leaf fabric at 25 Mbit/s. The
hosts get shiftbed's TCP settings (``apps.iperf.tune_host_tcp``) with each
``--lowat`` value in turn for ``tcp_notsent_lowat``, in alternating blocks of
50 bursts so that a slow stretch of the machine falls on every value alike.

Per value: bursts, the median data time of a burst's slower flow, the bursts
whose slower flow took 100 ms or more over that median (a stall: the kernel's
200-ms probe timer), and the CPU time the two iperf3 servers took per burst
(their select() loop spins from the last write to the end of the test).

``sudo .venv/bin/python bench/sender_stall.py [--bursts 500] [--lowat 16384,32768] [--json]``
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
from topo.tcp_ports import receiver_port  # noqa: E402
from topo.wiring import FabricParams  # noqa: E402

LINK_MBPS = 25
FLOW_BYTES = 96_988  # a parameter-server flow of scenarios/param-server.yaml, as calibrated
BLOCK = 50  # bursts in a row with one value
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


def summary(lowat: int, slower_ms: list[float], cpu: float) -> dict:
    median = statistics.median(slower_ms)
    stalled = sorted(ms for ms in slower_ms if ms >= median + STALL_MS)
    return {"lowat_bytes": lowat, "bursts": len(slower_ms), "median_data_ms": round(median, 1),
            "stalled": len(stalled), "stalled_ms": [round(ms, 1) for ms in stalled],
            "iperf3_cpu_ms_per_burst": round(1000 * cpu / len(slower_ms), 2)}


def measure(fabric, work: Path, lowats: list[int], bursts: int) -> list[dict]:
    hosts = [fabric.host(h).pid for h in (SENDER, *RECEIVERS)]
    servers = [iperf.start_server(port, str(work / f"s{port}.pid"), hosts[0]) for port in PORTS]
    slower = {lowat: [] for lowat in lowats}
    cpu = dict.fromkeys(lowats, 0.0)
    try:
        while any(len(slower[lowat]) < bursts for lowat in lowats):
            for lowat in lowats:
                for pid in hosts:
                    iperf.tune_host_tcp(pid)
                    subprocess.run(["mnexec", "-a", str(pid), "sysctl", "-q", "-w", f"net.ipv4.tcp_notsent_lowat={lowat}"],
                                   check=True)
                before = cpu_s(s.pid for s in servers)
                for _ in range(min(BLOCK, bursts - len(slower[lowat]))):
                    clients = [iperf.Client(fabric.ip(SENDER), port, receiver_port(port), FLOW_BYTES, pid)
                               for port, pid in zip(PORTS, hosts[1:], strict=True)]
                    results = [c.wait(30) for c in clients]
                    errors = [r.error for r in results if r.error]
                    if errors:
                        raise RuntimeError(f"burst failed: {errors[0]}")
                    slower[lowat].append(1000 * max(r.seconds for r in results))
                    time.sleep(0.05)
                cpu[lowat] += cpu_s(s.pid for s in servers) - before
    finally:
        iperf.stop_servers(servers)
    return [summary(lowat, slower[lowat], cpu[lowat]) for lowat in lowats]


def markdown(result: dict) -> str:
    lines = [f"# Sender stalls: one host, two {FLOW_BYTES}-byte flows at {LINK_MBPS} Mbit/s",
             "", f"machine: {result['machine']}", "",
             "| tcp_notsent_lowat (bytes) | bursts | median data (ms) | stalled | iperf3 CPU per burst (ms) |",
             "|---:|---:|---:|---:|---:|"]
    lines += [f"| {r['lowat_bytes']} | {r['bursts']} | {r['median_data_ms']} | {r['stalled']} "
              f"{r['stalled_ms'][:5] if r['stalled_ms'] else ''} | {r['iperf3_cpu_ms_per_burst']} |" for r in result["rows"]]
    return "\n".join(lines)


def parse_lowats(text: str) -> list[int]:
    values = [int(v) for v in text.split(",")]
    if not values or any(v < 1 for v in values) or len(set(values)) != len(values):
        raise ValueError(text)
    return values


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bursts", type=int, default=500, help="bursts per value (default: %(default)s)")
    parser.add_argument("--lowat", default=f"{iperf.BLOCK_BYTES},{iperf.NOTSENT_LOWAT_BYTES}",
                        help="comma-separated tcp_notsent_lowat values, bytes (default: %(default)s)")
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
        rows = measure(fabric, Path(tmp), lowats, args.bursts)
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")), "?")
    result = {"machine": {"kernel": platform.release(), "cpus": os.cpu_count(), "cpu": cpu},
              "link_mbps": LINK_MBPS, "flow_bytes": FLOW_BYTES, "stall_ms_over_median": STALL_MS,
              "rows": rows, "elapsed_s": round(time.monotonic() - started, 1)}
    print(json.dumps(result) if args.json else markdown(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
