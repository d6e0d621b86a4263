"""report.html's timeline: every captured link under every policy, zoomable (Bokeh).

For each policy and each link the capture saw, one panel: a lane per job
with its scheduled windows (pale, from ``windows.csv``) and the bursts the
capture saw on that link (solid, from ``link_bandwidth.csv``), and beneath
them the link's bandwidth stacked by job, with the link's rate dashed. All
panels share one time axis, so zooming or panning one moves them all and
the policies can be compared at the same moment of their runs.

Bokeh rather than a picture: a run of 20 s holds ~60 bursts per job, which
only a zoomable axis shows one by one (docs/report.md says why Bokeh). The
glyph renderers are named ``bursts|<policy>|<link>`` and
``windows|<policy>|<link>``, so a test can count them in the page.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from bokeh.layouts import gridplot
from bokeh.models import ColumnDataSource, FactorRange, HoverTool, Range1d, Span

from scenarios.report import plots
from scenarios.results import BANDWIDTH_BIN_S, Results

# A job's data on a link with quiet gaps shorter than this is one burst: shorter than any shipped
# job's compute phase (100 ms or more), longer than the bins a burst's flows leave empty as they start.
BURST_GAP_S = 0.05
# The bandwidth series of the whole page is kept under this many points (each a step's corner); above
# it the bins are merged, k at a time (the page says so), to keep the file a few MB.
MAX_BANDWIDTH_POINTS = 250_000
LANES_PX, LANE_PX, BANDWIDTH_PX = 50, 26, 150
OPENING_VIEW_PERIODS = 6  # the view opens on this many of the longest period (at least 2 s)
TOOLS = "xpan,xbox_zoom,xwheel_zoom,xzoom_in,xzoom_out,reset,save"


def link_bursts(bandwidth: pd.DataFrame) -> pd.DataFrame:
    """Each job's bursts on each link under each policy, as the capture saw them.

    A burst is a run of the job's 10-ms bins with data on the link, quiet
    gaps under :data:`BURST_GAP_S` included. Columns: policy, link, job,
    start_s, end_s (the end of its last bin), megabytes.
    """
    columns = ["policy", "link", "job", "start_s", "end_s", "megabytes"]
    rows = bandwidth[bandwidth["mbps"] > 0]
    if rows.empty:
        return pd.DataFrame({c: pd.Series(dtype=object if c in columns[:3] else float) for c in columns})
    rows = rows.sort_values(["policy", "link", "job", "t_s"])
    keys = ["policy", "link", "job"]
    same_series = (rows[keys] == rows[keys].shift()).all(axis=1)
    gap_s = rows["t_s"].diff()
    new_burst = ~same_series | (gap_s > BANDWIDTH_BIN_S + BURST_GAP_S - 1e-9)
    rows = rows.assign(burst=new_burst.cumsum(), megabits=rows["mbps"] * BANDWIDTH_BIN_S)
    bursts = rows.groupby("burst").agg(policy=("policy", "first"), link=("link", "first"), job=("job", "first"),
                                       start_s=("t_s", "min"), end_s=("t_s", "max"), megabits=("megabits", "sum"))
    bursts["end_s"] += BANDWIDTH_BIN_S
    bursts["megabytes"] = bursts.pop("megabits") / 8
    return bursts.reset_index(drop=True)[columns]


def panels(results: Results) -> list[tuple[str, str, list[str]]]:
    """(policy, link, jobs on it) for every policy and every link with captured rows, in report order."""
    bandwidth = results.link_bandwidth
    jobs = plots.job_order(results)
    out = []
    for policy in plots.policy_order(bandwidth["policy"].unique()):
        for link in sorted(bandwidth.loc[bandwidth["policy"] == policy, "link"].unique()):
            meeting = results.summary.links.get(link, {}).get("jobs") or []
            seen = set(bandwidth.loc[bandwidth["link"] == link, "job"])
            out.append((policy, link, [j for j in jobs if j in seen or j in meeting]))
    return out


def merge_factor(bins_per_panel: list[int], jobs_per_panel: list[int]) -> int:
    """How many 10-ms bins to merge into one so the page's bandwidth stays under :data:`MAX_BANDWIDTH_POINTS`."""
    points = sum(2 * n * (j + 1) for n, j in zip(bins_per_panel, jobs_per_panel, strict=True))
    return max(1, math.ceil(points / MAX_BANDWIDTH_POINTS))


def _run_s(results: Results) -> float:
    ends = [results.link_bandwidth["t_s"].max() + BANDWIDTH_BIN_S, results.windows["close_s"].max()]
    return float(max((e for e in ends if pd.notna(e)), default=1.0))


def _stacked_steps(rows: pd.DataFrame, jobs: list[str], run_s: float, merge: int) -> dict[str, np.ndarray]:
    """Step-shaped x and one y per job (``j0``, ``j1``, ...) of the link's bandwidth, ``merge`` bins per step."""
    step_s = BANDWIDTH_BIN_S * merge
    steps = math.ceil(run_s / step_s)
    index = np.floor(rows["t_s"].to_numpy() / step_s + 1e-6).astype(int)
    table = (rows.assign(step=index).pivot_table(index="step", columns="job", values="mbps", aggfunc="sum")
             .reindex(index=range(steps), columns=jobs).fillna(0.0) / merge)
    edges = np.arange(steps + 1) * step_s
    data = {"x": np.repeat(edges, 2)[1:-1].astype(np.float32)}
    for i, job in enumerate(jobs):
        data[f"j{i}"] = np.repeat(table[job].to_numpy(), 2).astype(np.float32)
    return data


def lanes_data(policy: str, link: str, jobs: list[str], bursts: pd.DataFrame, windows: pd.DataFrame,
               colors: dict[str, str]) -> tuple[dict, dict]:
    """The columns of one panel's lanes: ``jobs``' windows under ``policy`` and their bursts on ``link``
    (:func:`lanes` draws them; ``shiftbed explore`` puts new ones into the same panel)."""
    shown = windows[(windows["policy"] == policy) & windows["job"].isin(jobs)]
    windows_data = {"job": shown["job"].astype(str).tolist(), "left": shown["open_s"].to_numpy(),
                    "right": shown["close_s"].to_numpy(), "color": [colors[j] for j in shown["job"]]}
    mine = bursts[(bursts["policy"] == policy) & (bursts["link"] == link)]
    bursts_data = {"job": mine["job"].astype(str).tolist(), "left": mine["start_s"].to_numpy(),
                   "right": mine["end_s"].to_numpy(), "ms": ((mine["end_s"] - mine["start_s"]) * 1000).to_numpy(),
                   "megabytes": mine["megabytes"].to_numpy(), "color": [colors[j] for j in mine["job"]]}
    return windows_data, bursts_data


def lanes(policy: str, link: str, jobs: list[str], bursts: pd.DataFrame, windows: pd.DataFrame,
          colors: dict[str, str], x_range: Range1d, border_px: int):
    """The windows and bursts of ``jobs`` on ``link`` under ``policy``, a lane per job."""
    from bokeh.plotting import figure

    fig = figure(title=f"{policy}  ·  link {link}", y_range=FactorRange(*reversed(jobs)), x_range=x_range,
                 height=LANES_PX + LANE_PX * len(jobs), sizing_mode="stretch_width", tools=TOOLS,
                 active_drag="xpan", active_scroll=None, toolbar_location=None, min_border_left=border_px)
    windows_data, bursts_data = lanes_data(policy, link, jobs, bursts, windows, colors)
    fig.hbar(y="job", left="left", right="right", height=0.9, color="color", alpha=0.22,
             source=ColumnDataSource(windows_data), name=f"windows|{policy}|{link}")
    glyphs = fig.hbar(y="job", left="left", right="right", height=0.5, color="color",
                      source=ColumnDataSource(bursts_data), name=f"bursts|{policy}|{link}")
    fig.add_tools(HoverTool(renderers=[glyphs], tooltips=[
        ("job", "@job"), ("burst", "@left{0.000} s to @right{0.000} s"), ("length", "@ms{0} ms"),
        ("data", "@megabytes{0.00} MB")]))
    fig.xaxis.visible = False
    fig.ygrid.grid_line_color = None
    return fig


def _bandwidth(policy: str, link: str, jobs: list[str], steps: dict[str, np.ndarray], colors: dict[str, str],
               link_mbps: float | None, y_top: float, x_range: Range1d, border_px: int):
    """The link's bandwidth under ``policy``, stacked by job."""
    from bokeh.plotting import figure

    fig = figure(x_range=x_range, y_range=Range1d(0, y_top), height=BANDWIDTH_PX, sizing_mode="stretch_width",
                 tools=TOOLS, active_drag="xpan", active_scroll=None, toolbar_location=None,
                 min_border_left=border_px, x_axis_label=f"time since {policy} started (s)", y_axis_label="Mbit/s")
    stackers = [f"j{i}" for i in range(len(jobs))]
    if stackers:
        fig.varea_stack(stackers=stackers, x="x", color=[colors[j] for j in jobs], alpha=0.8,
                        source=ColumnDataSource(steps), name=f"bandwidth|{policy}|{link}")  # colours: the lanes'
    if link_mbps:
        fig.add_layout(Span(location=link_mbps, dimension="width", line_dash="dashed", line_color="black"))
    return fig


def timeline(results: Results):
    """The Bokeh layout of every panel (None when the run captured no bandwidth), and the number of
    10-ms bins merged into each step of the bandwidth (1: as captured)."""
    bandwidth = results.link_bandwidth
    if bandwidth.empty:
        return None, 1
    jobs = plots.job_order(results)
    colors = {job: hex_color(rgb) for job, rgb in plots.job_colors(jobs).items()}
    layout = panels(results)
    run_s = _run_s(results)
    bins = math.ceil(run_s / BANDWIDTH_BIN_S)
    merge = merge_factor([bins] * len(layout), [len(j) for _, _, j in layout])
    longest_s = max((j.period_ms for j in results.schedule.jobs), default=0.0) / 1000 if results.schedule else 0.0
    opening_s = min(run_s, max(2.0, OPENING_VIEW_PERIODS * longest_s))
    x_range = Range1d(0.0, opening_s, bounds=(0.0, run_s))
    bursts = link_bursts(bandwidth)
    link_mbps = plots.link_rate_mbps(results)
    totals = bandwidth.groupby(["policy", "link", "t_s"])["mbps"].sum()
    y_top = 1.15 * max(float(totals.max()), float(link_mbps or 0.0))
    border_px = 30 + 8 * max(6, *(len(j) for j in jobs))  # the lanes' job names, the bandwidth's ticks: one left edge
    figures = []
    for policy, link, on_link in layout:
        rows = bandwidth[(bandwidth["policy"] == policy) & (bandwidth["link"] == link)]
        steps = _stacked_steps(rows, on_link, run_s, merge)
        figures += [[lanes(policy, link, on_link, bursts, results.windows, colors, x_range, border_px)],
                    [_bandwidth(policy, link, on_link, steps, colors, link_mbps, y_top, x_range, border_px)]]
    grid = gridplot(figures, merge_tools=True, toolbar_location="above", sizing_mode="stretch_width")
    grid.name = "timeline"
    grid.toolbar.logo = None
    return grid, merge


def hex_color(rgb: tuple) -> str:
    """A matplotlib colour as Bokeh takes it: ``#rrggbb``."""
    return "#" + "".join(f"{round(255 * c):02x}" for c in rgb[:3])
