"""The report's four figures, drawn from a results folder alone.

Each ``draw_*`` takes a loaded :class:`scenarios.results.Results` and a PNG
path. Figures are deterministic (fixed size and dpi, matplotlib's default
style whatever the user's matplotlibrc, no software/date metadata), so
``shiftbed report`` on the same folder gives byte-identical images. No
pyplot: figures are plain ``Figure`` objects, so nothing global changes.
A table the run did not produce gives a figure that says so, not a gap in
the report.
"""

from __future__ import annotations

import functools
import io
import json
import math
from collections.abc import Iterable
from pathlib import Path

import matplotlib as mpl
import numpy as np
import pandas as pd
from matplotlib import style
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Circle, Patch, Wedge

from controller.theory.windows import window_start_ms
from scenarios.files import atomic_write_bytes
from scenarios.results import BANDWIDTH_BIN_S, PATTERN_PLAN, Results
from scenarios.schedule_record import ScheduleRecord

POLICY_ORDER = ("none", "shift", "gate", "random")
WIDTH_IN = 11.0
DPI = 100
PNG_METADATA = {"Software": None}
MAX_UNIFIED_ARCS = 3000  # beyond this the hyper-period is a blur; say so instead

BANDWIDTH_PNG = "bandwidth.png"
ITERATION_TIMES_PNG = "iteration_times.png"
PREDICTION_PNG = "predicted_vs_measured.png"
SCHEDULE_PNG = "schedule_circles.png"


# --------------------------------------------------------------------------- shared helpers


def policy_order(names: Iterable[str]) -> list[str]:
    """The four standard policies in their usual order, then any others alphabetically."""
    names = set(names)
    return [p for p in POLICY_ORDER if p in names] + sorted(names - set(POLICY_ORDER))


def job_order(results: Results) -> list[str]:
    """Jobs as the schedule lists them, then any others the run recorded."""
    ordered = [j.name for j in results.schedule.jobs] if results.schedule else []
    seen = set(ordered)
    others = set(results.iterations["job"]) | set(results.link_bandwidth["job"])
    for policy in results.summary.policies.values():
        others |= set(policy.jobs)
    return ordered + sorted(str(j) for j in others - seen)


def job_colors(jobs: list[str]) -> dict[str, tuple]:
    palette = mpl.colormaps["tab10"].colors
    return {job: palette[i % len(palette)] for i, job in enumerate(jobs)}


def _solo_ms(results: Results, job: str) -> float | None:
    for policy in results.summary.policies.values():
        entry = policy.jobs.get(job)
        if entry and entry.solo_iteration_ms is not None:
            return entry.solo_iteration_ms
    return None


def link_rate_mbps(results: Results) -> float | None:
    """The configured shared-link rate: environment.json, else the scenario's fabric links."""
    rate = results.environment.get("shared_link_mbps", results.environment.get("link_mbps"))
    if rate is None:
        fabric = results.scenario.get("fabric")
        rate = fabric.get("fabric_link_mbps") if isinstance(fabric, dict) else None
    return float(rate) if isinstance(rate, int | float) else None


def _default_style(draw):
    """Draw with matplotlib's default style, whatever the user's matplotlibrc says."""

    @functools.wraps(draw)
    def drawn_in_default_style(*args, **kwargs):
        with style.context("default"):
            return draw(*args, **kwargs)

    return drawn_in_default_style


def _save(fig: Figure, path: Path) -> Path:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=DPI, metadata=PNG_METADATA)
    atomic_write_bytes(path, buffer.getvalue())
    return path


def _placeholder(path: Path, title: str, message: str) -> Path:
    fig = Figure(figsize=(WIDTH_IN, 2.0), layout="constrained")
    ax = fig.subplots()
    ax.axis("off")
    ax.set_title(title)
    ax.text(0.5, 0.5, message, ha="center", va="center", fontsize=12, color="0.3")
    return _save(fig, path)


def _clock_wedge(center, start_frac: float, end_frac: float, r_outer: float, width: float,
                 **style) -> Wedge:
    """An arc of a clock face: fractions of a turn, clockwise from 12 o'clock."""
    return Wedge(center, r_outer, 90 - 360 * end_frac, 90 - 360 * start_frac, width=width, **style)


# --------------------------------------------------------------------------- 1: bandwidth


def _excerpts(run_s: float, longest_period_s: float) -> list[tuple[float, float, str]]:
    """Time ranges to show: the whole run if short, else its start and its end.

    Bursts of ~100 ms blur into a band over a minute-long run; start and end
    side by side show both the scheduled pattern and how it drifted.
    """
    span_s = min(run_s, max(2.0, 6 * longest_period_s))
    if run_s <= 2.5 * span_s:
        return [(0.0, run_s, "whole run")]
    end_start_s = math.floor((run_s - span_s) / BANDWIDTH_BIN_S) * BANDWIDTH_BIN_S
    return [(0.0, span_s, "start of run"), (end_start_s, run_s, "end of run")]


def _stacked_bins(rows: pd.DataFrame, jobs: list[str], t0_s: float, t1_s: float) -> tuple:
    """Bandwidth per job on a regular 10 ms grid (a bin with no row carried nothing)."""
    first, last = math.floor(t0_s / BANDWIDTH_BIN_S), math.ceil(t1_s / BANDWIDTH_BIN_S)
    bins = np.rint(rows["t_s"].to_numpy() / BANDWIDTH_BIN_S).astype(int)
    table = (rows.assign(bin=bins)
             .pivot_table(index="bin", columns="job", values="mbps", aggfunc="sum")
             .reindex(index=range(first, last + 1), columns=jobs)
             .fillna(0.0))
    return table.index.to_numpy() * BANDWIDTH_BIN_S, table.to_numpy().T


@_default_style
def draw_bandwidth(results: Results, path: Path) -> Path:
    """Shared-link bandwidth stacked by job, scheduled windows shaded, one row per policy."""
    title = "Shared-link bandwidth per job"
    bandwidth = results.link_bandwidth
    if bandwidth.empty:
        return _placeholder(path, title, "no link_bandwidth.csv rows in this results folder")
    jobs = job_order(results)
    colors = job_colors(jobs)
    panels = [(p, link) for p in policy_order(bandwidth["policy"].unique())
              for link in sorted(bandwidth["link"].unique())]
    run_s = float(bandwidth["t_s"].max()) + BANDWIDTH_BIN_S
    periods_ms = [j.period_ms for j in results.schedule.jobs] if results.schedule else []
    longest_period_s = max(periods_ms, default=0.0) / 1000
    excerpts = _excerpts(run_s, longest_period_s)
    link_mbps = link_rate_mbps(results)
    totals = bandwidth.groupby(["policy", "link", "t_s"])["mbps"].sum()
    ymax = 1.12 * max(float(totals.max()), float(link_mbps or 0))

    fig = Figure(figsize=(WIDTH_IN, 1.2 + 2.0 * len(panels)), layout="constrained")
    axes = fig.subplots(len(panels), len(excerpts), sharex="col", sharey=True, squeeze=False)
    for row, (policy, link) in enumerate(panels):
        rows = bandwidth[(bandwidth["policy"] == policy) & (bandwidth["link"] == link)]
        windows = results.windows[results.windows["policy"] == policy]
        for col, (t0_s, t1_s, label) in enumerate(excerpts):
            ax = axes[row][col]
            shown = windows[(windows["close_s"] > t0_s) & (windows["open_s"] < t1_s)]
            for window in shown.itertuples():
                ax.axvspan(window.open_s, window.close_s, color=colors.get(window.job, "0.5"),
                           alpha=0.18, linewidth=0, zorder=0)
            in_range = rows[(rows["t_s"] >= t0_s - BANDWIDTH_BIN_S) & (rows["t_s"] <= t1_s)]
            t_s, stacked_mbps = _stacked_bins(in_range, jobs, t0_s, t1_s)
            ax.stackplot(t_s, stacked_mbps, colors=[colors[j] for j in jobs], step="post",
                         linewidth=0, zorder=2)
            if link_mbps:
                ax.axhline(link_mbps, color="black", linestyle="--", linewidth=1, zorder=3)
            ax.set_xlim(t0_s, t1_s)
            ax.set_ylim(0, ymax)
            ax.set_title(f"{policy}  ·  link {link}  ·  {label}", fontsize=10, loc="left")
            if col == 0:
                ax.set_ylabel("Mbit/s")
            if row == len(panels) - 1:
                ax.set_xlabel("time since the policy's start (s)")
    handles = [Patch(color=colors[j], label=j) for j in jobs]
    handles.append(Patch(facecolor="0.5", alpha=0.25, label="scheduled window (shaded)"))
    if link_mbps:
        handles.append(Line2D([], [], color="black", linestyle="--",
                              label=f"link rate {link_mbps:g} Mbit/s"))
    fig.legend(handles=handles, loc="outside lower center", ncols=min(len(handles), 6),
               frameon=False)
    fig.suptitle(f"{title} on each shared link (10 ms bins)", fontsize=12)
    return _save(fig, path)


# --------------------------------------------------------------------------- 2: distributions


@_default_style
def draw_iteration_times(results: Results, path: Path) -> Path:
    """Iteration-time distribution per job and policy (box plots), solo and predicted marked."""
    title = "Iteration time per job and policy"
    iterations = results.iterations
    if iterations.empty:
        return _placeholder(path, title, "no iterations.csv rows in this results folder")
    iterations = iterations.assign(iteration_ms=(iterations["end"] - iterations["start"]) * 1000)
    jobs = [j for j in job_order(results) if j in set(iterations["job"])]
    colors = job_colors(job_order(results))
    policies = policy_order(iterations["policy"].unique())
    ncols = min(len(jobs), 3)
    nrows = math.ceil(len(jobs) / ncols)

    fig = Figure(figsize=(WIDTH_IN, 1.0 + 3.4 * nrows), layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False)
    for ax in axes.flat[len(jobs):]:
        ax.axis("off")
    for ax, job in zip(axes.flat, jobs, strict=False):
        mine = iterations[iterations["job"] == job]
        samples = [mine.loc[mine["policy"] == p, "iteration_ms"].dropna().to_numpy()
                   for p in policies]
        boxes = ax.boxplot(samples, positions=range(len(policies)), widths=0.6,
                           tick_labels=policies, patch_artist=True,
                           flierprops={"markersize": 2, "alpha": 0.5},
                           medianprops={"color": "black"})
        for box in boxes["boxes"]:
            box.set(facecolor=colors[job], alpha=0.45)
        solo_ms = _solo_ms(results, job)
        if solo_ms is not None:
            ax.axhline(solo_ms, color="0.35", linestyle="--", linewidth=1.2)
        predicted = [(i, results.summary.policies[p].jobs[job].predicted_iteration_ms)
                     for i, p in enumerate(policies)
                     if p in results.summary.policies and job in results.summary.policies[p].jobs]
        predicted = [(i, ms) for i, ms in predicted if ms is not None]
        if predicted:
            ax.scatter(*zip(*predicted, strict=True), marker="D", color="black", s=22,
                       zorder=3)
        ax.set_title(job)
        ax.set_ylabel("iteration time (ms)")
        ax.grid(axis="y", alpha=0.3)
    handles = [Line2D([], [], color="0.35", linestyle="--", label="solo (alone on the fabric)"),
               Line2D([], [], color="black", marker="D", linestyle="", label="predicted mean (fluid model)"),
               Patch(facecolor="0.7", label="measured: box = quartiles, line = median")]
    fig.legend(handles=handles, loc="outside lower center", ncols=3, frameon=False)
    fig.suptitle(title, fontsize=12)
    return _save(fig, path)


# --------------------------------------------------------------------------- 3: prediction


@_default_style
def draw_prediction(results: Results, path: Path) -> Path:
    """Predicted vs measured mean iteration time, side by side, with the % error."""
    title = "Predicted vs measured mean iteration time"
    summary = results.summary
    policies = policy_order(p for p, entry in summary.policies.items() if entry.jobs)
    if not policies:
        return _placeholder(path, title, "summary.json has no per-job results")
    all_jobs = job_order(results)
    colors = job_colors(all_jobs)
    bar_w = 0.38

    fig = Figure(figsize=(WIDTH_IN, 4.6), layout="constrained")
    axes = fig.subplots(1, len(policies), sharey=True, squeeze=False)[0]
    for ax, policy in zip(axes, policies, strict=True):
        entries = summary.policies[policy].jobs
        jobs = [j for j in all_jobs if j in entries]
        for i, job in enumerate(jobs):
            entry = entries[job]
            heights = [h for h in (entry.predicted_iteration_ms, entry.mean_iteration_ms) if h]
            if entry.predicted_iteration_ms is not None:
                ax.bar(i - bar_w / 2, entry.predicted_iteration_ms, bar_w, facecolor="white",
                       edgecolor=colors[job], hatch="///", linewidth=1.2)
            if entry.predicted_range_ms is not None:  # scenarios/experiment/prediction.py: predict_with_range
                low, high = entry.predicted_range_ms
                ax.plot([i - bar_w / 2] * 2, [low, high], color="black", linewidth=1.5 if entry.knife_edge else 0.8)
                heights.append(high)
            if entry.mean_iteration_ms is not None:
                ax.bar(i + bar_w / 2, entry.mean_iteration_ms, bar_w, color=colors[job])
            label = "n/a" if entry.error_pct is None else f"{entry.error_pct:+.1f} %"
            ax.annotate(label, (i, max(heights, default=0)), xytext=(0, 4),
                        textcoords="offset points", ha="center", fontsize=9)
        ax.set_xticks(range(len(jobs)), jobs)
        ax.set_xlim(-0.7, len(jobs) - 0.3)
        ax.set_title(policy)
        ax.grid(axis="y", alpha=0.3)
    axes[0].set_ylabel("mean iteration time (ms)")
    top = max((h for p in policies for e in summary.policies[p].jobs.values()
               for h in (e.predicted_iteration_ms, e.mean_iteration_ms, *(e.predicted_range_ms or ())) if h),
              default=1)
    axes[0].set_ylim(0, top * 1.15)
    handles = [Patch(facecolor="white", edgecolor="0.3", hatch="///", label="predicted (fluid model)"),
               Line2D([], [], color="black",
                      label="model range, busy starts costing 0 to twice their cost (thick: knife edge)"),
               Patch(facecolor="0.4", label="measured")]
    fig.legend(handles=handles, loc="outside lower center", ncols=3, frameon=False)
    fig.suptitle(f"{title}\nlabel = error = (measured − predicted) / predicted", fontsize=12)
    return _save(fig, path)


# --------------------------------------------------------------------------- 4: circles


Arcs = dict[str, list[tuple[float, float]]]  # per job, its busy arcs in its period: (start, length) ms


def busy_arcs_ms(results: Results) -> Arcs:
    """Each job's busy arcs in its period: a pattern job's from the plan's exact schedule
    (``pattern_plan.json``: its busy quanta, phases that touch merged), any other job's one burst at 0."""
    arcs = {job.name: [(0.0, job.comm_ms)] for job in results.schedule.jobs}
    path = Path(results.path) / PATTERN_PLAN
    if path.exists():
        for job in json.loads(path.read_text())["jobs"]:
            if job.get("busy_ms") and job["name"] in arcs:
                arcs[job["name"]] = [(float(a), float(n)) for a, n in job["busy_ms"]]
    return arcs


def busy_intervals(schedule: ScheduleRecord, arcs_ms: Arcs | None = None) -> dict[str, list[tuple[float, float]]]:
    """Each job's busy arcs within one hyper-period, as [start, end) in ms, wrapped at its end; ``arcs_ms``:
    each job's arcs in its period (:func:`busy_arcs_ms`; default: one burst of ``comm_ms`` at its start)."""
    hyper_ms = schedule.hyperperiod_ms
    busy = {}
    for job in schedule.jobs:
        spans = []
        for k in range(round(hyper_ms / job.period_ms)):
            origin_ms = window_start_ms(job.shift_ms, job.period_ms, k)
            for offset_ms, length_ms in (arcs_ms or {}).get(job.name, [(0.0, job.comm_ms)]):
                start = (origin_ms + offset_ms) % hyper_ms
                end = start + length_ms
                spans += [(start, hyper_ms), (0.0, end - hyper_ms)] if end > hyper_ms else [(start, end)]
        busy[job.name] = spans
    return busy


def overlap_intervals(busy: dict[str, list[tuple[float, float]]]) -> list[tuple[float, float]]:
    """Where two or more jobs are busy at once (a sweep over start/end events)."""
    events = sorted((t, delta) for spans in busy.values() for s, e in spans
                    for t, delta in ((s, 1), (e, -1)))  # at a tie, ends (-1) come first
    overlaps, active, opened = [], 0, 0.0
    for t, delta in events:
        if active < 2 <= active + delta:
            opened = t
        elif active >= 2 > active + delta and t > opened:
            overlaps.append((opened, t))
        active += delta
    return overlaps


def _draw_job_circles(ax, schedule: ScheduleRecord, colors: dict, arcs_ms: Arcs) -> None:
    radii = [job.period_ms / (2 * math.pi) for job in schedule.jobs]
    r_max = max(radii)
    ring = 0.14 * r_max
    x = 0.0
    for job, r in zip(schedule.jobs, radii, strict=True):
        x += r + 0.45 * r_max
        ax.add_patch(Circle((x, 0), r, fill=False, edgecolor="0.6", linewidth=1.2))
        for offset_ms, length_ms in arcs_ms[job.name]:
            start = (job.shift_ms + offset_ms) / job.period_ms
            ax.add_patch(_clock_wedge((x, 0), start, start + length_ms / job.period_ms,
                                      r + ring / 2, ring, color=colors[job.name]))
        ax.plot([x, x], [r - ring, r + ring], color="black", linewidth=1)
        ax.text(x, r + ring * 1.2, "0", ha="center", va="bottom", fontsize=8)
        ax.text(x, -r_max - 2.2 * ring,
                f"{job.name}\nT = {job.period_ms:g} ms\nc = {job.comm_ms:g} ms\n"
                f"shift = {job.shift_ms:g} ms", ha="center", va="top", fontsize=9)
        x += r
    ax.set_xlim(0, x + 0.45 * r_max)
    ax.set_ylim(-r_max - 9 * ring, r_max + 2.5 * ring)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title("Each job's period as a circle (perimeter = period), its bursts as arcs\n"
                 f"from its shift, clockwise from 0 at the top (quantum {schedule.quantum_ms:g} ms)",
                 fontsize=10)


def _draw_unified_circle(ax, schedule: ScheduleRecord, colors: dict, arcs_ms: Arcs) -> None:
    hyper_ms = schedule.hyperperiod_ms
    verdict = ("feasible: no two bursts ever overlap" if schedule.feasible else
               f"infeasible: {schedule.overlap_ms:g} ms pairwise overlap per hyper-period (red)")
    ax.set_title(f"Unified circle: one hyper-period = {hyper_ms:g} ms (LCM of the periods)\n"
                 f"{verdict}", fontsize=10)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_xlim(-1.45, 1.45)
    ax.set_ylim(-1.35, 1.35)
    n_arcs = sum(round(hyper_ms / job.period_ms) * len(arcs_ms[job.name]) for job in schedule.jobs)
    if n_arcs > MAX_UNIFIED_ARCS:
        ax.text(0, 0, f"{n_arcs} bursts per hyper-period:\ntoo many to draw legibly",
                ha="center", va="center", fontsize=11, color="0.3")
        return
    busy = busy_intervals(schedule, arcs_ms)
    step = min(0.14, 0.65 / len(schedule.jobs))
    for k, job in enumerate(schedule.jobs):
        r_outer = 1.0 - k * step
        ax.add_patch(Circle((0, 0), r_outer - 0.45 * step, fill=False, edgecolor="0.85",
                            linewidth=0.8))
        for start, end in busy[job.name]:
            ax.add_patch(_clock_wedge((0, 0), start / hyper_ms, end / hyper_ms, r_outer,
                                      0.85 * step, color=colors[job.name]))
    overlaps = overlap_intervals(busy)
    for start, end in overlaps:
        ax.add_patch(_clock_wedge((0, 0), start / hyper_ms, end / hyper_ms, 1.12, 0.06,
                                  color="red"))
    for quarter in range(4):
        angle = math.radians(90 - 90 * quarter)
        x, y = math.cos(angle), math.sin(angle)
        ax.plot([1.0 * x, 1.18 * x], [1.0 * y, 1.18 * y], color="black", linewidth=1)
        ax.text(1.22 * x, 1.22 * y, f"{quarter * hyper_ms / 4:g} ms", fontsize=8,
                ha="center" if quarter % 2 == 0 else ("left" if quarter == 1 else "right"),
                va="bottom" if quarter == 0 else ("top" if quarter == 2 else "center"))
    handles = [Patch(color=colors[j.name], label=j.name) for j in schedule.jobs]
    if overlaps:
        handles.append(Patch(color="red", label="overlap"))
    ax.legend(handles=handles, loc="center", fontsize=9, frameon=False,
              title="outer to inner ring", title_fontsize=8)


@_default_style
def draw_schedule_circles(results: Results, path: Path) -> Path:
    """The schedule as CASSINI-style circles: one per job, and the hyper-period's."""
    schedule = results.schedule
    if schedule is None or not schedule.jobs:
        return _placeholder(path, "The schedule as circles", "no schedule.json in this results folder")
    colors = job_colors(job_order(results))
    fig = Figure(figsize=(WIDTH_IN, 5.8), layout="constrained")
    ax_jobs, ax_unified = fig.subplots(1, 2, width_ratios=[1.35, 1])
    arcs_ms = busy_arcs_ms(results)
    _draw_job_circles(ax_jobs, schedule, colors, arcs_ms)
    _draw_unified_circle(ax_unified, schedule, colors, arcs_ms)
    return _save(fig, path)


def draw_all(results: Results, plots_dir: Path) -> list[Path]:
    """Every figure of the report, in the order the report shows them."""
    plots_dir = Path(plots_dir)
    plots_dir.mkdir(exist_ok=True)
    return [
        draw_bandwidth(results, plots_dir / BANDWIDTH_PNG),
        draw_iteration_times(results, plots_dir / ITERATION_TIMES_PNG),
        draw_prediction(results, plots_dir / PREDICTION_PNG),
        draw_schedule_circles(results, plots_dir / SCHEDULE_PNG),
    ]
