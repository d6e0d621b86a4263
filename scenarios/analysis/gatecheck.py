"""Did the gate hold? Compare captured packets (``scenarios/analysis/pcap.py``) with the schedule's windows.

Measures shared by the integration tests, ``bench/gate.py`` and the runner:

- :func:`bytes_in_windows`: the share of each job's payload bytes seen on the
  shared link inside that job's windows;
- :func:`edge_errors`: for a constant-rate probe flow through the gate, the
  observed edges (last packet before a silent gap = close, first packet after
  it = open) against the scheduled edges. Resolution: one packet gap.
- :func:`match_packets` and :func:`split_edges`: with a capture where the gate
  acts (the sender's port on its ingress leaf) and one after the link's queue
  (the leaf's uplink), the gate's own edge error (ingress times of the packets
  it let through), the edge error on the wire (their uplink times) and the
  queueing between the two, apart.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from controller.theory.windows import windows_between


def job_windows(j: dict, start_ms: float) -> list[tuple[float, float]]:
    """A job's windows in its period, ``(start_ms, window_ms)``, from its schedule entry ``j``: one at
    ``start_ms``, or a pattern job's one per busy arc (``windows_ms``, from its offset)."""
    if j.get("windows_ms"):
        return [(start_ms + float(a), float(n)) for a, n in j["windows_ms"]]
    return [(start_ms, float(j["window_ms"]))]


def windows_of(schedule_doc: dict, job: str, t0_s: float, t1_s: float) -> np.ndarray:
    """``(open_s, close_s)`` (unix s) of ``job``'s windows overlapping ``[t0_s, t1_s]``, one period more on
    each side (so that a slack of less than a period cannot miss one).

    ``schedule_doc``: the scheduler's ``GET /shiftbed/schedule`` answer; windows start at each job's shift.
    """
    j = schedule_doc["jobs"][job]
    epoch_s, period_ms = schedule_doc["epoch_s"], float(j["period_ms"])
    t0_ms, t1_ms = (t0_s - epoch_s) * 1000 - period_ms, (t1_s - epoch_s) * 1000 + period_ms
    windows = sorted(w for start_ms, length_ms in job_windows(j, float(j["shift_ms"]))
                     for w in windows_between(start_ms, period_ms, length_ms, t0_ms, t1_ms))
    return epoch_s + np.array(windows, dtype=float).reshape(-1, 2) / 1000


def window_rows(policy: str, schedule_doc: dict, duration_s: float) -> list[dict]:
    """The rows of ``windows.csv`` for one policy: every window of every job that opens within
    ``duration_s`` of the epoch, in seconds after the epoch. Windows start at each job's offset (for
    ``gate`` its shift)."""
    rows = []
    for name, j in schedule_doc["jobs"].items():
        found = [w for start_ms, length_ms in job_windows(j, float(j["offset_ms"]))
                 for w in windows_between(start_ms, float(j["period_ms"]), length_ms, 0.0, duration_s * 1000)]
        for open_ms, close_ms in sorted(found):
            rows.append({"policy": policy, "job": name, "open_s": open_ms / 1000, "close_s": close_ms / 1000})
    return rows


def inside(times_s: np.ndarray, windows: np.ndarray, slack_s: float = 0.0) -> np.ndarray:
    """Boolean mask: which times fall in some window (widened by ``slack_s`` on both sides)."""
    if len(windows) == 0:
        return np.zeros(len(times_s), dtype=bool)
    idx = np.searchsorted(windows[:, 0] - slack_s, times_s, side="right") - 1
    ok = idx >= 0
    idx = np.clip(idx, 0, len(windows) - 1)
    return ok & (times_s < windows[idx, 1] + slack_s)


def bytes_in_windows(packets: pd.DataFrame, job_of_packet: pd.Series, schedule_doc: dict,
                     slack_s: float = 0.0) -> dict:
    """Per job: payload bytes captured, and the share inside the job's windows."""
    out = {}
    for job in schedule_doc["jobs"]:
        mine = packets[(job_of_packet == job) & (packets["payload_bytes"] > 0)]
        if mine.empty:
            out[job] = {"bytes": 0, "in_window": None}
            continue
        t = mine["time_s"].to_numpy()
        w = windows_of(schedule_doc, job, t.min(), t.max())
        mask = inside(t, w, slack_s)
        total = int(mine["payload_bytes"].sum())
        out[job] = {"bytes": total, "in_window": float(mine["payload_bytes"].to_numpy()[mask].sum() / total)}
    return out


def observed_edges(times_s: np.ndarray, min_gap_s: float) -> tuple[np.ndarray, np.ndarray]:
    """From a paced stream's packet times: (close times, open times) around every gap > ``min_gap_s``."""
    t = np.sort(np.asarray(times_s))
    gaps = np.nonzero(np.diff(t) > min_gap_s)[0]
    return t[gaps], t[gaps + 1]


def edge_errors(times_s: np.ndarray, windows: np.ndarray, min_gap_s: float,
                max_error_s: float = 0.05) -> pd.DataFrame:
    """Observed minus scheduled edge time (ms) for each scheduled edge inside the capture.

    Only edges strictly inside the probe's life are scored; an edge whose
    observation is further than ``max_error_s`` away counts as missed (NaN).
    """
    closes, opens = observed_edges(times_s, min_gap_s)
    t0, t1 = np.min(times_s), np.max(times_s)
    rows = []
    for kind, scheduled, observed in (("open", windows[:, 0], opens), ("close", windows[:, 1], closes)):
        for s in scheduled:
            if not t0 + max_error_s < s < t1 - max_error_s:
                continue
            if len(observed):
                nearest = observed[np.argmin(np.abs(observed - s))]
                err = (nearest - s) * 1000 if abs(nearest - s) <= max_error_s else np.nan
            else:
                err = np.nan
            rows.append({"edge": kind, "scheduled_s": s, "error_ms": err})
    return pd.DataFrame(rows, columns=["edge", "scheduled_s", "error_ms"])


def summarize_ms(values) -> dict:
    """Signed mean, and mean, p95, max of absolute errors (ms); how many edges were missed."""
    v = np.asarray(values, dtype=float)
    missed = int(np.isnan(v).sum())
    v = v[~np.isnan(v)]
    if len(v) == 0:
        return {"n": 0, "missed": missed}
    signed_mean = float(v.mean())
    v = np.abs(v)
    return {"n": int(len(v)), "missed": missed, "signed_mean": signed_mean, "mean": float(v.mean()),
            "p95": float(np.percentile(v, 95)), "max": float(v.max())}


PACKET_KEY = ["src_ip", "dst_ip", "proto", "sport", "dport", "ip_id"]


def match_packets(ingress: pd.DataFrame, egress: pd.DataFrame) -> pd.DataFrame:
    """The packets seen in both captures (``read_pcap`` tables), paired by IPv4 identification and 4-tuple.

    Columns: :data:`PACKET_KEY`, ``ingress_s``, ``egress_s``; one row per packet, by ingress time.
    A key seen twice in one capture (identification wrapped within a flow) cannot be paired and is
    left out; packets seen only at ingress (held by the gate or lost after it) have no row.
    """
    sides = []
    for packets, column in ((ingress, "ingress_s"), (egress, "egress_s")):
        once = packets.drop_duplicates(PACKET_KEY, keep=False)
        sides.append(once[PACKET_KEY + ["time_s"]].rename(columns={"time_s": column}))
    matched = sides[0].merge(sides[1], on=PACKET_KEY, how="inner")
    return matched.sort_values("ingress_s", kind="stable").reset_index(drop=True)


def summarize_delays_ms(delays_s) -> dict:
    """How long packets took between two captures: count, p50, p95 and max in ms (count only if none)."""
    v = np.asarray(delays_s, dtype=float) * 1000
    if len(v) == 0:
        return {"n": 0}
    return {"n": int(len(v)), "p50": float(np.percentile(v, 50)), "p95": float(np.percentile(v, 95)),
            "max": float(v.max())}


def split_edges(probes, min_gap_s: float, min_packets: int = 100) -> dict:
    """Gate edge, wire edge and queueing for constant-rate probes captured at ingress and egress.

    ``probes``: ``(matched, windows)`` pairs, ``matched`` from :func:`match_packets` for one probe
    flow, ``windows`` its scheduled ``(open_s, close_s)``. The gate edge uses the ingress times of
    the packets that got through (when the gate let them pass, before any queue); the wire edge
    their egress times (after the queue); queueing is egress - ingress of every such packet. A
    probe with fewer than ``min_packets`` matched packets (its stream never started) is counted
    in ``probes_silent`` and scored nowhere.
    """
    gate, wire, delays, silent = [], [], [], 0
    for matched, windows in probes:
        if len(matched) < min_packets:
            silent += 1
            continue
        ingress_s, egress_s = matched["ingress_s"].to_numpy(), matched["egress_s"].to_numpy()
        gate.extend(edge_errors(ingress_s, windows, min_gap_s).error_ms)
        wire.extend(edge_errors(egress_s, windows, min_gap_s).error_ms)
        delays.extend(egress_s - ingress_s)
    return {"gate_edge_ms": summarize_ms(gate), "wire_edge_ms": summarize_ms(wire),
            "queueing_ms": summarize_delays_ms(delays), "probes_silent": silent}
