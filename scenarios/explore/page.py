"""The explorer's page (a Bokeh server document): the controls, and the views of each answer.

Every change of a control asks for an answer; answers are computed one at a
time off the page's thread (:data:`WORKER`, shared by every open page, so
the server does one model's work at a time and keeps serving), and only the
newest values are computed when several changes came in meanwhile. An answer
that is still not back after :data:`SLOW_S` says so on the page.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path

import pandas as pd
from bokeh.layouts import column, gridplot, row
from bokeh.models import (
    Button,
    CheckboxGroup,
    Div,
    InlineStyleSheet,
    RadioButtonGroup,
    Range1d,
    Slider,
    TextInput,
)

from controller.theory.policies import POLICIES
from scenarios.errors import InputError
from scenarios.explore import answer as answers
from scenarios.explore import clocks, inputs, save, view
from scenarios.report import timeline

WORKER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="explore")
SLOW_S = 2.0
STYLE_CSS = """
:host { font-family: system-ui, sans-serif; font-size: 0.92rem; line-height: 1.45; }
table { border-collapse: collapse; margin: 0.3rem 0; } th, td { border: 1px solid #ccc; padding: 0.15rem 0.45rem; }
th { background: #f2f2f2; text-align: left; } td.num { text-align: right; white-space: nowrap; }
.ok { color: #1e7e34; font-weight: 600; } .bad { color: #c0392b; font-weight: 600; }
.note { color: #555; } .err { color: #c0392b; } code { background: #f4f4f4; padding: 0 0.2rem; }
h2 { font-size: 1.05rem; margin: 0.8rem 0 0.2rem; border-bottom: 1px solid #ccc; }
"""
BURST_COLUMNS = ["policy", "link", "job", "start_s", "end_s", "megabytes"]
WINDOW_COLUMNS = ["policy", "job", "open_s", "close_s"]


def _div(style: InlineStyleSheet, text: str = "", name: str | None = None, **kwargs) -> Div:
    """A block of the page's HTML in its style (a style sheet belongs to one page's document)."""
    return Div(text=text, name=name, stylesheets=[style], sizing_mode="stretch_width", **kwargs)


class Control:
    """A slider and an exact number box for one value, with a message beside them (``name``: the box's key)."""

    def __init__(self, label: str, name: str, value: float, start: float, end: float, step: float, changed,
                 style: InlineStyleSheet):
        self.name, self.changed, self._syncing = name, changed, False
        self.slider = Slider(title=label, start=start, end=max(end, value), step=step, value=value,
                             name=f"slider|{name}", width=230, css_classes=[f"slider-{name.replace('/', '-')}"])
        self.box = TextInput(value=_text(value), name=f"box|{name}", width=90)
        self.message = Div(text="", name=f"message|{name}", stylesheets=[style], width=320)
        self.slider.on_change("value", self._slid)
        self.box.on_change("value", self._typed)
        self.layout = column(row(self.slider, self.box), self.message)

    def _slid(self, attr, old, new):
        if self._syncing:
            return
        self._syncing = True
        self.box.value = _text(new)
        self._syncing = False
        self.changed()

    def _typed(self, attr, old, new):
        if self._syncing:
            return
        try:
            value = inputs.number(new, self.slider.title)
        except ValueError:
            self.changed()  # the answer puts the message beside the box
            return
        if self.slider.start <= value <= self.slider.end:
            self._syncing = True
            self.slider.value = value
            self._syncing = False
        self.changed()

    def value(self) -> float:
        return inputs.number(self.box.value, self.slider.title)

    def set(self, value: float) -> None:
        self._syncing = True
        self.slider.end = max(self.slider.end, value)
        self.slider.value, self.box.value = value, _text(value)
        self._syncing = False


class Explorer:
    """One open page."""

    def __init__(self, doc, start: inputs.Start, root: Path):
        self.doc, self.start, self.root = doc, start, root
        first = start.edits()
        self.names = [j.name for j in first.jobs]
        while len(self.names) < inputs.MAX_JOBS:
            self.names.append(inputs.new_job(tuple(inputs.JobEdit(n, 0, 0) for n in self.names)).name)
        self.wanted = self.shown = 0
        self.busy = False
        self.panels_key = None
        self.sources: dict[str, object] = {}
        self._build(first)
        self.request()

    # ------------------------------------------------------------------ layout

    def _build(self, first: inputs.Edits) -> None:
        ask, style = self.request, InlineStyleSheet(css=STYLE_CSS)
        self.style = style
        self.count = RadioButtonGroup(labels=[str(n) for n in range(inputs.MIN_JOBS, inputs.MAX_JOBS + 1)],
                                      active=len(first.jobs) - inputs.MIN_JOBS, name="jobs")
        self.count.on_change("active", lambda attr, old, new: self._count_changed())
        self.rows, self.controls = [], {}
        for k, name in enumerate(self.names):
            job = first.jobs[k] if k < len(first.jobs) else inputs.new_job(first.jobs)
            period = Control("period (ms)", f"period/{k}", job.period_ms, 10, 2000, 1, ask, style)
            comm = Control("burst (ms)", f"comm/{k}", job.comm_ms, 1, 1000, 1, ask, style)
            jitter = Control("jitter (ms)", f"jitter/{k}", job.jitter_ms, 0, 50, 1, ask, style)
            self.controls.update({c.name: c for c in (period, comm, jitter)})
            self.rows.append(column(_div(style, f"<h2>{name}</h2>"), period.layout, comm.layout, jitter.layout,
                                    visible=k < len(first.jobs)))
        self.quantum = Control("quantum (ms)", "quantum", first.quantum_ms, 1, 100, 1, ask, style)
        link = first.link_mbps
        self.link = Control("shared link (Mbit/s)", "link", link or 0, 1, 1000, 1, ask, style)
        self.link.slider.disabled = self.link.box.disabled = link is None
        if link is None:
            self.link.message.text = "<span class='note'>no fabric: every burst alone fills the one link</span>"
        self.controls.update({"quantum": self.quantum, "link": self.link})
        self.policy_names = list(POLICIES)  # the built-in ones and any the scenario's policy files registered
        self.policies = CheckboxGroup(labels=self.policy_names, name="policies", inline=True,
                                      active=[self.policy_names.index(p) for p in first.policies])
        self.policies.on_change("active", lambda attr, old, new: ask())
        self.policies_message = Div(text="", stylesheets=[style], name="message|policies")
        self.save_path = TextInput(value=f"{Path(self.start.path).stem}-explored.yaml", name="save-path", width=230)
        self.save_button = Button(label="save as scenario", name="save", button_type="primary", width=150,
                                  css_classes=["save-button"])
        self.save_button.on_click(self._save)
        self.save_message = _div(style, name="message|save")
        self.general = _div(style, name="message|general")
        controls = column(_div(style, f"<b>Scenario</b> {view.html.escape(self.start.path)} — <b>jobs</b>"), self.count, *self.rows,
                          _div(style, "<h2>schedule and link</h2>"), self.quantum.layout, self.link.layout,
                          _div(style, "<h2>policies shown</h2>"), self.policies, self.policies_message,
                          _div(style, "<h2>save as scenario</h2><span class='note'>in the folder the explorer was "
                               f"started in ({view.html.escape(str(self.root))})</span>"),
                          row(self.save_path, self.save_button), self.save_message, width=440)
        self.status = _div(style, name="status")
        self.feasibility = _div(style, name="feasibility")
        self.gains = _div(style, name="gains")
        self.where = _div(style, name="where")
        self.clock_fig = clocks.clock_figure(clocks.empty(), "")
        self.clock_sources = {name: self.clock_fig.select_one({"name": f"clocks|{name}"}) for name in clocks.SOURCES}
        self.timeline = column(_div(style, "<p class='note'>computing...</p>"), sizing_mode="stretch_width",
                               name="timeline-holder")
        views = column(self.status, self.general, _div(style, "<h2>Can the bursts be kept apart?</h2>"), self.feasibility,
                       _div(style, "<h2>The schedule as clocks</h2>"), self.clock_fig,
                       _div(style, "<h2>Predicted iteration times and gains</h2>"), self.gains,
                       _div(style, "<h2>The shared link under each policy (fluid model)</h2><span class='note'>Pale: the "
                            "windows a policy holds or aligns a job to; solid: the job's data on the link; black: "
                            "two or more bursts on one link at once (they meet).</span>"), self.timeline,
                       _div(style, "<h2>Where this point lies on the map</h2>"), self.where,
                       sizing_mode="stretch_width")
        self.doc.title = "shiftbed explore"
        self.doc.add_root(row(controls, views, sizing_mode="stretch_width"))

    # ------------------------------------------------------------------ inputs

    def _count_changed(self) -> None:
        n = self.count.active + inputs.MIN_JOBS
        for k, r in enumerate(self.rows):
            r.visible = k < n
        self.request()

    def edits(self) -> tuple[inputs.Edits | None, dict[str, str]]:
        """The controls' values, or a message per box that holds no number."""
        n = self.count.active + inputs.MIN_JOBS
        problems, values = {}, {}
        for key, control in self.controls.items():
            if key.count("/") and int(key.split("/")[1]) >= n or (key == "link" and control.box.disabled):
                continue
            try:
                values[key] = control.value()
            except ValueError as exc:
                problems[key] = str(exc)
        if problems:
            return None, problems
        jobs = tuple(inputs.JobEdit(self.names[k], values[f"period/{k}"], values[f"comm/{k}"], values[f"jitter/{k}"])
                     for k in range(n))
        chosen = tuple(self.policy_names[i] for i in sorted(self.policies.active))
        return inputs.Edits(jobs, values["quantum"], values.get("link"), chosen), {}

    # ------------------------------------------------------------------ answers

    def request(self) -> None:
        self.wanted += 1
        if not self.busy:
            self._submit()

    def _submit(self) -> None:
        generation = self.wanted
        edits, problems = self.edits()
        if edits is None:
            self._show(generation, view.View(problems=problems, status="<p class='bad'>Not computed: a box holds "
                                                                     "no number; the message is beside it.</p>"))
            return
        self.busy = True
        began = time.perf_counter()
        future = WORKER.submit(_compute, self.start, edits, self.save_path.value)
        future.add_done_callback(lambda f: self.doc.add_next_tick_callback(partial(self._done, generation, f, began)))
        self.doc.add_timeout_callback(partial(self._slow, generation), int(1000 * SLOW_S))

    def _done(self, generation: int, future, began: float) -> None:
        self.busy = False
        try:
            shown = future.result()
        except Exception as exc:  # a fault in the model: said on the page, the server goes on
            shown = view.View(status=f"<p class='bad'>Not computed: {type(exc).__name__}: {exc}</p>")
        if generation == self.wanted:
            self._show(generation, shown)
        else:
            self._submit()  # newer values came in meanwhile: answer those

    def _slow(self, generation: int) -> None:
        if self.shown < generation and self.busy:
            self.status.text = (f"<p class='bad'>Still computing after {SLOW_S:g} s: this point is beyond what the "
                                "explorer answers at once; its answer will show when it is done.</p>")

    def _show(self, generation: int, shown: view.View) -> None:
        self.shown = generation
        for key, control in self.controls.items():
            if not (key == "link" and control.box.disabled):
                control.message.text = _message(shown.problems.get(key))
        self.policies_message.text = _message(shown.problems.get("policies"))
        self.general.text = _message(shown.problems.get(inputs.GENERAL))
        self.status.text = shown.status
        if not shown.jobs:
            return
        self.feasibility.text, self.gains.text, self.where.text = shown.feasibility, shown.gains, shown.where
        for name in clocks.SOURCES:
            self.clock_sources[name].data = shown.clocks[name]
        self.clock_fig.title.text = shown.clocks_title
        self._lanes(shown)

    def _lanes(self, shown: view.View) -> None:
        key = (tuple(shown.policies), tuple(shown.jobs), shown.link)
        if key != self.panels_key:
            self.panels_key = key
            self.x_range = Range1d(0.0, shown.drawn_s, bounds=(0.0, shown.drawn_s))
            colors = dict.fromkeys([*shown.jobs, view.MEETINGS], "#000000")
            empty_bursts, empty_windows = pd.DataFrame(columns=BURST_COLUMNS), pd.DataFrame(columns=WINDOW_COLUMNS)
            figures = []
            for policy in shown.policies:
                fig = timeline.lanes(policy, shown.link, [*shown.jobs, view.MEETINGS], empty_bursts, empty_windows,
                                     colors, self.x_range, 90)
                fig.xaxis.visible = True
                figures.append([fig])
            grid = gridplot(figures, merge_tools=True, toolbar_location="above", sizing_mode="stretch_width")
            grid.toolbar.logo = None
            self.timeline.children = [grid]
            self.lane_sources = {policy: tuple(grid.select_one({"name": f"{kind}|{policy}|{shown.link}"}).data_source
                                               for kind in ("windows", "bursts")) for policy in shown.policies}
        self.x_range.update(end=shown.drawn_s, bounds=(0.0, shown.drawn_s))
        for policy, columns in shown.lanes.items():
            for source, data in zip(self.lane_sources[policy], columns, strict=True):
                source.data = data

    # ------------------------------------------------------------------ save

    def _save(self) -> None:
        edits, problems = self.edits()
        if edits is None:
            self.save_message.text = _message("a box holds no number: nothing saved")
            return
        try:
            path = save.save(self.start, edits, self.save_path.value, self.root)
        except (ValueError, InputError) as exc:
            self.save_message.text = _message(str(exc).removeprefix(f"{self.start.path}: "))
            return
        shown = path.relative_to(self.root.resolve())
        self.save_message.text = (f"<p class='ok' data-saved='{shown}'>saved {shown}</p><p class='note'>"
                                  f"<code>shiftbed plan {shown}</code>, <code>sudo shiftbed run {shown}</code></p>")


def _compute(start: inputs.Start, edits: inputs.Edits, save_path: str) -> view.View:
    """What the worker does for one set of values: the answer, and what the page shows of it."""
    return view.view(answers.answer(start, edits), save_path)


def _message(text: str | None) -> str:
    return "" if not text else f"<span class='err'>{view.html.escape(text)}</span>"


def _text(value: float) -> str:
    return f"{value:.10g}"


def document(doc, start: inputs.Start, root: Path) -> None:
    """The Bokeh application's handler: one :class:`Explorer` per open page."""
    Explorer(doc, start, root)
