"""A small synthetic results folder with known numbers, written through ResultsWriter.

Two jobs on one 20 Mbit/s shared link: `a` (T = 100 ms, c = 30 ms) and `b`
(T = 200 ms, c = 40 ms); gcd 100 ms >= 70 ms, so separation is feasible. Three
policies, `duration_s` seconds each; `gate` wins by GATE_CHANGE_PCT.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from scenarios.results import ResultsWriter

SCENARIO = "two-jobs"
LINK_MBPS = 20.0
JOBS = {"a": {"period_ms": 100.0, "comm_ms": 30.0, "shift_ms": 0.0},
        "b": {"period_ms": 200.0, "comm_ms": 40.0, "shift_ms": 30.0}}
EPOCHS_S = {"none": 1_790_000_000.0, "shift": 1_790_000_100.0, "gate": 1_790_000_200.0}
SHIFT_CHANGE_PCT = 4.0
GATE_CHANGE_PCT = 12.5
# measured mean iteration time (ms) and the fluid model's prediction, per policy and job
MEASURED_MS = {"none": {"a": 118.0, "b": 226.0}, "shift": {"a": 112.0, "b": 219.0},
               "gate": {"a": 101.0, "b": 202.0}}
PREDICTED_MS = {"none": {"a": 115.0, "b": 220.0}, "shift": {"a": 110.0, "b": 215.0},
                "gate": {"a": 100.0, "b": 200.0}}
SOLO_MS = {"a": 100.0, "b": 200.0}
# the model with start-ups up to 6 ms slower: gate's b is on a knife edge (range > a tenth of 200 ms)
PREDICTED_RANGE_MS = {policy: {job: (ms, ms + 2.0) for job, ms in jobs.items()} for policy, jobs in PREDICTED_MS.items()}
PREDICTED_RANGE_MS["gate"]["b"] = (200.0, 260.0)
# bursts on the wire, medians (ms after launch): first data packet, every flow started, data phase
SOLO_BURSTS_MS = {"a": (8.0, 12.0, 25.0), "b": (9.0, 14.0, 33.0)}
RUN_BURSTS_MS = {"a": (8.5, 13.0, 27.0), "b": (9.5, 16.0, 36.0)}
BURST_KEYS = ("burst_lead_ms", "burst_all_flows_ms", "burst_data_ms")


def error_pct(policy: str, job: str) -> float:
    predicted = PREDICTED_MS[policy][job]
    return (MEASURED_MS[policy][job] - predicted) / predicted * 100


def iteration_rows(policy: str, duration_s: float, rng) -> list[dict]:
    rows = []
    for job, spec in JOBS.items():
        shift_s = 0.0 if policy == "none" else spec["shift_ms"] / 1000
        mean_s = MEASURED_MS[policy][job] / 1000
        for worker in ("w0", "w1"):
            start = EPOCHS_S[policy] + shift_s
            for k in range(int(duration_s / mean_s)):
                length_s = mean_s * (1 + rng.uniform(-0.03, 0.03))
                comm_s = spec["comm_ms"] / 1000
                rows.append({"policy": policy, "job": job, "worker": worker, "iteration": k,
                             "start": start, "comm_start": start + length_s - comm_s,
                             "comm_end": start + length_s, "end": start + length_s,
                             "bytes": int(LINK_MBPS * 1e6 / 8 * comm_s)})
                start += length_s
    return rows


def bandwidth_table(policy: str, duration_s: float) -> pd.DataFrame:
    t_ms = np.arange(0, round(duration_s * 1000), 10)  # integer ms: exact bin arithmetic
    t_s = t_ms / 1000
    frames = []
    for job, spec in JOBS.items():
        shift_ms = 0.0 if policy == "none" else spec["shift_ms"]
        phase_ms = (t_ms - shift_ms) % spec["period_ms"]
        busy = phase_ms < spec["comm_ms"]
        mbps = np.where(busy, LINK_MBPS / (2 if policy == "none" else 1), 0.0)
        frames.append(pd.DataFrame({"policy": policy, "link": "s1-s3", "t_s": t_s[busy],
                                    "job": job, "mbps": mbps[busy]}))
    return pd.concat(frames, ignore_index=True)


def window_table(policy: str, duration_s: float) -> pd.DataFrame:
    rows = []
    for job, spec in JOBS.items():
        for k in range(int(duration_s * 1000 / spec["period_ms"])):
            open_s = (spec["shift_ms"] + k * spec["period_ms"]) / 1000
            rows.append({"policy": policy, "job": job, "open_s": open_s,
                         "close_s": open_s + spec["comm_ms"] / 1000})
    return pd.DataFrame(rows)


def schedule_json() -> dict:
    return {"quantum_ms": 1.0, "hyperperiod_ms": 200.0, "feasible": True, "overlap_ms": 0.0,
            "method": "exact",
            "jobs": [{"name": name, **spec, "solo_period_ms": spec["period_ms"],
                      "solo_comm_ms": spec["comm_ms"]} for name, spec in JOBS.items()],
            "pairs": [{"a": "a", "b": "b", "gcd_ms": 100.0, "comm_sum_ms": 70.0, "separable": True}]}


def summary_json(fidelity_ok: bool = True) -> dict:
    changes = {"none": 0.0, "shift": SHIFT_CHANGE_PCT, "gate": GATE_CHANGE_PCT}
    return {
        "scenario": SCENARIO,
        "fidelity_ok": fidelity_ok,
        "fidelity": {"solo_rate_ratio": 0.97 if fidelity_ok else 0.71, "capture_drops": 0,
                     "advice": None if fidelity_ok else "lower link_mbps to 10",
                     "solo": {job: {"iteration_ms": SOLO_MS[job], **dict(zip(BURST_KEYS, SOLO_BURSTS_MS[job], strict=True))}
                              for job in JOBS}},
        "crosschecks": {"capture_vs_iperf_bytes_err_pct": 0.8,
                        "capture_vs_portstats_util_err_pct": 2.1},
        "policies": {
            policy: {"throughput_change_vs_none_pct": change, "epoch_s": EPOCHS_S[policy],
                     "jobs": {job: {"iterations": int(3000 / MEASURED_MS[policy][job]) * 2,
                                    "mean_iteration_ms": MEASURED_MS[policy][job],
                                    "predicted_iteration_ms": PREDICTED_MS[policy][job],
                                    "predicted_range_ms": list(PREDICTED_RANGE_MS[policy][job]),
                                    "knife_edge": (policy, job) == ("gate", "b"),
                                    **({"iteration_se_ms": 6.5} if (policy, job) == ("gate", "b") else {}),
                                    "solo_iteration_ms": SOLO_MS[job],
                                    "error_pct": error_pct(policy, job),
                                    **dict(zip(BURST_KEYS, RUN_BURSTS_MS[job], strict=True))}
                              for job in JOBS}}
            for policy, change in changes.items()
        },
    }


def write_example(root: Path, *, duration_s: float = 3.0, fidelity_ok: bool = True) -> Path:
    """Write the complete example folder under ``root``; returns its final path."""
    rng = np.random.default_rng(7)
    with ResultsWriter(root, SCENARIO, timestamp="20261130T020000Z") as out:
        out.write_text("scenario.yaml", f"name: {SCENARIO}\nlink_mbps: {LINK_MBPS}\n")
        out.write_json("environment.json", {"shiftbed_commit": "abc1234", "ovs": "3.1.0",
                                            "ryu": "4.34", "iperf3": "3.12", "kernel": "6.1.0",
                                            "datapath": "netdev", "mtu": 9000, "cores": 2,
                                            "link_mbps": LINK_MBPS})
        out.write_json("schedule.json", schedule_json())
        for policy in EPOCHS_S:
            out.append_rows("iterations.csv", iteration_rows(policy, duration_s, rng))
        out.write_table("link_bandwidth.csv",
                        pd.concat([bandwidth_table(p, duration_s) for p in EPOCHS_S]))
        out.write_table("windows.csv",
                        pd.concat([window_table(p, duration_s) for p in ("shift", "gate")]))
        out.write_table("port_stats.csv", pd.DataFrame(
            [{"time": EPOCHS_S["none"] + k, "dpid": 3, "port": 1, "rx_bytes": k * 10**6,
              "tx_bytes": k * 10**6, "rx_packets": k * 700, "tx_packets": k * 700,
              "rx_dropped": 0, "tx_dropped": 0} for k in range(4)]))
        out.write_json("summary.json", summary_json(fidelity_ok))
        return out.finish(complete=True)
