"""What the explorer's page shows of an answer, as data its widgets take: words, tables, the
report's clock figure, and the report's lanes for the link under each policy.

The lanes are the report's (``scenarios/report/timeline.py``) fed from the
fluid model instead of a capture: a job's burst is a run of the model's
steps in which its data moves, and a *meeting* (its own lane, in black) is a
step in which two or more bursts move data on one link, which is what the
plan's ``overlap`` counts.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field

import pandas as pd

from controller.theory.windows import windows_between
from scenarios.explore import answer as answers
from scenarios.explore import clocks
from scenarios.report import plots, timeline
from scenarios.schedule_record import ScheduleRecord

MEETINGS = "meetings"
MEETING_COLOR = "#000000"
TOUCH_MS = 1e-6  # model steps closer than this are one run


@dataclass
class View:
    """The page's contents for one answer (HTML strings, and the lanes' columns by policy)."""

    problems: dict[str, str] = field(default_factory=dict)
    status: str = ""
    feasibility: str = ""
    gains: str = ""
    clocks: dict[str, dict] = field(default_factory=dict)
    clocks_title: str = ""
    where: str = ""
    jobs: list[str] = field(default_factory=list)
    policies: list[str] = field(default_factory=list)
    link: str = ""
    lanes: dict[str, tuple[dict, dict]] = field(default_factory=dict)
    drawn_s: float = 0.0


def view(answer: answers.Answer, save_path: str) -> View:
    """Everything the page shows of ``answer``; ``save_path`` names the file in the ``plan`` command."""
    if answer.problems:
        boxes = ", ".join(sorted(answer.problems))
        return View(problems=answer.problems, status=_p(f"Not computed: a value is not accepted ({boxes}); "
                                                          "the message is beside its box.", "bad"))
    if answer.refused:
        return View(status=_p(answer.refused, "bad"))
    plan = answer.plan
    jobs = [j["name"] for j in plan["jobs"]]
    colors = {job: timeline.hex_color(rgb) for job, rgb in plots.job_colors(jobs).items()}
    colors[MEETINGS] = MEETING_COLOR
    link = ", ".join(link["name"] for link in plan["links"]) or "shared"
    headroom = {j["name"]: j["link_headroom"] for j in plan["jobs"]}
    link_mbps = answer.scenario.fabric.fabric_link_mbps if answer.scenario.fabric else float("nan")
    lanes = {}
    for policy, trace in answer.traces.items():
        bursts = link_bursts(trace.steps, policy, link, headroom, link_mbps)
        shown = windows(trace.windows, policy, answer.drawn_ms)
        columns = timeline.lanes_data(policy, link, [*jobs, MEETINGS], bursts, shown, colors)
        lanes[policy] = tuple(clocks.columns_for_bokeh(c) for c in columns)
    clock_columns, clock_title = clocks.clock_data(schedule(plan), colors)
    return View(status=_status(answer, save_path), feasibility=feasibility(plan), gains=gains(plan),
                clocks=clock_columns, clocks_title=clock_title, where=where(answer), jobs=jobs,
                policies=list(answer.traces), link=link, lanes=lanes, drawn_s=answer.drawn_ms / 1000)


def link_bursts(steps: list, policy: str, link: str, headroom: dict[str, float], link_mbps: float) -> pd.DataFrame:
    """The model's bursts and meetings as the report's timeline takes a capture's (``timeline.link_bursts``):
    policy, link, job, start_s, end_s, megabytes (a burst's speed relative to alone, over its headroom, is
    its share of the link)."""
    runs: dict[str, list[list[float]]] = {}

    def extend(job: str, t0: float, t1: float, megabits: float) -> None:
        mine = runs.setdefault(job, [])
        if mine and t0 - mine[-1][1] <= TOUCH_MS:
            mine[-1][1] = t1
            mine[-1][2] += megabits
        else:
            mine.append([t0, t1, megabits])

    for t0, t1, moving, meeting in steps:
        for job, speed in moving.items():
            extend(job, t0, t1, speed / headroom[job] * link_mbps * (t1 - t0) / 1000)
        if meeting:
            extend(MEETINGS, t0, t1, sum(s / headroom[j] for j, s in moving.items()) * link_mbps * (t1 - t0) / 1000)
    rows = [(policy, link, job, t0 / 1000, t1 / 1000, megabits / 8) for job, spans in runs.items()
            for t0, t1, megabits in spans]
    return pd.DataFrame(rows, columns=["policy", "link", "job", "start_s", "end_s", "megabytes"])


def windows(job_windows: dict, policy: str, until_ms: float) -> pd.DataFrame:
    """The windows the model held or aligned the jobs to, as the report's ``windows.csv``: policy, job, open_s, close_s."""
    rows = [(policy, job, a / 1000, b / 1000) for job, w in job_windows.items()
            for a, b in windows_between(w.shift_ms, w.period_ms, w.length_ms, 0.0, until_ms)]
    return pd.DataFrame(rows, columns=["policy", "job", "open_s", "close_s"])


def feasibility(plan: dict) -> str:
    """The gcd test in words: each pair that meets, its gcd against its two bursts, and the verdict."""
    grid = {j["name"]: j for j in plan["jobs"]}
    meet = {tuple(sorted(c["jobs"])) for c in plan["conflicts"]}
    q = plan["quantum_ms"]
    items = []
    for pair in plan["pairs"]:
        a, b = (grid[n] for n in pair["jobs"])
        names = f"<b>{_e(a['name'])}</b> and <b>{_e(b['name'])}</b>"
        if tuple(sorted(pair["jobs"])) not in meet:
            items.append(f"{names} never share a link: nothing to keep apart.")
            continue
        need = a["grid_comm_ms"] + b["grid_comm_ms"]
        test = (f"gcd({a['grid_period_ms']:g}, {b['grid_period_ms']:g}) = {pair['gcd_ms']:g} ms "
                f"{'≥' if pair['separable'] else '<'} {a['grid_comm_ms']:g} + {b['grid_comm_ms']:g} = {need:g} ms")
        if pair["separable"]:
            lo, hi = pair["separating_shift_ms"]
            items.append(f"{names}: {test}: <span class='ok'>a shift keeps them apart</span> (the second starts "
                         f"{lo:g} to {hi:g} ms after the first, modulo {pair['gcd_ms']:g} ms).")
        else:
            items.append(f"{names}: {test}: <span class='bad'>no shift keeps them apart</span>: this pair fails.")
    if plan["feasible"]:
        verdict = "<span class='ok'>Feasible</span>: one set of shifts keeps every pair that meets apart."
    elif all(p["separable"] for p in plan["pairs"]):
        verdict = ("<span class='bad'>Not feasible</span>: each pair alone can be kept apart, but not all of them "
                   f"at once; the best shifts leave {plan['overlap_ms']:g} ms of overlap per hyper-period.")
    else:
        verdict = (f"<span class='bad'>Not feasible</span>: the best shifts leave {plan['overlap_ms']:g} ms of "
                   f"overlap per hyper-period of {plan['hyperperiod_ms']:,} ms.")
    drift = [j for j in plan["jobs"] if j["grid_period_ms"] != j["period_ms"] or j["grid_comm_ms"] != j["comm_ms"]]
    note = ("" if not drift else "<p class='note'>The schedule sees the jobs on the "
            f"{q:g}-ms grid ({', '.join(_grid_words(j) for j in drift)}); the jobs keep their true periods, so a "
            "shift made on the grid drifts.</p>")
    shifts = ", ".join(f"{_e(j['name'])} {j['shift_ms']:g} ms" for j in plan["jobs"])
    return (f"<p>{verdict} Shifts: {shifts} (quantum {q:g} ms, hyper-period {plan['hyperperiod_ms']:,} ms).</p>"
            f"<ul>{''.join(f'<li>{i}</li>' for i in items)}</ul>{note}")


def gains(plan: dict) -> str:
    """Each policy's predicted iteration time per job, its change against ``none``, and against random
    start offsets with that baseline's 95 % interval; a cell ``data-gain="policy/job"`` holds the change
    against ``none`` as the page shows it."""
    none = plan["baselines"]["none"]["jobs"]
    rows = [] if "none" in plan["policies"] else [
        f"<tr><td>none</td><td>{_e(n)}</td><td class='num'>{_ms(r['predicted_iteration_ms'])}</td>"
        "<td class='num'>—</td><td class='num'>—</td></tr>" for n, r in none.items()]
    for policy, per_job in plan["policies"].items():
        if "error" in per_job:
            rows.append(f"<tr><td>{_e(policy)}</td><td colspan='4'>not applicable: {_e(per_job['error'])}</td></tr>")
            continue
        for name, r in per_job.items():
            lo, hi = r["change_vs_random_offsets_ci95"]
            rows.append(f"<tr><td>{_e(policy)}</td><td>{_e(name)}</td>"
                        f"<td class='num'>{_ms(r['predicted_iteration_ms'])}</td>"
                        f"<td class='num' data-gain='{_e(policy)}/{_e(name)}'>{_pct(r['change_vs_none'])}</td>"
                        f"<td class='num'>{_pct(r['change_vs_random_offsets'])} [{_pct(lo)}, {_pct(hi)}]</td></tr>")
    thr = ", ".join(f"{_e(p)} {v:.3f}" for p, v in plan["normalised_throughput"].items()
                    if v is not None and p != "none")
    rand = plan["baselines"]["random_offsets"]
    return ("<table><tr><th>policy</th><th>job</th><th>iteration (ms)</th><th>change vs none</th>"
            f"<th>vs random starts [95 %]</th></tr>{''.join(rows)}</table>"
            f"<p class='note'>Normalised throughput (1 = every job at its solo speed): none "
            f"{plan['baselines']['none']['normalised_throughput']:.3f}, {thr}; random starts "
            f"{rand['normalised_throughput']:.3f} [{rand['ci95'][0]:.3f}, {rand['ci95'][1]:.3f}] "
            f"over {rand['draws']} draws.</p>")


def schedule(plan: dict) -> ScheduleRecord:
    """The plan's schedule as the report reads it from ``schedule.json``: the jobs on the grid, their shifts."""
    return ScheduleRecord.from_dict({
        "quantum_ms": plan["quantum_ms"], "hyperperiod_ms": plan["hyperperiod_ms"], "feasible": plan["feasible"],
        "overlap_ms": plan["overlap_ms"], "method": plan["method"],
        "jobs": [{"name": j["name"], "period_ms": j["grid_period_ms"], "comm_ms": j["grid_comm_ms"],
                  "shift_ms": j["shift_ms"]} for j in plan["jobs"]]})


def where(answer: answers.Answer) -> str:
    """The point's harmonic share and the map's figures for the nearest cell."""
    w = answer.where
    names = [j.name for j in answer.scenario.jobs]
    harmonic = [n for n, h in zip(names, w.harmonic, strict=True) if h]
    said = (f"{', '.join(map(_e, harmonic))} {'has a period' if len(harmonic) == 1 else 'have periods'} "
            "identical to, or 2 or 3 times, another job's" if harmonic else "no job's period is identical to, "
            "or 2 or 3 times, another's")
    head = f"<p>Harmonic share of this point: <b>{w.share:.2f}</b> ({said}).</p>"
    if w.cell is None:
        return head + f"<p class='note'>The map has no cell with {len(names)} jobs.</p>"
    cell = w.cell
    place = ("this point's cell" if w.exact else f"the nearest cell (mix {cell.mix:g}; the map has none at "
             f"{w.share:.2f})")
    rows = "".join(
        f"<tr><td>{_e(p)}</td><td class='num'>{_pct(r['helps'][0], 0)} [{_pct(r['helps'][1], 0)}, "
        f"{_pct(r['helps'][2], 0)}]</td><td class='num'>{_pct(r['hurts'], 0)}</td>"
        f"<td class='num'>{_pct(r['mean_gain'])}</td></tr>"
        for p, r in cell.policies.items() if p in answer.edits.policies or p == "shift")
    return (head + f"<p>On the map ({_e(cell.source)}), {place}: {cell.n_jobs} jobs, harmonic share "
            f"{cell.mix:g}, {cell.samples} random combinations (periods 100–1000 ms, medium bursts, quantum 1 ms):</p>"
            "<table><tr><th>policy</th><th>helped [95 %]</th><th>hurt</th><th>mean gain vs none</th></tr>"
            f"{rows}</table>")


def _status(answer: answers.Answer, save_path: str) -> str:
    work = answer.budget
    said = [f"Answered in {answer.elapsed_ms:.0f} ms, from {work.bursts:,.0f} simulated bursts."]
    if work.cut:
        said.append(f"<b>The horizon is cut</b> from {work.default_ms / 1000:g} s to {work.horizon_ms / 1000:g} s "
                    "to answer in time.")
    said.append(f"Save, then <code>{_e(answers.plan_command(save_path, answer))}</code> prints these figures.")
    if any(j.jitter_ms for j in answer.edits.jobs):
        said.append("Jitter is kept for <code>run</code>; the model's jobs keep their exact periods.")
    return _p(" ".join(said))


def _grid_words(job: dict) -> str:
    return (f"{_e(job['name'])}: {job['period_ms']:g}/{job['comm_ms']:g} ms as {job['grid_period_ms']:g}/"
            f"{job['grid_comm_ms']:g}")


def _p(text: str, kind: str = "") -> str:
    return f"<p class='{kind}'>{text}</p>" if kind else f"<p>{text}</p>"


def _e(text) -> str:
    return html.escape(str(text))


def _ms(value: float | None) -> str:
    return "never" if value is None else f"{value:.1f}"


def _pct(x: float, digits: int = 1) -> str:
    return f"{100 * x:+.{digits}f} %" if digits else f"{100 * x:.0f} %"


