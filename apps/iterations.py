"""The job drivers' rows → one row per job iteration.

A driver (``apps/dltjob.py``) writes one CSV row per worker per iteration
(:data:`apps.jobmodel.CSV_FIELDS`). A job's iteration starts when its first
worker starts and ends when its last worker's transfer is done (the
barrier); its communication runs from the first launch to the last exit.
Calibration (``apps/jobrun.py``) and the run's analysis
(``scenarios/analysis/tables.py``) both read iterations through here.
"""

from __future__ import annotations

KEYS = ("policy", "job", "iteration")


def iteration_table(rows):
    """One row per (policy, job, iteration) of per-worker driver rows (a pandas DataFrame), with
    ``start``, ``comm_start``, ``comm_end``, ``end`` (unix s), ``bytes`` (sent by all workers),
    ``iteration_ms`` and ``comm_ms``."""
    it = (rows.groupby(list(KEYS), sort=True)
          .agg(start=("start", "min"), comm_start=("comm_start", "min"), comm_end=("comm_end", "max"),
               end=("end", "max"), bytes=("bytes", "sum"))
          .reset_index())
    it["iteration_ms"] = (it["end"] - it["start"]) * 1000.0
    it["comm_ms"] = (it["comm_end"] - it["comm_start"]) * 1000.0
    return it
