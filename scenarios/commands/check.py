"""``shiftbed check``: the environment doctor.

Checks the pieces (root, Open vSwitch running and its version, the datapath,
Mininet and ``mnexec``, Ryu importable, iperf3, tcpdump, ethtool), then builds
a tiny fabric (1 spine, 2 leaves, 1 host each) with the controller, runs one
iperf3 flow across it and reports realized vs configured bandwidth. Exit 0
when healthy (every piece present and realized >= 90 % of configured), 1
when a piece is missing, fidelity is lost or the machine's host took its CPU
in every attempt at the flow (each problem named with its fix), 2 on bad
arguments.
"""

import json
import math
import os
import shutil
import sys

from scenarios.errors import InputError

MIN_FIDELITY = 0.90
INSTALL_HINT = "sudo make install"
TOOLS = {
    "iperf3": "apt-get install iperf3",
    "tcpdump": "apt-get install tcpdump",
    "ethtool": "apt-get install ethtool",
    "mnexec": "apt-get install mininet",
}


def add_arguments(parser):
    parser.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    parser.add_argument("--mbps", type=float, default=50.0, help="link rate of the test fabric (Mbit/s)")
    parser.add_argument("--seconds", type=float, default=3.0, help="length of the iperf3 measurement")
    parser.add_argument("--datapath", choices=["auto", "user", "kernel"], default="auto")
    parser.add_argument("--mtu", type=int, default=9000)


def _validate(args):
    if not math.isfinite(args.mbps) or not 0 < args.mbps <= 1000:
        raise InputError(f"--mbps: must be in (0, 1000], got {args.mbps:g}")
    if not math.isfinite(args.seconds) or not 1 <= args.seconds <= 60:
        raise InputError(f"--seconds: must be in [1, 60], got {args.seconds:g}")
    if not 576 <= args.mtu <= 9000:
        raise InputError(f"--mtu: must be in [576, 9000], got {args.mtu}")


def components() -> tuple[dict, list[str]]:
    """What is present, and the problems (each with the command that fixes it)."""
    from topo.fabric import choose_datapath, ovs_version

    found, problems = {}, []
    found["root"] = os.geteuid() == 0
    if not found["root"]:
        problems.append("root: building a fabric needs root; run `sudo shiftbed check`")
    found["ovs_version"] = ovs_version()
    if not shutil.which("ovs-vsctl"):
        problems.append(f"Open vSwitch: not installed; run `{INSTALL_HINT}` (or `apt-get install openvswitch-switch`)")
    elif not found["ovs_version"]:
        problems.append("Open vSwitch: not running; run `sudo /usr/share/openvswitch/scripts/ovs-ctl start --system-id=random`")
    found["datapath_auto"] = choose_datapath()
    for tool, fix in TOOLS.items():
        found[tool] = shutil.which(tool) is not None
        if not found[tool]:
            problems.append(f"{tool}: missing; run `{fix}` (or `{INSTALL_HINT}`)")
    from controller.process import ControllerError, describe_framework

    try:
        found["controller"] = describe_framework()  # Ryu or os-ken, its version and hub
    except ControllerError as exc:
        found["controller"] = None
        problems.append(f"controller: {exc}")
    try:
        import mininet.net  # noqa: F401

        found["mininet"] = True
    except ImportError:
        found["mininet"] = False
        problems.append(f"mininet: Python module missing; run `{INSTALL_HINT}` (venv needs --system-site-packages)")
    return found, problems


def measure(args) -> dict:
    """Build the tiny fabric, run one cross-leaf flow, tear down. If the machine's host took its CPU
    in every attempt at the flow, ``host_busy`` says so: the figure then measures the host."""
    from apps.hoststeal import HostBusy
    from apps.probe import measure_flows
    from controller.process import FabricController
    from topo.fabric import Fabric
    from topo.wiring import FabricParams

    params = FabricParams(spines=1, leaves=2, hosts_per_leaf=1, host_link_mbps=args.mbps, fabric_link_mbps=args.mbps)
    datapath = None if args.datapath == "auto" else args.datapath
    with Fabric(params, FabricController(), datapath=datapath, mtu=args.mtu) as fabric:
        loss = fabric.net.pingAll(timeout=1)
        host_busy = None
        try:
            rates = measure_flows(fabric, [("h1", "h2")], seconds=args.seconds, busy_raises=True)
        except HostBusy as busy:
            rates, host_busy = busy.result, str(busy)
        realized = rates[0]
        return {"datapath": fabric.datapath, "mtu": fabric.mtu, "startup_s": round(fabric.startup_s, 2),
                "ovs_tx_sndbuf_bytes": fabric.ovs_tx_sndbuf_bytes, "ping_loss_pct": loss,
                "realized_mbps": round(realized, 2), "host_busy": host_busy}


def fabric_problems(report: dict) -> list[str]:
    """What the tiny fabric's measurement says is wrong, each with its fix."""
    problems = []
    if report["host_busy"]:  # then the rate measures the host: "lower the rate" would be wrong advice
        problems.append(f"host busy: {report['host_busy']} (realized {report['realized_mbps']:.1f} of "
                        f"{report['configured_mbps']:g} Mbit/s); run `shiftbed check` again when it is quieter")
    elif report["ratio"] < MIN_FIDELITY:
        problems.append(f"fidelity lost: realized {report['realized_mbps']:.1f} of {report['configured_mbps']:g} "
                        f"Mbit/s ({100 * report['ratio']:.0f} % < {100 * MIN_FIDELITY:.0f} %); lower the rate or "
                        "use MTU 9000")
    if report.get("datapath") == "user" and not report.get("ovs_tx_sndbuf_bytes"):
        problems.append("OVS's shared transmit socket keeps its small buffer (topo/ovs_txbuf.py): "
                        "packets queued beyond ~200 kB fabric-wide are dropped silently")
    if report.get("ping_loss_pct"):
        problems.append(f"fabric: ping loss {report['ping_loss_pct']} %")
    return problems


def run(args) -> int:
    _validate(args)
    found, problems = components()
    report = {"ok": False, "configured_mbps": args.mbps, "realized_mbps": None, "ratio": None,
              "datapath": None, "mtu": args.mtu, "startup_s": None, "host_busy": None, **found}
    if not problems:
        try:
            report.update(measure(args))
        except Exception as exc:  # report, do not trace back: the doctor must always answer
            problems.append(f"fabric: {str(exc).splitlines()[0]}")
    if report["realized_mbps"] is not None:
        report["ratio"] = round(report["realized_mbps"] / args.mbps, 3)
        problems += fabric_problems(report)
    report["problems"] = problems
    report["ok"] = not problems
    if args.json:
        print(json.dumps(report))
    else:
        for key in ("root", "ovs_version", "datapath", "mininet", "controller", "iperf3", "tcpdump", "ethtool", "mtu",
                    "ovs_tx_sndbuf_bytes", "startup_s", "configured_mbps", "realized_mbps", "ratio", "host_busy"):
            print(f"{key:16} {report.get(key)}", file=sys.stderr)
        for problem in problems:
            print(f"PROBLEM: {problem}", file=sys.stderr)
        print("healthy" if report["ok"] else "NOT healthy", file=sys.stderr)
    return 0 if report["ok"] else 1
