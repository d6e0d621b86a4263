"""A pattern job's phases on the wire: each phase of each iteration against its capture, and per phase
the figures a run reports (bytes, start against the intended offset, the capture's cross-check).

The driver (``apps/dltjob.py``) writes one row per phase and iteration (``apps.jobmodel.PHASE_CSV_FIELDS``):
when it was due (its offset from the iteration's origin), when it went and ended, its bytes. A phase is
*intended* at the later of its due time and the end of the phase before it (ordered collectives wait for
the one in flight). A job's phases go one after another over the same connections, so the captured data
packets of the job between a phase's launch (or the end of the phase before it, whose bytes had all
arrived by then) and its end are that phase's (:func:`phase_table`).

The cross-check's bounds (:data:`MAX_BYTES_ERR_PCT`, :data:`MAX_START_P95_MS`): the
capture sees every byte the driver counted, and the first byte leaves within 2 ms of the intended time
at the 95th percentile (the gate's own edges land within about that, docs/gate.md).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from scenarios.analysis.tables import percent_error, unique_payload_bytes

MAX_BYTES_ERR_PCT = 2.0
MAX_START_P95_MS = 2.0
LAUNCH_SLACK_S = 0.0005  # a phase's first packet may be stamped this little before the driver's launch


def phase_table(rows: pd.DataFrame, packets: pd.DataFrame, labels: pd.Series, job: str, senders: set[str],
                flows_seen: int, flows: int) -> pd.DataFrame:
    """One row per phase and iteration of ``job`` (its driver's ``rows``), with ``intended`` (unix s),
    ``waited_ms`` (intended − due), ``launch_late_ms`` (launch − intended), ``wire_bytes`` (the unique
    payload bytes of its packets from ``senders`` on the capture, the flows crossing it), ``expected_bytes``
    (the driver's bytes of those ``flows_seen`` of its ``flows``) and ``wire_late_ms`` (first such packet
    − intended; NaN where none was captured)."""
    mine = rows[rows["job"] == job].sort_values(["iteration", "phase"]).reset_index(drop=True)
    previous_end = mine["end"].shift(1).where(mine["phase"] > 0)
    intended = np.fmax(mine["due"].to_numpy(float), previous_end.to_numpy(float))
    out = mine.assign(intended=intended, waited_ms=(intended - mine["due"]) * 1000,
                      launch_late_ms=(mine["launch"] - intended) * 1000,
                      expected_bytes=mine["bytes"] * flows_seen / flows)
    ours = packets[(labels == job) & packets["src_ip"].isin(senders) & (packets["payload_bytes"] > 0)]
    times = ours["time_s"].to_numpy()
    wire_bytes, wire_first = [], []
    ends = out["end"].to_numpy(float)
    for k, (launch, end) in enumerate(zip(out["launch"].to_numpy(float), ends, strict=True)):
        # the phase before it (on the same connections) had all its bytes received by its end
        since = max(launch - LAUNCH_SLACK_S, ends[k - 1] if k else -np.inf)
        inside = ours[(times > since) & (times <= end)]
        wire_bytes.append(unique_payload_bytes(inside))
        wire_first.append(float(inside["time_s"].min()) if len(inside) else np.nan)
    out["wire_bytes"] = wire_bytes
    out["wire_late_ms"] = (np.array(wire_first) - intended) * 1000
    return out


def phase_figures(table: pd.DataFrame, starts_ms: list[float], skip_iterations: int = 1) -> list[dict]:
    """Per phase of one job under one policy (``table`` from :func:`phase_table`; iterations before
    ``skip_iterations`` left out, as the job's means leave its first): its offset in the scenario, bytes
    per iteration, how long it waited for the phase before it, its start against the intended time (p95,
    the driver's launch and the capture's first byte), the capture's bytes against the driver's, and
    whether it is within the cross-check's bounds."""
    steady = table[table["iteration"] >= skip_iterations]
    out = []
    for index, start_ms in enumerate(starts_ms):
        rows = steady[steady["phase"] == index]
        if rows.empty:
            continue
        late = rows["wire_late_ms"].dropna()
        expected = float(rows["expected_bytes"].sum())
        bytes_err = percent_error(float(rows["wire_bytes"].sum()), expected) if expected > 0 else None
        start_p95 = float(np.percentile(np.abs(late), 95)) if len(late) else None
        out.append({
            "phase": index, "start_ms": start_ms, "iterations": int(len(rows)),
            "bytes": float(rows["bytes"].median()),
            "waited_ms_median": float(rows["waited_ms"].median()),
            "launch_late_p95_ms": float(np.percentile(rows["launch_late_ms"], 95)),
            "wire_start_late_p95_ms": start_p95,
            "capture_bytes_err_pct": bytes_err,
            "within_bounds": (bytes_err is not None and abs(bytes_err) <= MAX_BYTES_ERR_PCT
                              and start_p95 is not None and start_p95 <= MAX_START_P95_MS),
        })
    return out
