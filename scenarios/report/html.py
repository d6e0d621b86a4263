"""report.html: the run's report as one page a browser opens without a network.

Everything is inside the file: Bokeh's JavaScript inline, the zoomable
timeline (``timeline.py``), the figures as inline PNGs, the tables. It says
what report.md says, for a reader who has not read the docs: each prediction
says what it was made from (:func:`prediction_kind`), and the fidelity and
the together-or-apart story are told in words. The words about the run's
figures live in ``story.py``; this module lays out the page.
"""

from __future__ import annotations

import base64
import html
import re
from pathlib import Path

from bokeh.embed import file_html
from bokeh.resources import INLINE

from scenarios.analysis.verdict import folder_changes, verdict_word
from scenarios.files import atomic_write_bytes
from scenarios.report import plots, story
from scenarios.report.document import measured_cell, predicted_change_pct, verdicts
from scenarios.report.timeline import BURST_GAP_S, timeline
from scenarios.results import BANDWIDTH_BIN_S, REPORT_HTML_FILE, Results
from scenarios.timescale import stated

FIGURES = (  # the figures shown on the page (the bandwidth plot's place is taken by the timeline)
    (plots.SCHEDULE_PNG, "The schedule as clocks: each job's period is a circle, its burst an arc at its "
                         "shift; the last circle is one hyper-period with every job, overlaps in red."),
    (plots.ITERATION_TIMES_PNG, "How long each iteration took, per job and policy: the box holds the middle "
                                "half of the iterations, the line is the median; dashed: the job alone; "
                                "◆: the prediction."),
    (plots.PREDICTION_PNG, "Predicted (hatched) against measured (solid) mean iteration time; the label is "
                           "the error."),
)

STYLE = """
main { font-family: system-ui, sans-serif; max-width: 70rem; margin: 1.5rem auto; padding: 0 1rem;
       line-height: 1.5; color: #1b1b1b; }
h1 { font-size: 1.7rem; } h2 { border-bottom: 1px solid #ccc; margin-top: 2.2rem; }
table { border-collapse: collapse; margin: 0.8rem 0; font-size: 0.92rem; }
th, td { border: 1px solid #ccc; padding: 0.25rem 0.55rem; vertical-align: top; }
th { background: #f2f2f2; text-align: left; } td.num { text-align: right; white-space: nowrap; }
.banner { border-left: 6px solid #c0392b; background: #fdecea; padding: 0.6rem 1rem; margin: 1rem 0; }
.ok { color: #1e7e34; font-weight: 600; } .bad { color: #c0392b; font-weight: 600; }
.kind { display: inline-block; border-radius: 0.6rem; padding: 0 0.5rem; font-size: 0.8rem; white-space: nowrap; }
.kind-before { background: #e8e8e8; } .kind-calibration { background: #dbe9f8; }
.kind-afterwards { background: #fde6c8; }
.note { color: #555; font-size: 0.9rem; }
figure { margin: 1rem 0; } figure img { max-width: 100%; border: 1px solid #ddd; }
figcaption { color: #444; font-size: 0.9rem; }
code { background: #f4f4f4; padding: 0 0.2rem; }
"""

# Bokeh's page with ours around the timeline: its scripts go in the head, inline (resources=INLINE).
TEMPLATE = """
{% block preamble %}<meta name="viewport" content="width=device-width, initial-scale=1"><style>{{ style }}</style>
{% endblock %}
{% block contents %}<main>{{ before }}{{ embed(roots.timeline) }}{{ after }}</main>{% endblock %}
"""


def draw_html(results: Results, plot_paths: list[Path]) -> Path:
    """Write report.html into the results folder (atomically); the plots must be drawn already."""
    path = results.path / REPORT_HTML_FILE
    atomic_write_bytes(path, render_html(results, plot_paths).encode())
    return path


def render_html(results: Results, plot_paths: list[Path]) -> str:
    """The page: warnings, the verdicts, the timeline, then the numbers and the words behind them."""
    title = f"shiftbed report: {results.summary.scenario or results.path.parent.name}"
    grid, merge = timeline(results)
    said = verdicts(results)
    k = results.summary.time_scale
    before = "\n".join([f"<h1>{_e(title)}</h1>", *_banners(results), *([f"<p>{_e(stated(k))}</p>"] if k != 1 else []),
                        *_in_short(results, said),
                        *_timeline_intro(results, merge, grid is not None)])
    after = "\n".join([*_schedule(results, said), *_policies(results, said), *_theory(results, said),
                       *story.apart(results),
                       *story.fidelity(results), *_figures(plot_paths), *_environment(results)])
    if grid is None:
        return (f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{_e(title)}</title>"
                f"<style>{STYLE}</style></head><body><main>\n{before}\n{after}\n</main></body></html>\n")
    return file_html(grid, resources=INLINE, title=title, template=TEMPLATE,
                     template_variables={"style": STYLE, "before": before, "after": after})


def _e(text) -> str:
    return html.escape(str(text))


def inline_markdown(text: str) -> str:
    """The report's Markdown phrases (``**bold**``, ```code```) as HTML, everything else escaped."""
    escaped = _e(text)
    escaped = re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", escaped)
    return re.sub(r"`(.+?)`", r"<code>\1</code>", escaped)


def _ms(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1f}"


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:+.1f} %"


def _banners(results: Results) -> list[str]:
    summary = results.summary
    out = []
    if not summary.complete:
        out.append(f"<div class=\"banner\"><strong>Incomplete run:</strong> "
                   f"{_e(summary.incomplete_reason or 'reason not recorded')}. The numbers below cover only "
                   "what was measured before the run stopped.</div>")
    if not summary.fidelity_ok:
        measured = summary.fidelity.solo_rate_ratio is not None or summary.fidelity.capture_drops is not None
        what = ("Fidelity lost: the emulated network did not deliver" if measured else
                "Fidelity not confirmed: the run did not measure whether the emulated network delivered")
        out.append(f"<div class=\"banner\"><strong>{what} what the scenario asked for</strong>, so the "
                   "measurements may show the emulator's limits rather than the scheduling ideas. See "
                   "<a href=\"#fidelity\">Fidelity</a> for what failed and what to change.</div>")
    return out


def _in_short(results: Results, said: dict[str, str]) -> list[str]:
    items = "".join(f"<li><strong>{_e(k)}:</strong> {inline_markdown(v)}</li>" for k, v in said.items())
    return ["<p>This page is drawn from the results folder alone; <code>shiftbed report "
            f"{_e(results.path)}</code> draws it again (report.md beside it says the same in plain text).</p>",
            "<h2>In short</h2>", f"<ul>{items}</ul>",
            "<p class=\"note\">Words used below: a <em>job</em> is one emulated training job; each "
            "<em>iteration</em> it computes (no network) and then sends a <em>burst</em> of data to its "
            "other workers. A <em>policy</em> decides when bursts may go: <code>none</code> lets every job "
            "start at once and run free; <code>random</code> starts them at random offsets and lets them run "
            "free; <code>shift</code> starts each job at its planned shift and lets it run; <code>gate</code> "
            "opens each job's path only in its scheduled <em>windows</em> (the others: docs/policies.md).</p>"]


def _timeline_intro(results: Results, merge: int, drawn: bool) -> list[str]:
    out = ["<h2 id=\"timeline\">Timeline: windows and bursts on every link</h2>"]
    if not drawn:
        return [*out, "<p>The run captured no bandwidth (no rows in <code>link_bandwidth.csv</code>): "
                      "nothing to draw.</p>"]
    uncaptured = {name: e.get("same_flows_as") for name, e in results.summary.links.items() if not e.get("captured")}
    merged = ("" if merge == 1 else
              f" To keep this file small the bandwidth is drawn in steps of {merge * BANDWIDTH_BIN_S * 1000:g} ms "
              f"(the mean of {merge} captured bins); the bursts are from the captured 10-ms bins.")
    out.append("<p>One panel per policy and per link where jobs meet. In each, the upper part has a lane per "
               "job: <strong>pale boxes</strong> are the job's scheduled windows (under <code>shift</code> where "
               "it should burst, under <code>gate</code> where it may; <code>none</code> and <code>random</code> "
               "have none), <strong>solid boxes</strong> the bursts the packet capture saw on that link (a run "
               f"of 10-ms bins with the job's data, gaps under {BURST_GAP_S * 1000:g} ms included). The lower part "
               "is the link's bandwidth in Mbit/s, stacked by job in the lanes' colours; the dashed line is the link's configured "
               "rate. Two jobs' solid boxes at the same moment are bursts that met and shared the link."
               f"{merged}</p>")
    out.append("<p><strong>Zoom and pan:</strong> every panel shares one time axis. Drag to move along the run; "
               "use the toolbar above the panels to zoom (the magnifier with a box, the wheel, or the + and − "
               "buttons) and ↻ to return to the opening view. Hover over a burst to see its times and size. "
               "Times count from the moment each policy started.</p>")
    if uncaptured:
        items = "".join(f"<li>{_e(n)}: the same flows as {_e(s or 'a captured link')}</li>" for n, s in uncaptured.items())
        out.append(f"<p class=\"note\">Links where jobs meet that no capture sees (they carry the very same "
                   f"flows as a captured one, so their timeline would be the same):</p><ul>{items}</ul>")
    return out


def _schedule(results: Results, said: dict[str, str]) -> list[str]:
    out = ["<h2>The schedule: can the bursts be kept apart?</h2>"]
    schedule = results.schedule
    if schedule is None:
        return [*out, "<p>No schedule.json in this folder.</p>"]
    out.append(f"<p>Worked out <span class=\"kind kind-before\">before the run</span> from the periods and "
               f"bursts alone. The jobs' pattern repeats every hyper-period, the least common multiple of the "
               f"periods: {schedule.hyperperiod_ms:g} ms. Two jobs can be kept apart for ever if and only if "
               "their bursts fit in the greatest common divisor of their periods: c<sub>a</sub> + c<sub>b</sub> "
               "≤ gcd(T<sub>a</sub>, T<sub>b</sub>).</p>")
    rows = "".join(f"<tr><td>{_e(j.name)}</td><td class=\"num\">{j.period_ms:g}</td><td class=\"num\">"
                   f"{j.comm_ms:g}</td><td class=\"num\">{j.shift_ms:g}</td></tr>" for j in schedule.jobs)
    out.append("<table><tr><th>job</th><th>period T (ms)</th><th>burst c (ms)</th><th>shift (ms)</th></tr>"
               f"{rows}</table>")
    if schedule.pairs:
        rows = "".join(f"<tr><td>{_e(p.a)} – {_e(p.b)}</td><td class=\"num\">{p.gcd_ms:g}</td>"
                       f"<td class=\"num\">{p.comm_sum_ms:g}</td><td>"
                       f"{'<span class=ok>yes</span>' if p.separable else '<span class=bad>no</span>'}</td></tr>"
                       for p in schedule.pairs)
        out.append("<table><tr><th>pair</th><th>gcd of the periods (ms)</th><th>both bursts (ms)</th>"
                   f"<th>can be kept apart</th></tr>{rows}</table>")
    out.append(f"<p>Verdict: {inline_markdown(said['Schedule'])}"
               + ("." if schedule.feasible else f"; the best shifts still leave {schedule.overlap_ms:g} ms of "
                  "overlap per hyper-period.") + "</p>")
    return out


def _policies(results: Results, said: dict[str, str]) -> list[str]:
    policies = results.summary.policies
    order = plots.policy_order(policies)
    out = ["<h2>Did a policy help?</h2>"]
    if not order:
        return [*out, "<p>The run recorded no policy results.</p>"]
    changes = folder_changes(results)
    threshold = f"{next(iter(changes.values())).threshold_pct:g} %"
    rows = "".join(f"<tr><td>{_e(p)}</td><td class=\"num\">{_pct(changes[p].change_pct)}</td>"
                   f"<td class=\"num\">{changes[p].bounds_text()}</td><td>{_e(verdict_word(changes[p]))}</td>"
                   f"<td class=\"num\">{_pct(_predicted_change(results, p))}</td></tr>"
                   for p in order)
    out += ["<p>Throughput change: how many more (or fewer) iterations per second the jobs did than under "
            "<code>none</code>, averaged over the jobs, with its 95 % interval: how far the run's own noise "
            "(each measured mean's standard error) leaves the change uncertain. A policy <em>helps</em> when "
            f"the whole interval is above +{threshold}, <em>hurts</em> when it is all below -{threshold}, and "
            "is <em>neutral</em>, within the noise, otherwise. The predicted change is the same sum over the "
            "model's figures of the next table (each with the kind said there).</p>",
            "<table><tr><th>policy</th><th>measured change vs none</th><th>95 % interval</th><th>verdict</th>"
            f"<th>predicted</th></tr>{rows}</table>",
            f"<p>{inline_markdown(said['Policies'][0].upper() + said['Policies'][1:])}.</p>",
            *(f"<p>{inline_markdown(line)}</p>" for line in results.summary.stop_lines() if line)]
    return out


def _predicted_change(results: Results, policy: str) -> float | None:
    """The summary's predicted throughput change, else worked out from its predictions (older folders)."""
    recorded = results.summary.policies[policy].predicted_throughput_change_vs_none_pct
    return recorded if recorded is not None else predicted_change_pct(results, policy)


def _theory(results: Results, said: dict[str, str]) -> list[str]:
    rows = [(p, j, r) for p in plots.policy_order(results.summary.policies)
            for j, r in results.summary.policies[p].jobs.items()]
    out = ["<h2 id=\"theory\">Theory against measurement</h2>"]
    if not rows:
        return [*out, "<p>No policy results to compare.</p>"]
    before, before_note = story.plan_predictions(results)
    out.append(story.KINDS_HTML)
    if before_note:
        out.append(f"<p class=\"note\">Before the run: {_e(before_note)}.</p>")
    body = "".join(
        f"<tr><td>{_e(p)}</td><td>{_e(j)}</td><td class=\"num\">{r.iterations if r.iterations is not None else 'n/a'}"
        f"</td><td class=\"num\">{measured_cell(r)}</td><td class=\"num\">{_ms(before.get(p, {}).get(j))}</td>"
        f"<td class=\"num\">{_ms(r.predicted_iteration_ms)}</td><td>{story.kind_cell(r)}</td>"
        f"<td class=\"num\">{_pct(r.error_pct)}</td><td class=\"num\">{_range(r)}</td></tr>" for p, j, r in rows)
    out.append("<table id=\"theory-table\"><tr><th>policy</th><th>job</th><th>iterations</th><th>measured mean (ms)</th>"
               "<th>before the run (ms)</th><th>predicted (ms)</th><th>kind of prediction</th>"
               f"<th>error</th><th>model range (ms)</th></tr>{body}</table>")
    out.append("<p class=\"note\">Error = (measured − predicted) / predicted; the goal is within 10 %. "
               "± is the measured mean's standard error: an error within about twice it is within the run's own "
               "noise, and a longer <code>--duration</code> narrows it. Model range: the prediction with a burst "
               "started while another job's data is on the link costing nothing extra, up to twice what such "
               "starts cost in this run's other policies; <strong>knife edge</strong>: a few ms decide whether "
               "a gated burst makes its window, and one run can land anywhere in the range.</p>")
    out.append(f"<p>{inline_markdown(said['Theory vs measurement'])}.</p>")
    return out


def _range(r) -> str:
    if r.predicted_range_ms is None:
        return "n/a"
    cell = f"{_ms(r.predicted_range_ms[0])}–{_ms(r.predicted_range_ms[1])}"
    return f"<strong>{cell}</strong> knife edge" if r.knife_edge else cell


def _figures(plot_paths: list[Path]) -> list[str]:
    by_name = {p.name: p for p in plot_paths}
    out = ["<h2>Figures</h2>"]
    for name, caption in FIGURES:
        path = by_name.get(name)
        if path is None or not path.is_file():
            continue
        data = base64.b64encode(path.read_bytes()).decode()
        out.append(f"<figure><img alt=\"{_e(caption)}\" src=\"data:image/png;base64,{data}\">"
                   f"<figcaption>{_e(caption)}</figcaption></figure>")
    return out


def _environment(results: Results) -> list[str]:
    out = ["<h2>What it ran on, and the data</h2>"]
    if results.environment:
        rows = "".join(f"<tr><td>{_e(k)}</td><td>{_e(v)}</td></tr>" for k, v in results.environment.items())
        out.append(f"<table>{rows}</table>")
    else:
        out.append("<p>No environment.json in this folder.</p>")
    out.append("<p>Every number on this page comes from the tables in the results folder "
               f"<code>{_e(results.path)}</code> (their columns: docs/results.md), e.g. "
               "<code>pd.read_csv('iterations.csv')</code>.</p>")
    return out
