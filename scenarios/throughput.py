"""A policy's throughput change against ``none``, as a run's summary and the model's prediction state it
(``throughput_change_vs_none_pct``, docs/results.md)."""

from __future__ import annotations

from collections.abc import Mapping


def throughput_change_pct(mean_iteration_ms: Mapping[str, float],
                          none_mean_iteration_ms: Mapping[str, float]) -> float:
    """``throughput_change_vs_none_pct``: the mean over jobs of the change in iterations per second.

    Each job counts once whatever its period, so a short job cannot hide a long one's loss.
    """
    changes = [(none_mean_iteration_ms[job] / ms - 1) * 100 for job, ms in mean_iteration_ms.items()]
    return sum(changes) / len(changes)
