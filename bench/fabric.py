"""Fabric benchmark: start-up time and realized/configured bandwidth (numbers, not pass/fail).

For each link rate (20, 50, 100, 200 Mbit/s) it brings up a 2-spine x
4-leaf x 2-host fabric with the controller, then runs 1, 2, 4 and 8
concurrent cross-leaf TCP flows (iperf3, receiver side, first second
omitted). Flows are pinned so that no two share a link direction (flow i
goes leaf i -> leaf i+1 around the ring, through spine 1 for the first four
and spine 2 for the next four), so each flow should get the full link rate;
the ratio shows what the emulation really delivers. It also measures how an
unpinned 8-stream transfer spreads over the spines (ECMP select group).

Usage: ``sudo .venv/bin/python bench/fabric.py [--json] [--mtu 9000] [--seconds 4]``
"""

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from apps.probe import BASE_PORT, cross_leaf_pairs, measure_flows  # noqa: E402
from controller.forwarding import Pin  # noqa: E402
from controller.process import FabricController
from topo.fabric import Fabric  # noqa: E402
from topo.wiring import FabricParams  # noqa: E402

RATES_MBPS = (20, 50, 100, 200)
FLOW_COUNTS = (1, 2, 4, 8)
SPINES, LEAVES, HOSTS_PER_LEAF = 2, 4, 2

# Other CPU load on the machine lowers the userspace datapath's capacity
# (one ovs-vswitchd thread forwards everything): the load average is reported.


def bench_pins() -> list[Pin]:
    """Flow i (server port BASE_PORT + i) through spine 1 for i < 4, spine 2 after."""
    return [Pin(spine=1 + i // LEAVES, dst_port_range=(BASE_PORT + i, BASE_PORT + i))
            for i in range(max(FLOW_COUNTS))]


def uplink_tx_bytes(leaf: str) -> dict[int, int]:
    """tx bytes of the leaf's uplink ports (ovs-ofctl; fine for a benchmark)."""
    out = {}
    for spine in range(1, SPINES + 1):
        port = HOSTS_PER_LEAF + spine
        dump = subprocess.run(["ovs-ofctl", "-O", "OpenFlow13", "dump-ports", leaf, str(port)],
                              capture_output=True, text=True, check=True).stdout
        out[spine] = int(dump.split("tx pkts=")[1].split("bytes=")[1].split(",")[0])
    return out


def ecmp_spread(fabric, seconds: float, trials: int = 5) -> list[list[float]]:
    """Share of bytes per spine for an unpinned 8-stream iperf3 h1 -> h3, per trial."""
    shares = []
    for trial in range(trials):
        port = BASE_PORT + 100 + trial  # not pinned
        server = fabric.spawn("h3", ["iperf3", "-s", "-1", "-p", str(port)])
        time.sleep(0.3)
        before = uplink_tx_bytes("leaf1")
        fabric.run("h1", ["iperf3", "-c", fabric.ip("h3"), "-p", str(port), "-P", "8", "-t", f"{seconds:g}", "-J"],
                   timeout_s=seconds + 20)
        after = uplink_tx_bytes("leaf1")
        fabric.stop_process(server)
        grown = {spine: after[spine] - before[spine] for spine in after}
        total = sum(grown.values()) or 1
        shares.append([round(grown[spine] / total, 3) for spine in sorted(grown)])
    return shares


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--mtu", type=int, default=9000)
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--rates", default=",".join(map(str, RATES_MBPS)))
    args = parser.parse_args(argv)
    if os.geteuid() != 0:
        print("bench/fabric.py: needs root (sudo)", file=sys.stderr)
        return 1
    rows, startups, ecmp, datapath = [], {}, None, None
    load_before = os.getloadavg()[0]
    for rate in [float(r) for r in args.rates.split(",")]:
        params = FabricParams(SPINES, LEAVES, HOSTS_PER_LEAF, rate, rate)
        with Fabric(params, FabricController(pins=tuple(bench_pins())), mtu=args.mtu) as fabric:
            datapath = fabric.datapath
            startups[rate] = round(fabric.startup_s, 2)
            print(f"{rate:g} Mbit/s: fabric up in {fabric.startup_s:.1f} s", file=sys.stderr)
            for count in FLOW_COUNTS:
                realized = measure_flows(fabric, cross_leaf_pairs(fabric.wiring, count), seconds=args.seconds)
                row = {"rate_mbps": rate, "flows": count, "worst_ratio": round(min(realized) / rate, 3),
                       "mean_ratio": round(sum(realized) / len(realized) / rate, 3),
                       "aggregate_mbps": round(sum(realized), 1)}
                rows.append(row)
                print(f"  {count} flow(s): worst {100 * row['worst_ratio']:.0f} %, mean {100 * row['mean_ratio']:.0f} %",
                      file=sys.stderr)
            if ecmp is None:
                ecmp = ecmp_spread(fabric, seconds=2)
    result = {"machine": {"cpus": os.cpu_count(), "kernel": platform.release(),
                          "os": platform.freedesktop_os_release().get("PRETTY_NAME", "?"),
                          "python": platform.python_version(),
                          "load_avg_1m": [round(load_before, 2), round(os.getloadavg()[0], 2)]},
              "datapath": datapath, "mtu": args.mtu, "seconds": args.seconds,
              "topology": {"spines": SPINES, "leaves": LEAVES, "hosts_per_leaf": HOSTS_PER_LEAF},
              "startup_s": startups, "results": rows, "ecmp_spine_shares_8_streams": ecmp}
    if args.json:
        print(json.dumps(result))
    else:
        print(f"datapath {datapath}, MTU {args.mtu}, start-up s by rate {startups}, "
              f"load average before/after {result['machine']['load_avg_1m']}")
        print("| rate Mbit/s | " + " | ".join(f"{n} flow{'s' if n > 1 else ''}" for n in FLOW_COUNTS) + " |")
        print("|---" * (len(FLOW_COUNTS) + 1) + "|")
        for rate in startups:
            cells = [f"{100 * r['worst_ratio']:.0f} %" for r in rows if r["rate_mbps"] == rate]
            print(f"| {rate:g} | " + " | ".join(cells) + " |")
        print(f"ECMP shares (spine1, spine2) of 8 unpinned streams: {ecmp}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
