"""The report's schedule clocks (``scenarios/report/plots.py``, "circles"), drawn by the browser.

The same picture and the same geometry: each job's period a circle (its
perimeter the period), its burst an arc at its shift, clockwise from 0 at the
top; beside them one hyper-period with every job's bursts on a ring of its
own (``plots.busy_intervals``) and the overlaps in red
(``plots.overlap_intervals``). The report draws it with matplotlib, which
takes seconds where a hyper-period holds a thousand bursts; here the server
sends the arcs as numbers and Bokeh draws them, so the page keeps up with a
slider. :func:`clock_data` gives the columns, :func:`clock_figure` the figure.
"""

from __future__ import annotations

import math

import numpy as np
from bokeh.models import ColumnDataSource
from bokeh.plotting import figure

from scenarios.report import plots
from scenarios.schedule_record import ScheduleRecord

COLUMNS = {"circles": ("x", "y", "r"), "arcs": ("x", "y", "inner", "outer", "start", "end", "color"),
           "labels": ("x", "y", "text"), "rings": ("x", "y", "r"),
           "ring_arcs": ("x", "y", "inner", "outer", "start", "end", "color"), "overlaps": ("x", "y", "start", "end"),
           "ticks": ("x", "y", "text")}
SOURCES = tuple(COLUMNS)
UNIFIED_X = 0.0  # the hyper-period's circle is centred here, radius 1; the jobs' circles left of it
RING = 0.14  # the jobs' arcs' width, in radii of the largest job circle
OVERLAP_COLOR = "red"


def _angle(frac: float) -> float:
    """A fraction of a turn clockwise from 12 o'clock, as Bokeh's angle (radians anticlockwise from 3 o'clock)."""
    return math.pi / 2 - 2 * math.pi * frac


def clock_data(schedule: ScheduleRecord, colors: dict[str, str]) -> tuple[dict[str, dict], str]:
    """The figure's columns for ``schedule`` (one dict per name in :data:`SOURCES`) and its title."""
    jobs = list(schedule.jobs)
    r_max = max(j.period_ms for j in jobs)
    radii = [j.period_ms / r_max for j in jobs]
    out = {name: {} for name in SOURCES}
    x, xs = UNIFIED_X - 1.6, []
    for r in reversed(radii):  # right to left, so the first job is leftmost
        x -= r
        xs.append(x)
        x -= r + 0.45
    xs.reverse()
    out["circles"] = {"x": xs, "y": [0.0] * len(jobs), "r": radii}
    starts = [j.shift_ms / j.period_ms for j in jobs]
    ends = [s + j.comm_ms / j.period_ms for s, j in zip(starts, jobs, strict=True)]
    out["arcs"] = {"x": xs, "y": [0.0] * len(jobs), "inner": [r - RING / 2 for r in radii],
                   "outer": [r + RING / 2 for r in radii], "start": [_angle(s) for s in starts],
                   "end": [_angle(e) for e in ends], "color": [colors[j.name] for j in jobs]}
    out["labels"] = {"x": xs, "y": [-1.0 - 2.5 * RING] * len(jobs),
                     "text": [f"{j.name}\nT = {j.period_ms:g} ms\nc = {j.comm_ms:g} ms\nshift = {j.shift_ms:g} ms"
                              for j in jobs]}
    hyper_ms = schedule.hyperperiod_ms
    step = min(0.14, 0.65 / len(jobs))
    n_arcs = sum(round(hyper_ms / j.period_ms) for j in jobs)
    ring = {"x": [], "inner": [], "outer": [], "start": [], "end": [], "color": []}
    overlaps = {"x": [], "start": [], "end": []}
    if n_arcs <= plots.MAX_UNIFIED_ARCS:
        busy = plots.busy_intervals(schedule)
        for k, job in enumerate(jobs):
            outer = 1.0 - k * step
            for a, b in busy[job.name]:
                ring["x"].append(UNIFIED_X)
                ring["inner"].append(outer - 0.85 * step)
                ring["outer"].append(outer)
                ring["start"].append(_angle(a / hyper_ms))
                ring["end"].append(_angle(b / hyper_ms))
                ring["color"].append(colors[job.name])
        for a, b in plots.overlap_intervals(busy):
            overlaps["x"].append(UNIFIED_X)
            overlaps["start"].append(_angle(a / hyper_ms))
            overlaps["end"].append(_angle(b / hyper_ms))
    out["rings"] = {"x": [UNIFIED_X] * len(jobs), "y": [0.0] * len(jobs),
                    "r": [1.0 - k * step - 0.45 * step for k in range(len(jobs))]}
    out["ring_arcs"] = {**ring, "y": [0.0] * len(ring["x"])}
    out["overlaps"] = {**overlaps, "y": [0.0] * len(overlaps["x"])}
    quarters = range(4)
    out["ticks"] = {"x": [UNIFIED_X + 1.25 * math.cos(_angle(q / 4)) for q in quarters],
                    "y": [1.25 * math.sin(_angle(q / 4)) for q in quarters],
                    "text": [f"{q * hyper_ms / 4:g} ms" for q in quarters]}
    verdict = ("feasible: no two bursts ever overlap" if schedule.feasible else
               f"infeasible: {schedule.overlap_ms:g} ms pairwise overlap per hyper-period (red)")
    too_many = "" if n_arcs <= plots.MAX_UNIFIED_ARCS else f"; {n_arcs} bursts per hyper-period: too many to draw"
    out = {name: columns_for_bokeh(columns) for name, columns in out.items()}
    title = (f"Each job's period as a circle, its burst as an arc at its shift (clockwise from 0 at the top); "
             f"right: one hyper-period = {hyper_ms:,g} ms, {verdict}{too_many}")
    return out, title


def columns_for_bokeh(columns: dict) -> dict:
    """Numbers as arrays (Bokeh takes an array whole, a list item by item), text as lists (Bokeh's colours
    and labels are lists of strings)."""
    out = {}
    for name, values in columns.items():
        array = np.asarray(values)
        out[name] = array if len(array) and array.dtype.kind in "fiub" else [str(v) for v in values]
    return out


def empty() -> dict[str, dict]:
    """Columns with nothing in them (the page's figure before its first answer)."""
    return {name: {c: [] for c in columns} for name, columns in COLUMNS.items()}


def clock_figure(data: dict[str, dict], title: str):
    """The figure, drawn from :func:`clock_data`'s columns (the page puts new ones into the same sources)."""
    fig = figure(title=title, height=340, sizing_mode="stretch_width", match_aspect=True, tools="",
                 toolbar_location=None, name="clocks")
    fig.axis.visible = False
    fig.grid.visible = False
    fig.outline_line_color = None
    src = {name: ColumnDataSource(data[name], name=f"clocks|{name}") for name in SOURCES}
    fig.circle(x="x", y="y", radius="r", fill_color=None, line_color="#999999", source=src["circles"])
    fig.annular_wedge(x="x", y="y", inner_radius="inner", outer_radius="outer", start_angle="start",
                      end_angle="end", direction="clock", color="color", source=src["arcs"])
    fig.text(x="x", y="y", text="text", text_align="center", text_baseline="top", text_font_size="9pt",
             source=src["labels"])
    fig.circle(x="x", y="y", radius="r", fill_color=None, line_color="#dddddd", source=src["rings"])
    fig.annular_wedge(x="x", y="y", inner_radius="inner", outer_radius="outer", start_angle="start",
                      end_angle="end", direction="clock", color="color", source=src["ring_arcs"])
    fig.annular_wedge(x="x", y="y", inner_radius=1.06, outer_radius=1.12, start_angle="start", end_angle="end",
                      direction="clock", color=OVERLAP_COLOR, source=src["overlaps"])
    fig.text(x="x", y="y", text="text", text_align="center", text_baseline="middle", text_font_size="8pt",
             source=src["ticks"])
    return fig

