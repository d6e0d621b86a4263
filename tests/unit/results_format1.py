"""A results folder as format 1 (``shiftbed-results/1``) wrote it, for the readers that still load one.

The same example run as ``results_example`` (its tables, numbers and timestamp), with
the files of the first results writer: a summary without standard errors,
predicted throughput changes, gaps, links or burst figures, and an
environment without ``shared_link_mbps``. Written file by file, since today's
writer stamps its own format.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import results_example as ex

FORMAT_1 = "shiftbed-results/1"


def summary_json(results_dir: Path, fidelity_ok: bool) -> dict:
    changes = {"none": 0.0, "shift": ex.SHIFT_CHANGE_PCT, "gate": ex.GATE_CHANGE_PCT}
    return {
        "scenario": ex.SCENARIO,
        "fidelity_ok": fidelity_ok,
        "fidelity": {"solo_rate_ratio": 0.97 if fidelity_ok else 0.71, "capture_drops": 0,
                     "advice": None if fidelity_ok else "lower link_mbps to 10"},
        "crosschecks": {"capture_vs_iperf_bytes_err_pct": 0.8, "capture_vs_portstats_util_err_pct": 2.1},
        "policies": {
            policy: {"throughput_change_vs_none_pct": change, "epoch_s": ex.EPOCHS_S[policy],
                     "jobs": {job: {"iterations": int(3000 / ex.MEASURED_MS[policy][job]) * 2,
                                    "mean_iteration_ms": ex.MEASURED_MS[policy][job],
                                    "predicted_iteration_ms": ex.PREDICTED_MS[policy][job],
                                    "solo_iteration_ms": ex.SOLO_MS[job],
                                    "error_pct": ex.error_pct(policy, job)}
                              for job in ex.JOBS}}
            for policy, change in changes.items()
        },
        "format": FORMAT_1,
        "results_dir": str(results_dir),
        "complete": True,
        "incomplete_reason": None,
    }


def write_format1_example(root: Path, *, stamp: str = "20261129T020000Z", fidelity_ok: bool = True,
                          duration_s: float = 3.0) -> Path:
    """The format-1 folder ``root/two-jobs/<stamp>``; returns its path."""
    folder = Path(root) / ex.SCENARIO / stamp
    (folder / "plots").mkdir(parents=True)
    rng = np.random.default_rng(7)
    (folder / "scenario.yaml").write_text(f"name: {ex.SCENARIO}\nlink_mbps: {ex.LINK_MBPS}\n")
    (folder / "environment.json").write_text(json.dumps(
        {"shiftbed_commit": "abc1234", "ovs": "3.1.0", "ryu": "4.34", "iperf3": "3.12", "kernel": "6.1.0",
         "datapath": "netdev", "mtu": 9000, "cores": 2, "link_mbps": ex.LINK_MBPS}, indent=2))
    (folder / "schedule.json").write_text(json.dumps(ex.schedule_json(), indent=2))
    iterations = pd.DataFrame([row for p in ex.EPOCHS_S for row in ex.iteration_rows(p, duration_s, rng)])
    iterations.to_csv(folder / "iterations.csv", index=False)
    pd.concat([ex.bandwidth_table(p, duration_s) for p in ex.EPOCHS_S]).to_csv(folder / "link_bandwidth.csv",
                                                                                 index=False)
    pd.concat([ex.window_table(p, duration_s) for p in ("shift", "gate")]).to_csv(folder / "windows.csv", index=False)
    pd.DataFrame([{"time": ex.EPOCHS_S["none"] + k, "dpid": 3, "port": 1, "rx_bytes": k * 10**6,
                   "tx_bytes": k * 10**6, "rx_packets": k * 700, "tx_packets": k * 700, "rx_dropped": 0,
                   "tx_dropped": 0} for k in range(4)]).to_csv(folder / "port_stats.csv", index=False)
    (folder / "summary.json").write_text(json.dumps(summary_json(folder, fidelity_ok), indent=2))
    return folder
