"""Did the jobs' bursts meet on the links they share, and did the jobs part?

Each burst's share of data beside a job it shares a link with, its mean over
the first and last third of a job's bursts, and where free-running jobs
parted (the run's model predicts them together before and apart after;
``scenarios/experiment/prediction.py``). Pure numpy/pandas on
``tables.burst_spans``' table, so every figure can be recomputed from a
results folder.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

MEETING_PARTS = 3  # a job's bursts in thirds: did its meetings fade, or begin, during the run?


def _covered_s(start: float, end: float, others: list[tuple[float, float]]) -> float:
    """How much of ``[start, end]`` the intervals ``others`` cover together (s)."""
    covered, reach = 0.0, start
    for a, b in sorted((max(a, start), min(b, end)) for a, b in others if a < end and b > start):
        if b > reach:
            covered += b - max(a, reach)
            reach = b
    return covered


def burst_met_shares(spans: pd.DataFrame, meets: set[frozenset] | None = None) -> np.ndarray:
    """Each burst in ``spans`` (``tables.burst_spans``): the share of its data phase (first to last data
    packet) spent beside the data of a job it shares a link with (``meets``; None: every other job)."""
    if spans.empty or "first_s" not in spans:
        return np.zeros(0)
    job = spans["job"].to_numpy()
    first, last = spans["first_s"].to_numpy(dtype=float), spans["last_s"].to_numpy(dtype=float)
    shares = np.zeros(len(spans))
    for name in set(job):
        partner = [other != name and (meets is None or frozenset((name, other)) in meets) for other in job]
        others = [(first[k], last[k]) for k in np.flatnonzero(partner)]
        for i in np.flatnonzero(job == name):
            if last[i] > first[i]:
                shares[i] = _covered_s(first[i], last[i], others) / (last[i] - first[i])
    return shares


def meeting_shares(spans: pd.DataFrame, meets: set[frozenset] | None = None,
                   parts: int = MEETING_PARTS) -> dict[str, dict[str, float]]:
    """Per job in ``spans`` (``tables.burst_spans``): the mean share of its bursts' data phases spent
    beside the data of a job it shares a link with (:func:`burst_met_shares`), over the first
    and over the last ``parts``-th of its bursts, as ``met_share_first`` and ``met_share_last``. A
    job with fewer than ``2 × parts`` bursts has no figure.

    Under max-min fair sharing a meeting is neutral (both bursts end later by the same amount), so jobs
    that start together keep meeting; on the wire free-running jobs can sort themselves apart, or fall
    into step, within a run (docs/accuracy.md, "Together or apart")."""
    shares = burst_met_shares(spans, meets)
    return _thirds(spans, shares, parts) if len(shares) else {}


def _thirds(spans: pd.DataFrame, shares: np.ndarray, parts: int) -> dict[str, dict[str, float]]:
    job, first = spans["job"].to_numpy(), spans["first_s"].to_numpy(dtype=float)
    out = {}
    for name in sorted(set(job)):
        mine = np.flatnonzero(job == name)
        if len(mine) < 2 * parts:
            continue
        ordered = shares[mine[np.argsort(first[mine])]]
        size = len(ordered) // parts
        out[str(name)] = {"met_share_first": float(ordered[:size].mean()),
                          "met_share_last": float(ordered[-size:].mean())}
    return out


APART_MET_SHARE = 0.10  # jobs whose bursts spend at most this share of their data beside each other are apart
APART_MIN_BURSTS = 3  # fewer bursts of a job after the parting than this: the jobs had not parted


def bursts_after_parting(spans: pd.DataFrame, meets: set[frozenset] | None = None) -> dict[str, int]:
    """Per job in ``spans``: how many of its bursts started after the jobs parted (0 if they had not).

    The jobs' bursts in time order, each with its share of data beside a job it meets
    (:func:`burst_met_shares`), are fitted by a step: before the parting each share by their
    mean, after it by 0 (least squares; where a step fits as well as none, the earliest such). The
    parting may fall before any burst (jobs that never met), or nowhere (no step): the jobs never
    parted. A step counts only if the bursts after it spend at most
    :data:`APART_MET_SHARE` of their data beside each other on average and every job has at
    least :data:`APART_MIN_BURSTS` of them. A step, not the last meeting: jobs that have parted
    still brush each other now and then (a few ms of jitter, 30-45 % of a burst's data for a
    few iterations in one 40-s chain run; docs/accuracy.md, "Together or apart")."""
    shares = burst_met_shares(spans, meets)
    return _after_parting(spans, shares) if len(shares) else {}


def _after_parting(spans: pd.DataFrame, shares: np.ndarray) -> dict[str, int]:
    order = np.argsort(spans["first_s"].to_numpy(dtype=float), kind="stable")
    x, job = shares[order], spans["job"].to_numpy()[order]
    # per job, how many of its bursts come at or after each position (one more slot: none after the last)
    after = {str(name): np.append(np.cumsum((job == name)[::-1])[::-1], 0) for name in set(job)}
    n = len(x)
    total, squares = np.concatenate(([0.0], np.cumsum(x))), np.concatenate(([0.0], np.cumsum(x * x)))
    best_cost, best_k = squares[n] - total[n] ** 2 / n, n  # no step: every burst together
    for k in range(n):  # the step before burst k
        if (total[n] - total[k]) / (n - k) > APART_MET_SHARE:
            continue
        if min(counts[k] for counts in after.values()) < APART_MIN_BURSTS:
            break  # later steps leave fewer bursts after them
        before = squares[k] - total[k] ** 2 / k if k else 0.0
        cost = before + squares[n] - squares[k]
        if cost < best_cost or (best_k == n and cost <= best_cost + 1e-12):  # a tie with no step: apart
            best_cost, best_k = cost, k
    return {name: int(counts[best_k]) for name, counts in sorted(after.items())}


def meeting_figures(spans: pd.DataFrame, meets: set[frozenset] | None = None) -> dict[str, dict]:
    """Per job: :func:`meeting_shares` and ``bursts_after_parting`` (:func:`bursts_after_parting`),
    each burst's share of data beside a job it meets computed once for both."""
    shares = burst_met_shares(spans, meets)
    if not len(shares):
        return {}
    out: dict[str, dict] = {name: {"bursts_after_parting": count}
                            for name, count in _after_parting(spans, shares).items()}
    for name, thirds in _thirds(spans, shares, MEETING_PARTS).items():
        out[name].update(thirds)
    return out
