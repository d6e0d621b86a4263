"""Lab 1 helper: how many bytes a leaf sent up to each spine, from the switch's own port counters.

    .venv/bin/python docs/labs/uplinks.py leaf1 --save /tmp/lab1-before.json
    ... traffic ...
    .venv/bin/python docs/labs/uplinks.py leaf1 --since /tmp/lab1-before.json --label ecmp

prints one ``key = value`` line per number (``ecmp.spine1_share = 0.52``).
The uplink numbering is the fabric's (docs/fabric.md): on a leaf, port
``hosts_per_leaf + S`` goes to spine ``S``. It reads ``ovs-ofctl -O
OpenFlow13 dump-ports``, so it needs root, like ``mn``.
"""

import argparse
import json
import re
import subprocess
import sys


def port_bytes(switch: str) -> dict[str, dict[int, int]]:
    """``{"rx": {port: bytes}, "tx": {port: bytes}}``, as the switch counts them."""
    out = subprocess.run(["ovs-ofctl", "-O", "OpenFlow13", "dump-ports", switch], capture_output=True,
                         text=True, check=True).stdout
    counters, port = {"rx": {}, "tx": {}}, None
    for line in out.splitlines():
        m = re.match(r"\s*port\s+(\S+):", line)
        if m:
            port = int(m.group(1)) if m.group(1).isdigit() else None
        m = re.search(r"(rx|tx) pkts=\d+, bytes=(\d+)", line)
        if m and port is not None:
            counters[m.group(1)][port] = int(m.group(2))
    return counters


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("leaf", help="leaf switch name, e.g. leaf1")
    parser.add_argument("--spines", type=int, default=2)
    parser.add_argument("--hosts-per-leaf", type=int, default=2)
    parser.add_argument("--save", help="write the counters to this file and print nothing else")
    parser.add_argument("--since", help="print what was sent since the counters saved in this file")
    parser.add_argument("--label", default="uplinks", help="prefix of the printed keys")
    args = parser.parse_args(argv)
    now = port_bytes(args.leaf)
    uplinks = {s: args.hosts_per_leaf + s for s in range(1, args.spines + 1)}
    if args.save:
        with open(args.save, "w") as f:
            json.dump(now, f)
        print(f"saved {args.leaf} counters to {args.save}")
        return 0
    before = {"rx": {}, "tx": {}}
    if args.since:
        with open(args.since) as f:
            before = {d: {int(p): b for p, b in ports.items()} for d, ports in json.load(f).items()}

    def since(direction: str, port: int) -> int:
        return now[direction].get(port, 0) - before[direction].get(port, 0)

    sent = {s: since("tx", p) for s, p in uplinks.items()}
    from_hosts = sum(since("rx", p) for p in range(1, args.hosts_per_leaf + 1))
    total = sum(sent.values()) or 1
    print(f"{args.label}.total_mb = {sum(sent.values()) / 1e6:.2f}")
    print(f"{args.label}.from_hosts_mb = {from_hosts / 1e6:.2f}")
    print(f"{args.label}.carried_share = {sum(sent.values()) / (from_hosts or 1):.3f}")
    for s, b in sent.items():
        print(f"{args.label}.spine{s}_mb = {b / 1e6:.2f}")
    for s, b in sent.items():
        print(f"{args.label}.spine{s}_share = {b / total:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
