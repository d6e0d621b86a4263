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


def tx_bytes(switch: str) -> dict[int, int]:
    """Port number -> transmitted bytes, as the switch counts them."""
    out = subprocess.run(["ovs-ofctl", "-O", "OpenFlow13", "dump-ports", switch], capture_output=True,
                         text=True, check=True).stdout
    counters, port = {}, None
    for line in out.splitlines():
        m = re.match(r"\s*port\s+(\S+):", line)
        if m:
            port = int(m.group(1)) if m.group(1).isdigit() else None
        m = re.search(r"tx pkts=\d+, bytes=(\d+)", line)
        if m and port is not None:
            counters[port] = int(m.group(1))
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
    now = tx_bytes(args.leaf)
    uplinks = {s: args.hosts_per_leaf + s for s in range(1, args.spines + 1)}
    if args.save:
        with open(args.save, "w") as f:
            json.dump({str(p): b for p, b in now.items()}, f)
        print(f"saved {args.leaf} counters to {args.save}")
        return 0
    before = {}
    if args.since:
        with open(args.since) as f:
            before = {int(p): b for p, b in json.load(f).items()}
    sent = {s: now.get(p, 0) - before.get(p, 0) for s, p in uplinks.items()}
    total = sum(sent.values()) or 1
    print(f"{args.label}.total_mb = {sum(sent.values()) / 1e6:.2f}")
    for s, b in sent.items():
        print(f"{args.label}.spine{s}_mb = {b / 1e6:.2f}")
    for s, b in sent.items():
        print(f"{args.label}.spine{s}_share = {b / total:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
