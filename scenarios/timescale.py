"""The time-scale factor K: a scenario run K times slower on the wire, its figures given back in its own units.

A machine too slow for a scenario can still run it faithfully, slower. With
``time_scale: K`` (or ``--time-scale K``) the fabric runs :func:`on_wire`: every
period, burst, jitter, duration, quantum, guard band, re-alignment interval,
queue time and the hosts' minimum TCP retransmission timeout (the kernel's
200 ms where the scenario sets none) K times longer, every link rate K times
lower; the run asks the gate for a floor bucket K times as long
(``runner.gate_floor_options``). A burst moves the same bytes and a queue and
a bucket hold the same bytes, so each job keeps its true period and burst,
only slower; a round trip is K times
longer, and so is a retransmission timeout (left at 200 ms, a gated burst of
the coprime pair at K = 4 did not end within iperf3's minute). What the
run measures on the wire is turned back once, by :func:`in_scenario_units`
(times divided by K, rates multiplied by K), before it is printed or reported.

Both directions follow the project's unit names: a figure whose name ends in
``_ms`` is a time, one ending in ``_mbps`` a rate; unix times (``epoch_s``) are
instants, not durations, and stay as they are.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pandas as pd

from controller.theory.policies import PolicyKnobs
from scenarios.spec import FabricSpec, Scenario
from topo.wiring import DEFAULT_QUEUE_MS, KERNEL_TCP_RTO_MIN_MS


def on_wire(scenario: Scenario) -> Scenario:
    """The scenario the fabric runs: ``scenario`` with every time times K and every link rate over K
    (K = ``scenario.time_scale``; the same scenario at K = 1). It keeps K, so what it measures can be
    turned back (:func:`in_scenario_units`)."""
    return scaled(scenario, scenario.time_scale)


def scaled(scenario: Scenario, factor: float) -> Scenario:
    """``scenario`` with its times multiplied by ``factor`` and its link rates divided by it."""
    if factor == 1:
        return scenario
    fabric = scenario.fabric
    if fabric is not None:
        fabric = FabricSpec(fabric.spines, fabric.leaves, fabric.hosts_per_leaf,
                            fabric.host_link_mbps / factor, fabric.fabric_link_mbps / factor,
                            (fabric.queue_ms or DEFAULT_QUEUE_MS) * factor,
                            (fabric.tcp_rto_min_ms or KERNEL_TCP_RTO_MIN_MS) * factor)
    jobs = tuple(replace(job, period_ms=job.period_ms * factor, comm_ms=job.comm_ms * factor,
                         jitter_ms=job.jitter_ms * factor) for job in scenario.jobs)
    knobs = PolicyKnobs(scenario.knobs.guard_ms * factor, _times(scenario.knobs.realign_s, factor))
    return replace(scenario, quantum_ms=scenario.quantum_ms * factor, jobs=jobs, fabric=fabric,
                   duration_s=_times(scenario.duration_s, factor), knobs=knobs)


def in_scenario_units(figures: Any, time_scale: float) -> Any:
    """``figures`` (a summary's dict form, or any part of it) measured on the wire of a run at
    ``time_scale``, in the scenario's units: every ``*_ms`` over K, every ``*_mbps`` times K."""
    return _by_name(figures, 1.0 / time_scale)


def on_wire_units(figures: Any, time_scale: float) -> Any:
    """The reverse of :func:`in_scenario_units`: figures in the scenario's units, as on the wire."""
    return _by_name(figures, float(time_scale))


def tables_in_scenario_units(iterations: pd.DataFrame, link_bandwidth: pd.DataFrame, windows: pd.DataFrame,
                             epochs_s: dict[str, float | None], time_scale: float
                             ) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """A results folder's tables (as stored, on the wire) in the scenario's units: the iterations' unix
    times counted from their policy's epoch (``epochs_s``; the first start where none is kept) over K,
    the bandwidth's bins and the windows' times over K, the bandwidth times K."""
    if time_scale == 1:
        return iterations, link_bandwidth, windows
    iterations = iterations.copy()
    times = [c for c in ("start", "comm_start", "comm_end", "end") if c in iterations]
    for policy, rows in iterations.groupby("policy"):
        epoch = epochs_s.get(policy)
        origin = float(rows["start"].min()) if epoch is None else epoch
        iterations.loc[rows.index, times] = origin + (rows[times] - origin) / time_scale
    link_bandwidth = link_bandwidth.assign(**{c: link_bandwidth[c] * f for c, f in
                                              (("t_s", 1 / time_scale), ("mbps", time_scale)) if c in link_bandwidth})
    windows = windows.assign(**{c: windows[c] / time_scale for c in ("open_s", "close_s") if c in windows})
    return iterations, link_bandwidth, windows


def stated(time_scale: float) -> str:
    """What a run at ``time_scale`` means for its figures, in one sentence (the report says it)."""
    return (f"Time scale K = {time_scale:g}: the fabric ran every time {time_scale:g} times longer and every link "
            f"{time_scale:g} times slower (the same bytes per burst); every figure and plot here is in the "
            "scenario's own units (the tables in this folder hold the wire's, docs/results.md).")


def _by_name(value: Any, factor: float) -> Any:
    """Times multiplied by ``factor`` and rates divided by it, found by their names."""
    if isinstance(value, dict):
        return {key: _all(v, factor) if str(key).endswith("_ms")
                else _all(v, 1 / factor) if str(key).endswith("_mbps")
                else _by_name(v, factor) for key, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_by_name(v, factor) for v in value)
    return value


def _all(value: Any, factor: float) -> Any:
    """Every number in ``value`` (a number, or a list or mapping of them) multiplied by ``factor``."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int | float):
        return value * factor
    if isinstance(value, dict):
        return {k: _all(v, factor) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_all(v, factor) for v in value)
    return value


def _times(value: float | None, factor: float) -> float | None:
    return None if value is None else value * factor
