"""Benchmark the window gate on the real fabric: gate and wire edge error per switch, REST latency, burst overhead.

Per gated switch, the gate's own edge error, the edge error on the wire and the
queueing between them, idle and under load; the scheduler's REST latency; and
the fixed cost of a burst. The edges and the REST latency are measured once per
controller framework and hub (``--controller``; by default every one installed:
Ryu's eventlet hub, os-ken's native threads and os-ken on eventlet), one fabric
after the other in the same run, so they compare on the same machine.

``sudo .venv/bin/python bench/gate.py [--json] [--controller ryu,os-ken,os-ken/eventlet]``
(root; one fabric at a time).

Edge error: four gated jobs, each a constant-rate UDP probe (3.2 Mbit/s,
200-byte datagrams, one per 0.5 ms; iperf3 ``-u -R``, so the server host
sends), all pinned through spine 1; windows T = 200 ms, c = 40 ms, which the
schedule sets back to back. Two probes go from the first host of leaf 1 to a
leaf-2 host and are gated at leaf1, two the other way, gated at leaf2: the
gate acts at each flow's ingress leaf. Per gated switch, two captures:

- the sender's host-facing port on that leaf, where packets have not met the
  gate yet; the packets that got through, at their times there, give the
  **gate edge** (when the gate let them pass, before any queue);
- the leaf's uplink to spine 1, after the gate and the link's queue; the same
  packets there give the **wire edge** (what a capture on the shared link
  sees), and uplink - ingress time of each is the **queueing** (switch and
  link queue).

A packet is the same in both captures by IPv4 identification and 4-tuple.
Edge = last packet before / first packet after a silent gap (> 2 ms); error =
observed - scheduled. "load" adds two ungated bulk TCP flows each way from
other hosts of the same leaves through the same uplinks, loading both the
switches and the uplink queues. Each is run with edges sent ``--advance-ms``
early and on time, and ``--toggle`` says how an edge changes the gate (default:
the scheduler's, a meter-mod).

Burst start overhead: 20 solo bursts (iperf3 -R, 250 kB): launch -> first
data packet on the wire, last data packet -> client exit, and launch -> exit
minus iperf3's own data seconds.
"""

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from apps import hoststeal, iperf  # noqa: E402
from apps.capture import Capture  # noqa: E402
from controller.framework_choice import FRAMEWORK_ENV, installed  # noqa: E402
from controller.gate import TOGGLES  # noqa: E402
from controller.scheduler_client import SchedulerClient  # noqa: E402
from scenarios.analysis import gatecheck  # noqa: E402
from scenarios.analysis.pcap import read_pcap  # noqa: E402
from topo.tcp_ports import receiver_port  # noqa: E402
from topo.wiring import FabricParams, Wiring, fabric_wiring, leaf_dpid, leaf_name  # noqa: E402

LINK_MBPS = 50.0
PARAMS = FabricParams(spines=2, leaves=2, hosts_per_leaf=4, host_link_mbps=LINK_MBPS,
                      fabric_link_mbps=LINK_MBPS)
SPINE = 1  # every TCP and UDP flow is pinned through it
GATED_LEAVES = (1, 2)
JOBS_PER_SWITCH = 2
PERIOD_MS, COMM_MS = 200, 40  # 4 jobs x 40 ms fit in 200 ms
PROBE_MBPS, PROBE_S = 3.2, 4.5  # one 200-byte datagram per 0.5 ms: faster probes load the switch (docs/gate.md)
MIN_GAP_S = 0.002  # a silence this long is an edge (four probe gaps)
MIN_PROBE_PACKETS = 100  # fewer: the probe's UDP set-up datagram was lost, no stream
BULK_FIRST_PORT = 9201
GATE_IDLE_P95_MS, GATE_LOAD_P95_MS = 2.0, 3.0
MAX_ADVANCE_MS = 50.0  # the scheduler's bound on advance_ms
REST_GETS, REST_CHANGES = 200, 30  # GET /shiftbed/status; POST + DELETE /shiftbed/jobs pairs
# A framework and its hub: how the controller process is told to run them.
VARIANT_ENV = {"ryu": {FRAMEWORK_ENV: "ryu"}, "os-ken": {FRAMEWORK_ENV: "os-ken", "OSKEN_HUB_TYPE": "native"},
               "os-ken/eventlet": {FRAMEWORK_ENV: "os-ken", "OSKEN_HUB_TYPE": "eventlet"}}


def default_variants() -> list[str]:
    found = installed()
    return [v for v in VARIANT_ENV if v.split("/")[0] in found]


@dataclass(frozen=True)
class Probe:
    """One gated job: a UDP stream from ``src`` (the iperf3 server, which sends) to ``dst``."""

    name: str
    leaf: int  # the sender's leaf, where the gate acts
    src: str
    dst: str
    port: int  # server port = data source port
    cport: int  # client port = data destination port


@dataclass(frozen=True)
class Plan:
    """Who sends what, and where to capture, on one fabric."""

    probes: tuple[Probe, ...]
    bulk: tuple[tuple[str, str], ...]  # (sender, receiver) of each ungated TCP flow
    ingress_if: dict[int, str]  # gated leaf -> its probe sender's host-facing port
    uplink_if: dict[int, str]  # gated leaf -> its port towards SPINE


def port_interface(switch: str, port: int) -> str:
    """A switch port's interface name, as the fabric names it (``leaf1-eth5``)."""
    return f"{switch}-eth{port}"


def bench_plan(wiring: Wiring) -> Plan:
    """Per gated leaf: its first host sends JOBS_PER_SWITCH probes to the other leaf's second host;
    its third and fourth hosts send bulk TCP to the other leaf's third and fourth."""
    probes, bulk, ingress_if, uplink_if = [], [], {}, {}
    for leaf in GATED_LEAVES:
        here = wiring.hosts_on_leaf(leaf)
        there = wiring.hosts_on_leaf(3 - leaf)
        sender = here[0]
        for _ in range(JOBS_PER_SWITCH):
            i = len(probes)
            probes.append(Probe(f"p{i}", leaf, sender.name, there[1].name, 7201 + i, 7701 + i))
        bulk += [(here[k].name, there[k].name) for k in (2, 3)]
        ingress_if[leaf] = port_interface(leaf_name(leaf), sender.leaf_port)
        uplink_if[leaf] = port_interface(leaf_name(leaf), wiring.leaf_uplink_port(SPINE))
    return Plan(tuple(probes), tuple(bulk), ingress_if, uplink_if)


def machine() -> dict:
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")), "?")
    ovs = subprocess.run(["ovs-vsctl", "--version"], capture_output=True, text=True).stdout.split("\n")[0]
    return {"kernel": platform.release(), "cpus": os.cpu_count(), "cpu": cpu, "ovs": ovs,
            "python": platform.python_version()}


def pcap_path(work: Path, tag: str, interface: str) -> Path:
    return work / f"{tag}-{interface}.pcap"


def edge_run(fabric, work: Path, plan: Plan, load: bool, advance_ms: float, toggle: str) -> list[dict]:
    """All probes at once, every capture on; one row per gated switch."""
    scheduler = SchedulerClient(fabric.controller.rest_url)
    tag = f"{'load' if load else 'idle'}-{advance_ms}"
    servers, procs = [], []
    meter = hoststeal.StealMeter().start()  # a row the host took CPU from is not the gate's figure
    try:
        for p in plan.probes:
            s = iperf.start_server(p.port, str(work / f"{tag}-{p.name}.pid"), fabric.host(p.src).pid)
            fabric.track(s.pid, f"iperf3:{p.name}")
            servers.append(s)
            body = {"name": p.name, "period_ms": PERIOD_MS, "comm_ms": COMM_MS, "workers": [p.src, p.dst],
                    "flows": [{"dpid": leaf_dpid(p.leaf), "src_ip": fabric.ip(p.src), "dst_ip": fabric.ip(p.dst),
                               "tcp_src": p.port, "tcp_dst": p.cport, "proto": "udp"}]}
            scheduler.add_job(body)
        if load:  # ungated bulk TCP leaving through the probes' uplinks, both ways
            for i, (src, dst) in enumerate(plan.bulk):
                port = BULK_FIRST_PORT + i
                s = iperf.start_server(port, str(work / f"{tag}-bg{i}.pid"), fabric.host(src).pid)
                fabric.track(s.pid, "iperf3:bg")
                servers.append(s)
                procs.append(fabric.spawn(dst, ["iperf3", "-c", fabric.ip(src), "-p", str(port), "-R",
                                                "-t", str(PROBE_S + 1)], label="bg"))
        with ExitStack() as captures:
            for interface in (*plan.ingress_if.values(), *plan.uplink_if.values()):
                captures.enter_context(Capture(interface, str(pcap_path(work, tag, interface)), bpf="udp",
                                               on_start=lambda pid: fabric.track(pid, "tcpdump")))
            clients = [fabric.spawn(p.dst, iperf.probe_argv(fabric.ip(p.src), p.port, p.cport, PROBE_MBPS,
                                                            PROBE_S), label=f"probe:{p.name}")
                       for p in plan.probes]
            procs += clients
            time.sleep(0.5)  # UDP set-up must pass before the gate closes anything
            schedule = scheduler.set_policy("gate", start_in_s=0.3, toggle=toggle, advance_ms=advance_ms)
            hung = 0
            for c in clients:
                try:
                    c.popen.wait(timeout=PROBE_S + 10)
                except subprocess.TimeoutExpired:  # seen once under load: end-of-test exchange stuck
                    hung += 1
                    fabric.stop_process(c)
        status = scheduler.status()
    finally:
        steal = meter.stop()
        scheduler.stop()
        for p in procs:
            if p in fabric.processes:
                fabric.stop_process(p)
        for s in servers:
            s.stop()
        for p in plan.probes:
            scheduler.remove_job(p.name)
    common = {"load": load, "advance_ms": advance_ms, "toggle": toggle, "jobs_total": len(plan.probes),
              "controller_send_late_ms": status["send_lateness_ms"], "controller_stages_ms": status["stages_ms"],
              "barrier_late_ms": status["barrier_lateness_ms"], "openflow_errors": status["openflow_errors"],
              "probes_hung": hung, "host_steal_pct": steal.as_dict(), "host_disturbed": steal.disturbed}
    return [{"switch": leaf_name(leaf), **switch_edges(work, tag, plan, leaf, schedule), **common}
            for leaf in GATED_LEAVES]


def probe_packets(packets, probe: Probe):
    """The rows of ``packets`` that are ``probe``'s data datagrams (server port -> client port)."""
    return packets[(packets.proto == 17) & (packets.sport == probe.port) & (packets.dport == probe.cport)]


def switch_edges(work: Path, tag: str, plan: Plan, leaf: int, schedule: dict) -> dict:
    """Gate edge, wire edge and queueing of the probes gated at ``leaf``, from its two captures."""
    ingress = read_pcap(str(pcap_path(work, tag, plan.ingress_if[leaf])))
    uplink = read_pcap(str(pcap_path(work, tag, plan.uplink_if[leaf])))
    matched = gatecheck.match_packets(ingress, uplink)
    probes, counts = [], {"ingress": 0, "uplink": 0, "matched": 0}
    for p in (p for p in plan.probes if p.leaf == leaf):
        both = probe_packets(matched, p)
        counts["ingress"] += len(probe_packets(ingress, p))
        counts["uplink"] += len(probe_packets(uplink, p))
        counts["matched"] += len(both)
        if len(both):
            windows = gatecheck.windows_of(schedule, p.name, both.ingress_s.min(), both.egress_s.max())
        else:
            windows = np.empty((0, 2))
        probes.append((both, windows))
    split = gatecheck.split_edges(probes, MIN_GAP_S, MIN_PROBE_PACKETS)
    return {"jobs": len(probes), **split, "packets": counts}


def per_switch(rows: list[dict], advance_ms: float) -> dict:
    """Each switch's verdict at ``advance_ms``: gate edge p95 idle and loaded, queueing p95 loaded.

    A verdict is ok only if edges were scored, none was missed and the p95 is within its limit.
    """
    out = {}
    for switch in dict.fromkeys(r["switch"] for r in rows):
        pick = {r["load"]: r for r in rows if r["switch"] == switch and r["advance_ms"] == advance_ms}
        idle, loaded = pick[False]["gate_edge_ms"], pick[True]["gate_edge_ms"]
        out[switch] = {"jobs": pick[False]["jobs"], "advance_ms": advance_ms,
                       "gate_idle_p95_ms": idle.get("p95"), "gate_load_p95_ms": loaded.get("p95"),
                       "queueing_load_p95_ms": pick[True]["queueing_ms"].get("p95"),
                       "gate_idle_p95_ok": within(idle, GATE_IDLE_P95_MS),
                       "gate_load_p95_ok": within(loaded, GATE_LOAD_P95_MS),
                       # the host took CPU during either row: a verdict on the machine, not the gate
                       "host_disturbed": pick[False]["host_disturbed"] or pick[True]["host_disturbed"]}
    return out


def within(summary: dict, limit_ms: float) -> bool:
    return summary["n"] > 0 and summary["missed"] == 0 and summary["p95"] <= limit_ms


def burst_overhead(fabric, work: Path, interface: str, n: int = 20, nbytes: int = 250_000) -> dict:
    src, dst, port = "h1", "h5", 8201
    cport = receiver_port(port)
    s = iperf.start_server(port, str(work / "burst.pid"), fabric.host(src).pid)
    fabric.track(s.pid, "iperf3:burst")
    iperf.tune_host_tcp(fabric.host(dst).pid)
    results = []
    try:
        with Capture(interface, str(work / "burst.pcap"), on_start=lambda pid: fabric.track(pid, "tcpdump")):
            for _ in range(n):
                results.append(iperf.Client(fabric.ip(src), port, cport, nbytes, fabric.host(dst).pid).wait(30))
                time.sleep(0.05)
    finally:
        s.stop()
    packets = read_pcap(str(work / "burst.pcap"))
    data = packets[(packets.sport == port) & (packets.dport == cport) & (packets.payload_bytes > 0)]
    first, last = [], []
    for r in results:
        t = data[(data.time_s >= r.launch_s) & (data.time_s <= r.exit_s)].time_s
        if len(t):
            first.append((t.min() - r.launch_s) * 1000)
            last.append((r.exit_s - t.max()) * 1000)

    def stats(v):
        return {"mean": float(np.mean(v)), "p95": float(np.percentile(v, 95)), "max": float(np.max(v))}

    return {"bursts": n, "bytes": nbytes, "launch_to_first_data_ms": stats(first),
            "last_data_to_exit_ms": stats(last),
            "launch_to_exit_minus_data_ms": stats([r.overhead_ms for r in results]),
            "launch_to_exit_ms": stats([(r.exit_s - r.launch_s) * 1000 for r in results]),
            "errors": sum(bool(r.error) for r in results)}


def rest_latency(rest_url: str) -> dict:
    """The scheduler's REST answer times (ms): ``GET /shiftbed/status`` and a job added then removed."""
    import requests

    scheduler = SchedulerClient(rest_url)
    gets, changes = [], []
    with requests.Session() as session:
        for _ in range(REST_GETS):
            started = time.perf_counter()
            session.get(f"{rest_url}/shiftbed/status", timeout=5).raise_for_status()
            gets.append((time.perf_counter() - started) * 1000)
        for i in range(REST_CHANGES):
            body = {"name": f"lat{i}", "period_ms": 200, "comm_ms": 40, "workers": ["h1", "h5"],
                    "flows": [{"dpid": leaf_dpid(1), "src_ip": "10.0.0.1", "dst_ip": "10.0.0.5", "tcp_src": 9000 + i}]}
            started = time.perf_counter()
            scheduler.add_job(body)
            scheduler.remove_job(body["name"])
            changes.append((time.perf_counter() - started) * 1000)

    def stats(v):
        return {"n": len(v), "p50": float(np.percentile(v, 50)), "p95": float(np.percentile(v, 95)),
                "max": float(np.max(v))}

    return {"get_status_ms": stats(gets), "add_and_remove_job_ms": stats(changes)}


def framework_table(frameworks: dict) -> list[dict]:
    """One row per framework: the worst switch's gate p95 idle and loaded, and the REST p95s."""
    rows = []
    for name, f in frameworks.items():
        switches = f["per_switch"].values()
        worst = {key: max((s[key] for s in switches if s[key] is not None), default=None)
                 for key in ("gate_idle_p95_ms", "gate_load_p95_ms", "queueing_load_p95_ms")}
        rows.append({"controller": name, **f["controller"], **worst,
                     "rest_get_p95_ms": f["rest_latency"]["get_status_ms"]["p95"],
                     "rest_change_p95_ms": f["rest_latency"]["add_and_remove_job_ms"]["p95"],
                     "host_disturbed": any(s["host_disturbed"] for s in switches)})
    return rows


def markdown(result: dict) -> str:
    """The rows and the per-switch verdicts as markdown tables."""
    def ms(summary: dict, key: str) -> str:
        value = summary.get(key)
        return "-" if value is None else f"{value:.2f}"

    lines = [f"machine: {result['machine']}", "",
             "| controller | framework | version | hub | gate p95 idle ms | gate p95 load ms | queue p95 load ms "
             "| REST GET p95 ms | REST add+remove p95 ms | host disturbed |", "|" + "---|" * 10]
    for r in result["by_controller"]:
        lines.append(f"| {r['controller']} | {r['framework']} | {r['version']} | {r['hub']} "
                     f"| {ms(r, 'gate_idle_p95_ms')} | {ms(r, 'gate_load_p95_ms')} | {ms(r, 'queueing_load_p95_ms')} "
                     f"| {ms(r, 'rest_get_p95_ms')} | {ms(r, 'rest_change_p95_ms')} | {r['host_disturbed']} |")
    lines += ["", "| controller | switch | jobs | load | advance ms | gate edges | gate missed | gate mean ms | gate p95 ms "
             "| gate max ms | gate signed mean ms | wire edges | wire missed | wire p95 ms | wire signed mean ms "
             "| queue p50 ms | queue p95 ms | queue max ms | host steal % |",
             "|" + "---|" * 19]
    for r in result["edges"]:
        g, w, q = r["gate_edge_ms"], r["wire_edge_ms"], r["queueing_ms"]
        lines.append(f"| {r['controller']} | {r['switch']} | {r['jobs']} | {'yes' if r['load'] else 'no'} | {r['advance_ms']} "
                     f"| {g['n']} | {g['missed']} | {ms(g, 'mean')} | {ms(g, 'p95')} | {ms(g, 'max')} "
                     f"| {ms(g, 'signed_mean')} | {w['n']} | {w['missed']} | {ms(w, 'p95')} "
                     f"| {ms(w, 'signed_mean')} | {ms(q, 'p50')} | {ms(q, 'p95')} | {ms(q, 'max')} "
                     f"| {ms(r['host_steal_pct'], 'mean_pct')} |")
    lines += ["", "| controller | switch | advance ms | gate p95 idle ms | gate p95 load ms | queue p95 load ms "
                  f"| idle ok (<= {GATE_IDLE_P95_MS}) | load ok (<= {GATE_LOAD_P95_MS}) | host disturbed |",
              "|" + "---|" * 9]
    for name, switch, s in ((n, sw, v) for n, f in result["frameworks"].items() for sw, v in f["per_switch"].items()):
        lines.append(f"| {name} | {switch} | {s['advance_ms']} | {ms(s, 'gate_idle_p95_ms')} | {ms(s, 'gate_load_p95_ms')} "
                     f"| {ms(s, 'queueing_load_p95_ms')} | {s['gate_idle_p95_ok']} | {s['gate_load_p95_ok']} "
                     f"| {s['host_disturbed']} |")
    lines += ["", f"burst overhead: {json.dumps(result['burst_overhead'])}",
              f"elapsed: {result['elapsed_s']:.0f} s"]
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="one JSON object on stdout")
    parser.add_argument("--advance-ms", type=float, default=0.0,
                        help="send edges this early in half the runs and in the per-switch verdict "
                             "(default: %(default)s, the scheduler's); the other half send on time")
    parser.add_argument("--toggle", choices=TOGGLES, default=TOGGLES[0],
                        help="how an edge changes the gate: change the rate of its meter, delete/add its "
                             "rule, or modify it (default: %(default)s, the scheduler's)")
    parser.add_argument("--controller", default=",".join(default_variants()),
                        help="comma-separated frameworks/hubs to measure, one fabric each: "
                             f"{', '.join(VARIANT_ENV)} (default: those installed, %(default)s)")
    args = parser.parse_args(argv)
    variants = [v.strip() for v in args.controller.split(",") if v.strip()]
    wrong = [v for v in variants if v not in VARIANT_ENV or v.split("/")[0] not in installed()]
    if not variants or wrong:
        print(f"bench/gate.py: --controller: {', '.join(wrong) or 'empty'}: must be among the installed "
              f"{', '.join(default_variants())}", file=sys.stderr)
        return 2
    if not 0.0 <= args.advance_ms <= MAX_ADVANCE_MS:  # also refuses nan
        print(f"bench/gate.py: --advance-ms: must be in [0, {MAX_ADVANCE_MS:g}] ms, got {args.advance_ms}",
              file=sys.stderr)
        return 2
    if os.geteuid() != 0:
        print("bench/gate.py: needs root (builds a Mininet fabric)", file=sys.stderr)
        return 2
    from controller.forwarding import Pin
    from controller.process import FabricController
    from topo.fabric import Fabric

    plan = bench_plan(fabric_wiring(PARAMS))
    started = time.monotonic()
    rows, frameworks, overhead = [], {}, None
    for variant in variants:
        with tempfile.TemporaryDirectory(prefix="shiftbed-bench-gate-") as tmp, \
                Fabric(PARAMS, FabricController(apps=("controller.scheduler_app",),
                                                pins=(Pin(spine=SPINE), Pin(spine=SPINE, proto="udp")),
                                                env=VARIANT_ENV[variant])) as fabric:
            work = Path(tmp)
            described = fabric.controller.status()["controller"]
            mine = []
            for advance_ms in dict.fromkeys((args.advance_ms, 0.0)):
                for load in (False, True):
                    for row in edge_run(fabric, work, plan, load, advance_ms, args.toggle):
                        mine.append({"controller": variant, **row})
                        print(json.dumps(mine[-1]), file=sys.stderr)
            frameworks[variant] = {"controller": described, "per_switch": per_switch(mine, args.advance_ms),
                                   "rest_latency": rest_latency(fabric.controller.rest_url)}
            rows += mine
            if overhead is None:  # the burst's cost is the hosts' and iperf3's, not the controller's
                overhead = burst_overhead(fabric, work, plan.uplink_if[1])
    result = {"machine": machine(), "toggle": args.toggle, "link_mbps": LINK_MBPS, "period_ms": PERIOD_MS, "comm_ms": COMM_MS,
              "probe_mbps": PROBE_MBPS, "captures": {leaf_name(leaf): [plan.ingress_if[leaf], plan.uplink_if[leaf]]
                                                     for leaf in GATED_LEAVES},
              "by_controller": framework_table(frameworks), "frameworks": frameworks,
              "edges": rows, "burst_overhead": overhead, "elapsed_s": time.monotonic() - started}
    print(json.dumps(result) if args.json else markdown(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
