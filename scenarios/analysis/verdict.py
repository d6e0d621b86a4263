"""A policy's throughput change against ``none``, its 95 % interval, and the verdict that follows from it.

The one place every reader takes it from: report.md and report.html ("In
short" and the policies' table), ``shiftbed compare``, the table ``run`` and
the demo print, and ``--json``. The verdict follows the interval, in the
words and at the threshold of ``shiftbed sweep`` and ``map``
(``controller.theory.tally.OUTCOMES``, ``controller.theory.sweep.HELPS_THRESHOLD``,
1 %): a policy *helps* when its whole interval is above the threshold, *hurts*
when its whole interval is below minus it, and is otherwise *neutral*: within
the noise of the run. A policy without an interval (a job had too few
iterations for a standard error) has no verdict.

The interval. Each job's change is ``(none_ms / ms - 1) × 100``
(``scenarios.throughput.throughput_change_pct``); its variance follows from the two means'
standard errors (batch means, ``tables.batch_means_se``) by the delta method,
and the policy's change, the mean over its jobs, adds the jobs' variances over
the jobs squared. Each standard error rests on ``BATCHES - 1`` degrees of
freedom, so the half-width is Student's t at the Welch–Satterthwaite degrees
of freedom times the standard error. The jobs are taken as independent, which
jobs sharing a link are not quite: the interval is the measurement noise of
each mean, not the coupling between jobs.

Too wide to tell. A standard error shrinks with the square root of the
iterations, and the degrees of freedom stay those of the batches, so a run
``k`` times as long has an interval ``sqrt(k)`` times narrower. When a
neutral change's half-width is over the threshold (a narrower interval might
still find it helps or hurts), a run of ``span × (half-width /
threshold)²`` per policy would bring it to the threshold; ``span`` is the
longest a job's iterations covered under the policy or ``none`` (iterations ×
mean). A job under ``MIN_SE_ITERATIONS`` has no standard error; then the
least span that gives every job one is said instead.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from apps.iterations import iteration_table
from controller.theory.sweep import HELPS_THRESHOLD
from controller.theory.tally import OUTCOMES, student_t975
from scenarios.analysis.tables import BATCHES, job_means
from scenarios.results import Results
from scenarios.summary_record import SummaryRecord
from scenarios.throughput import throughput_change_pct

BASELINE = "none"
HELPS, NEUTRAL, HURTS = OUTCOMES
THRESHOLD_PCT = 100 * HELPS_THRESHOLD  # the sweep's threshold, in percent of throughput
MIN_SE_ITERATIONS = 2 * BATCHES  # fewer iterations than this give a mean no standard error (batch_means_se)
WARMUP_ITERATIONS = 1  # the iteration a job's mean skips (tables.job_means)


@dataclass(frozen=True)
class PolicyChange:
    """One policy's measured throughput change against ``none`` (%), the half-width of its 95 % interval
    (None: a job had no standard error), the threshold it is judged at, and the span its iterations
    covered (s), which scales to the run that would tell."""

    policy: str
    change_pct: float | None
    half_width_pct: float | None = None
    threshold_pct: float = THRESHOLD_PCT
    span_s: float | None = None
    longest_iteration_s: float | None = None

    @property
    def low_pct(self) -> float | None:
        return None if self.change_pct is None or self.half_width_pct is None else self.change_pct - self.half_width_pct

    @property
    def high_pct(self) -> float | None:
        return None if self.change_pct is None or self.half_width_pct is None else self.change_pct + self.half_width_pct

    @property
    def verdict(self) -> str | None:
        """``helps``, ``hurts`` or ``neutral`` by the interval; None without one (and for ``none`` itself)."""
        if self.policy == BASELINE or self.low_pct is None:
            return None
        if self.low_pct > self.threshold_pct:
            return HELPS
        if self.high_pct < -self.threshold_pct:
            return HURTS
        return NEUTRAL

    @property
    def too_wide(self) -> bool:
        """A change the run cannot class: without an interval, or within the noise with an interval wider
        than the threshold (a narrower one could still find it helps or hurts)."""
        if self.policy == BASELINE or self.change_pct is None:
            return False
        return self.verdict is None or (self.verdict == NEUTRAL and self.half_width_pct > self.threshold_pct)

    @property
    def duration_to_tell_s(self) -> float | None:
        """Seconds a policy would need to run for an interval within the threshold (module docstring),
        or, without an interval, for every job to have a standard error; None when it already tells."""
        if not self.too_wide or self.span_s is None:
            return None
        if self.half_width_pct is None:
            if self.longest_iteration_s is None:
                return None
            return (MIN_SE_ITERATIONS + WARMUP_ITERATIONS) * self.longest_iteration_s
        return self.span_s * (self.half_width_pct / self.threshold_pct) ** 2

    def bounds_text(self) -> str:
        """``[-2.9, +4.8]``, the interval's ends in %, or ``n/a`` without one."""
        return "n/a" if self.low_pct is None else f"[{self.low_pct:+.1f}, {self.high_pct:+.1f}]"

    def interval_text(self) -> str:
        """``+1.0 % [-2.9, +4.8]``, or the change alone without an interval (``n/a`` without a change)."""
        if self.change_pct is None:
            return "n/a"
        return f"{self.change_pct:+.1f} %" + ("" if self.low_pct is None else f" {self.bounds_text()}")

    def to_json(self) -> dict:
        """The keys ``--json`` adds to the policy's entry (docs/results.md)."""
        ci95 = None if self.low_pct is None else [self.low_pct, self.high_pct]
        more = self.duration_to_tell_s
        return {"throughput_change_vs_none_ci95": ci95, "throughput_verdict": self.verdict,
                "duration_to_tell_s": None if more is None else round(more, 1)}


def change_half_width_pct(means_ms: dict[str, float], se_ms: dict[str, float | None], none_ms: dict[str, float],
                          none_se_ms: dict[str, float | None]) -> float | None:
    """The half-width of the 95 % interval of the mean over jobs of ``(none_ms / ms - 1) × 100`` (module
    docstring), or None when a job lacks a standard error or a mean under ``none``."""
    if not means_ms or any(se_ms.get(j) is None or none_se_ms.get(j) is None or not none_ms.get(j) for j in means_ms):
        return None
    n = len(means_ms)
    parts = []  # each mean's share of the variance of the policy's change
    for job, ms in means_ms.items():
        ratio = none_ms[job] / ms
        parts.append((100 * ratio * none_se_ms[job] / none_ms[job] / n) ** 2)
        parts.append((100 * ratio * se_ms[job] / ms / n) ** 2)
    variance = sum(parts)
    if variance == 0:
        return 0.0
    dof = variance ** 2 / sum(p ** 2 / (BATCHES - 1) for p in parts)
    return student_t975(dof) * math.sqrt(variance)


def policy_changes(summary: SummaryRecord, se_ms: dict[str, dict[str, float | None]] | None = None,
                   threshold_pct: float = THRESHOLD_PCT) -> dict[str, PolicyChange]:
    """Every policy's :class:`PolicyChange`, in the summary's order. ``se_ms``: each policy's jobs'
    standard errors where the summary's own are not to be taken (:func:`folder_changes`). The change is
    the summary's, else worked out from the means; without ``none`` no policy has one."""
    policies = summary.policies
    se_ms = se_ms or {p: {j: r.iteration_se_ms for j, r in e.jobs.items()} for p, e in policies.items()}
    baseline = policies.get(BASELINE)
    none_ms = {j: r.mean_iteration_ms for j, r in baseline.jobs.items()} if baseline else {}
    out = {}
    for policy, entry in policies.items():
        if baseline is None:
            out[policy] = PolicyChange(policy, None, threshold_pct=threshold_pct)
            continue
        means = {j: r.mean_iteration_ms for j, r in entry.jobs.items() if r.mean_iteration_ms}
        change = 0.0 if policy == BASELINE else entry.throughput_change_vs_none_pct
        if change is None and means and all(none_ms.get(j) for j in means):
            change = throughput_change_pct(means, none_ms)  # a summary that did not record it
        half = None
        if change is not None and policy != BASELINE:
            half = change_half_width_pct(means, se_ms.get(policy, {}), none_ms, se_ms.get(BASELINE, {}))
        spans = [r.iterations * r.mean_iteration_ms / 1000 for e in (entry, baseline) for r in e.jobs.values()
                 if r.iterations and r.mean_iteration_ms]
        longest = [r.mean_iteration_ms / 1000 for e in (entry, baseline) for r in e.jobs.values()
                   if r.mean_iteration_ms]
        out[policy] = PolicyChange(policy, change, half, threshold_pct, max(spans, default=None),
                                   max(longest, default=None))
    return out


def standard_errors_ms(results: Results, policy: str) -> dict[str, float | None]:
    """Each job's standard error of its mean iteration time under ``policy``: the summary's, else from
    ``iterations.csv`` as the run would have computed it (format 1 folders did not record it)."""
    jobs = results.summary.policies[policy].jobs
    recorded = {job: j.iteration_se_ms for job, j in jobs.items()}
    if all(se is not None for se in recorded.values()):
        return recorded
    rows = results.iterations[results.iterations["policy"] == policy]
    computed = job_means(iteration_table(rows)) if not rows.empty else {}
    return {job: se if se is not None else computed.get(job, {}).get("iteration_se_ms")
            for job, se in recorded.items()}


def folder_changes(results: Results, threshold_pct: float = THRESHOLD_PCT) -> dict[str, PolicyChange]:
    """:func:`policy_changes` of a results folder, each standard error the summary lacks taken from
    ``iterations.csv``: what every reader of a folder says."""
    errors = {policy: standard_errors_ms(results, policy) for policy in results.summary.policies}
    return policy_changes(results.summary, errors, threshold_pct)


def verdict_word(change: PolicyChange) -> str:
    """The policy's verdict as a table shows it: helps / neutral / hurts, ``-`` for ``none`` and where there
    is no change, ``no interval`` where a job had no standard error."""
    if change.policy == BASELINE or change.change_pct is None:
        return "-"
    return change.verdict or "no interval"


def headline(changes: dict[str, PolicyChange]) -> str:
    """"In short"'s phrase on the policies (Markdown): the best policy only when it helps; else that none
    differed from (or beat) ``none`` beyond the noise, with the largest change and its interval; and,
    when that change is too wide to tell, how long a run would tell."""
    measured = [c for c in changes.values() if c.policy != BASELINE and c.change_pct is not None]
    if not measured:
        return "no policy to compare with `none`"
    threshold = f"{measured[0].threshold_pct:g} %"
    helps = [c for c in measured if c.verdict == HELPS]
    if helps:
        best = max(helps, key=lambda c: c.change_pct)
        return (f"`{best.policy}` helps: {best.interval_text()} throughput vs `none`, its whole 95 % interval "
                f"above +{threshold}")
    best = max(measured, key=lambda c: c.change_pct)
    hurt = [c for c in measured if c.verdict == HURTS]
    if best.verdict == HURTS:
        return (f"every policy hurt against `none` beyond the noise; the least was `{best.policy}`, "
                f"{best.interval_text()}")
    if hurt:
        names = ", ".join(f"`{c.policy}`" for c in hurt)
        phrase = (f"no policy beat `none` beyond the noise ({names} hurt); the largest change was "
                  f"`{best.policy}`, {best.interval_text()}")
    else:
        phrase = (f"no policy differed from `none` beyond the noise; the largest change was `{best.policy}`, "
                  f"{best.interval_text()}")
    return phrase + _too_wide_phrase(best)


def _too_wide_phrase(change: PolicyChange) -> str:
    """What a run that could tell would take, for a change too wide to tell (else nothing)."""
    if not change.too_wide:
        return ""
    needed_s = change.duration_to_tell_s
    if change.half_width_pct is None:
        least = "" if needed_s is None else f"; a `--duration` of at least {math.ceil(needed_s):d} s gives every job one"
        return f"; too few iterations to tell: a job had under {MIN_SE_ITERATIONS}, so there is no interval{least}"
    more = "" if needed_s is None else (f": about {math.ceil(needed_s - change.span_s):d} s more per policy "
                                        f"(`--duration {math.ceil(needed_s):d}`) would narrow it to ±{change.threshold_pct:g} %")
    return (f"; the interval is too wide to tell (±{change.half_width_pct:.1f} % against the "
            f"{change.threshold_pct:g} % threshold){more}")
