"""Recording each policy's measurement: its rows and bursts, its tables, and the capture's cross-checks.

For every policy, :class:`PolicyRecord` appends the drivers' rows to
``iterations.csv``, the bandwidth of every link where jobs meet to ``link_bandwidth.csv`` and
the scheduled windows to ``windows.csv``, keeps each job's means and bursts
for the prediction, and counts the captured bytes against what iperf3
reported. :meth:`PolicyRecord.crosschecks` sums those checks up at the end.
"""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd

from apps.iterations import iteration_table
from controller.theory.policies import get_policy
from scenarios.analysis import gatecheck
from scenarios.analysis import tables as analysis
from scenarios.experiment.drive import Measurement
from scenarios.experiment.stopping import TARGET
from scenarios.results import TABLES, ResultsWriter
from scenarios.runlinks import RunLinks
from scenarios.summary_record import Crosschecks, Stop

ITERATION_COLUMNS = list(TABLES["iterations.csv"])


class PolicyRecord:
    """What each policy measured, as the prediction and the summary need it, and its tables written."""

    def __init__(self, duration_s: float):
        self.duration_s = duration_s
        self.measured: dict[str, dict[str, dict]] = {}  # policy -> job -> analysis.policy_figures
        self.bursts: dict[str, pd.DataFrame] = {}  # policy -> its bursts (analysis.burst_spans)
        self.offsets: dict[str, dict[str, float]] = {}  # policy -> job -> the offset the scheduler used (ms)
        self.epochs: dict[str, float] = {}  # policy -> its epoch (unix s)
        self.steal: dict[str, dict] = {}  # policy -> the CPU the host took during its kept measurement
        self.bytes: dict[str, dict[str, float]] = {}  # policy -> captured and reported payload bytes
        self.gate_bytes_in_window: dict[str, float] | None = None  # per gated job (None: no gated policy)
        self.intervals: dict[str, tuple[float, float]] = {}  # policy -> (epoch, end) compared with port counters
        self.outgoing: dict[str, dict] = {}  # policy -> port -> time and size of packets leaving through it
        self.links: RunLinks | None = None  # the captured ports, once a policy is recorded
        self.stops: dict[str, Stop] = {}  # policy -> what ended it (a run with a target standard error)

    def record(self, writer: ResultsWriter, links: RunLinks, policy: str, doc: dict, epoch_s: float,
               measured: Measurement, specs, leaf_ips: dict[int, set[str]], stop: Stop | None = None) -> None:
        """Keep and write one policy's measurement; ``leaf_ips``: the hosts' IPs on each leaf (which
        way a captured packet crossed its port); ``stop``: what ended it, where a target standard
        error could (``stopping.PolicyStop``): stopped at the target, its tables end with its drivers."""
        rows, packets, labels = measured.rows, measured.packets, measured.labels
        self.steal[policy] = measured.steal.as_dict()
        self.offsets[policy] = {name: float(j["offset_ms"]) for name, j in doc["jobs"].items()}
        it = iteration_table(rows)
        steady = it[it["iteration"] >= 1]  # job_means' warm-up
        self.bursts[policy] = analysis.burst_spans(packets, labels, steady, it)
        self.measured[policy] = analysis.policy_figures(it, self.bursts[policy], links.meeting_pairs())
        writer.append_rows("iterations.csv", rows[ITERATION_COLUMNS].to_dict("records"))
        planned_s = self.duration_s
        if stop is not None:
            self.stops[policy] = stop
            if stop.by == TARGET:
                planned_s = stop.after_ms / 1000
        t_end = max(measured.window[1], epoch_s + planned_s)
        self.links = links
        for port, direction, link in links.recorded():
            on_port, port_labels = measured.captures[port.name]
            ends = on_port["src_ip" if direction == "up" else "dst_ip"].isin(leaf_ips.get(port.leaf, set()))
            bins = analysis.bandwidth_bins(on_port[ends], port_labels[ends], epoch_s, t_end)
            if not bins.empty:
                writer.append_rows("link_bandwidth.csv", bins.assign(policy=policy, link=links.names[link])
                                   [["policy", "link", "t_s", "job", "mbps"]].to_dict("records"))
        pol = get_policy(policy)
        if pol.uses_schedule or pol.realigns():  # planned (shift) or realigned-to / enforced windows
            writer.append_rows("windows.csv", gatecheck.window_rows(policy, doc, planned_s))
        self._check_bytes(policy, rows, measured, specs, links, leaf_ips)
        if pol.enforces_windows:
            if self.gate_bytes_in_window is None:
                self.gate_bytes_in_window = {}
            self.gate_bytes_in_window.update(
                {job: v["in_window"] for job, v in gatecheck.bytes_in_windows(packets, labels, doc).items()})
        self.intervals[policy] = (epoch_s, t_end)
        self.outgoing[policy] = {}
        for port in links.ports:
            on_port, _ = measured.captures[port.name]
            leaving = on_port["src_ip"].isin(leaf_ips.get(port.leaf, set()))
            self.outgoing[policy][port.name] = on_port.loc[leaving, ["time_s", "wire_bytes"]]
        self.epochs[policy] = epoch_s

    def _check_bytes(self, policy, rows, measured: Measurement, specs, links: RunLinks, leaf_ips) -> None:
        """Captured payload bytes of each job's flows leaving its home port's leaf through that port vs
        what iperf3 reported those workers sending."""
        captured = reported = 0.0
        for spec in specs:
            home = links.home[spec.name]
            senders = {w for w in spec.workers if w.ip in leaf_ips.get(home.leaf, set())}
            mine = rows[rows["worker"].isin({w.name for w in senders})]
            if "job" in mine:
                mine = mine[mine["job"] == spec.name]
            reported += float(mine["bytes"].sum())
            packets, labels = measured.captures[home.name]
            mask = packets["src_ip"].isin({w.ip for w in senders}) & (labels == spec.name)
            captured += analysis.unique_payload_bytes(packets[mask])
        self.bytes[policy] = {"captured": captured, "reported": reported}

    def crosschecks(self, port_stats_csv: Path) -> Crosschecks:
        """The capture against iperf3's byte counts, against the port counters, and a gate's bytes."""
        iperf_err_pct = None
        if self.bytes:
            captured = sum(v["captured"] for v in self.bytes.values())
            reported = sum(v["reported"] for v in self.bytes.values())
            iperf_err_pct = analysis.percent_error(captured, reported)
        return Crosschecks(capture_vs_iperf_bytes_err_pct=iperf_err_pct, gate_bytes_in_window=self.gate_bytes_in_window,
                           capture_vs_portstats_util_err_pct=self._util_check(port_stats_csv))

    def _util_check(self, port_stats_csv: Path) -> float | None:
        """Each captured port's utilisation (leaving its leaf) from the capture vs from OpenFlow port
        counters, over the same interval: the largest error."""
        if not port_stats_csv.exists() or self.links is None:
            return None
        stats = pd.read_csv(port_stats_csv)
        from topo.wiring import leaf_dpid

        errors = []
        for policy, (t0, t1) in self.intervals.items():
            for port in self.links.ports:
                tx, t_lo, t_hi = analysis.port_tx_bytes(stats, leaf_dpid(port.leaf), port.port, t0, t1)
                outgoing = self.outgoing[policy][port.name]
                if t_hi <= t_lo:
                    continue
                times = outgoing["time_s"].to_numpy()
                captured = float(outgoing["wire_bytes"].to_numpy()[(times >= t_lo) & (times < t_hi)].sum())
                if tx > 0:
                    errors.append(abs(analysis.percent_error(captured, tx)))
        return max(errors) if errors else None

    def keep_rows(self, writer: ResultsWriter, policy: str, run_dir: str, specs) -> int:
        """Append the iterations a cut-short policy completed without error to iterations.csv."""
        frames = []
        for spec in specs:
            path = os.path.join(run_dir, f"{spec.name}.csv")
            try:
                frames.append(pd.read_csv(path))
            except (OSError, pd.errors.EmptyDataError):
                continue
        if not frames:
            return 0
        rows = pd.concat(frames, ignore_index=True)
        rows = rows[rows["error"].isna() | (rows["error"].astype(str) == "")]
        if rows.empty:
            return 0
        writer.append_rows("iterations.csv", rows.assign(policy=policy)[ITERATION_COLUMNS].to_dict("records"))
        return len(rows)


def write_port_stats(writer: ResultsWriter) -> None:
    """``port_stats.csv`` from the counters the controller polled (``controller.port_stats``)."""
    raw = writer.partial_dir / "port_stats.raw.csv"
    if raw.exists() and raw.stat().st_size:
        from controller.port_stats import read_port_stats

        stats = read_port_stats(raw).rename(columns={"time_s": "time"})
        cols = ["time", "dpid", "port", "rx_bytes", "tx_bytes", "rx_packets", "tx_packets",
                "rx_dropped", "tx_dropped", "switch"]
        writer.write_table("port_stats.csv", stats[cols])
        raw.unlink()
