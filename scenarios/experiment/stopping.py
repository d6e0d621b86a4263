"""When a policy's measurement may stop early: every job's mean iteration time known to the target standard error.

``--target-se-pct P`` turns ``--duration`` into a ceiling: a policy stops as
soon as, for every job, the standard error of its mean iteration time is at
most ``P`` % of that mean, by the estimator the results use
(``tables.job_means``: batch means, the warm-up iteration skipped), once each
job has at least :data:`MIN_ITERATIONS` steady iterations. The rule is checked
every :data:`CHECK_INTERVAL_S` on the drivers' rows so far; the iterations in
flight at the decision still finish and are kept. What stopped each policy
(the target, or the ceiling) is kept in the results (``summary_record.Stop``).

:class:`TargetSE` is the decision, :class:`PolicyStop` one policy's watch over
it; the run's adapter (``runner.Experiment``) reads the rows and polls.
"""

from __future__ import annotations

import io
import os
from dataclasses import dataclass, field

import pandas as pd

from apps.iterations import iteration_table
from scenarios.analysis.tables import BATCHES, job_means
from scenarios.analysis.verdict import WARMUP_ITERATIONS
from scenarios.summary_record import Stop

# Each of the five batches at least four iterations: the standard error never rests on batches of one or
# two iterations, which one late gated burst (a period lost, and the next windows moved) dominates.
MIN_ITERATIONS = 4 * BATCHES
CHECK_INTERVAL_S = 1.0  # how often a running policy's rows are read and the rule checked
TARGET, CEILING = "target", "ceiling"


@dataclass(frozen=True)
class TargetSE:
    """The rule: every job's mean known to ``target_se_pct`` % standard error, on ``min_iterations`` or more."""

    target_se_pct: float
    min_iterations: int = MIN_ITERATIONS

    def se_pct(self, rows: pd.DataFrame) -> dict[str, float | None]:
        """Per job in the drivers' ``rows``, the standard error of its mean iteration time in % of that mean
        (None: too few iterations for one)."""
        if rows.empty:
            return {}
        means = job_means(iteration_table(rows), WARMUP_ITERATIONS)
        return {job: (None if m["iteration_se_ms"] is None or m["iterations"] < self.min_iterations
                      or not m["mean_iteration_ms"] > 0 else 100 * m["iteration_se_ms"] / m["mean_iteration_ms"])
                for job, m in means.items()}

    def reached(self, se_pct: dict[str, float | None], jobs: list[str]) -> bool:
        """Whether every one of ``jobs`` has a standard error, at most the target."""
        return all(se_pct.get(job) is not None and se_pct[job] <= self.target_se_pct for job in jobs)


@dataclass
class PolicyStop:
    """One policy's watch: polled while it runs (:meth:`poll`), it says when to stop and, at the end
    (:meth:`outcome`), what stopped it. Times are unix seconds; ``ceiling_s`` counts from ``epoch_s``."""

    rule: TargetSE
    jobs: list[str]
    epoch_s: float
    ceiling_s: float
    stopped_at_s: float | None = None  # when the target was reached
    se_pct: dict[str, float | None] = field(default_factory=dict)  # at the last check
    _checked_s: float = float("-inf")

    def poll(self, now_s: float, read_rows) -> bool:
        """True once the target is reached (then always); ``read_rows()`` gives the rows so far, and is
        called at most every :data:`CHECK_INTERVAL_S`. Past the ceiling the drivers are finishing their
        last iterations: the ceiling stopped the policy, whatever the rows say by then."""
        if self.stopped_at_s is not None:
            return True
        if now_s - self._checked_s < CHECK_INTERVAL_S or now_s - self.epoch_s >= self.ceiling_s:
            return False
        self._checked_s = now_s
        self.se_pct = self.rule.se_pct(read_rows())
        if self.rule.reached(self.se_pct, self.jobs):
            self.stopped_at_s = now_s
            return True
        return False

    def outcome(self) -> Stop:
        """The target, reached this long after the epoch, or the ceiling."""
        if self.stopped_at_s is not None:
            by, after_s = TARGET, self.stopped_at_s - self.epoch_s
        else:
            by, after_s = CEILING, self.ceiling_s
        return Stop(by=by, after_ms=round(after_s * 1000, 1), target_se_pct=self.rule.target_se_pct,
                    se_pct={job: None if v is None else round(v, 3) for job, v in self.se_pct.items()})


def read_rows(run_dir: str, jobs: list[str]) -> pd.DataFrame:
    """The drivers' rows written so far in ``run_dir`` (a line still being written is left out)."""
    frames = []
    for job in jobs:
        try:
            with open(os.path.join(run_dir, f"{job}.csv")) as f:
                text = f.read()
        except OSError:
            continue
        text = text[:text.rfind("\n") + 1]
        if text.count("\n") < 2:  # a header at most
            continue
        frames.append(pd.read_csv(io.StringIO(text)))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
