"""A pattern job's phases, recorded per policy: ``phases.csv`` (each phase of each iteration against the
capture) and ``phases.json`` (each phase's figures per policy and job, ``analysis/phases.py``).

The report shows them phase by phase, beside each job's iteration times measured and predicted
(``patternprediction``) and the plan's schedule.
"""

from __future__ import annotations

import os

import pandas as pd

from apps.dltjob import phases_csv_path
from scenarios.analysis.phases import (
    MAX_BYTES_ERR_PCT,
    MAX_START_P95_MS,
    phase_figures,
    phase_table,
)
from scenarios.results import PHASES_SUMMARY, PHASES_TABLE, ResultsWriter

TABLE_COLUMNS = ["policy", "job", "iteration", "phase", "due", "intended", "launch", "end", "bytes",
                 "expected_bytes", "wire_bytes", "waited_ms", "launch_late_ms", "wire_late_ms"]


class PhaseRecord:
    """Each policy's phases of every pattern job, kept for ``phases.json``."""

    def __init__(self):
        self.figures: dict[str, dict[str, list[dict]]] = {}  # policy -> job -> per phase

    def record(self, writer: ResultsWriter, policy: str, run_dir: str, specs, captures: dict, links,
               leaf_ips: dict[int, set[str]]) -> None:
        """Read every pattern job's phase rows of the measurement in ``run_dir`` and check them against
        the capture of its home port (its senders on that leaf, as the run's byte check)."""
        for spec in specs:
            if not spec.phases:
                continue
            path = phases_csv_path(os.path.join(run_dir, f"{spec.name}.csv"))
            try:
                rows = pd.read_csv(path)
            except (OSError, pd.errors.EmptyDataError):
                continue
            home = links.home[spec.name]
            senders = {w.ip for w in spec.workers if w.ip in leaf_ips.get(home.leaf, set())}
            packets, labels = captures[home.name]
            table = phase_table(rows, packets, labels, spec.name, senders, len(senders), len(spec.workers))
            writer.append_rows(PHASES_TABLE, table.assign(policy=policy)[TABLE_COLUMNS].to_dict("records"))
            self.figures.setdefault(policy, {})[spec.name] = phase_figures(table, [s for s, _ in spec.phases])

    def write(self, writer: ResultsWriter) -> None:
        if self.figures:
            writer.write_json(PHASES_SUMMARY, {"bounds": {"capture_bytes_err_pct": MAX_BYTES_ERR_PCT,
                                                          "wire_start_late_p95_ms": MAX_START_P95_MS},
                                               "policies": self.figures})
