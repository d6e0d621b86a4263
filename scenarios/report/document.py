"""report.md: the run's report in Markdown, from a results folder alone.

The narrative is generated from the numbers in the folder; when the run is
incomplete or lost fidelity, it says so first. Its verdicts and thresholds
are shared with report.html (``html.py``, ``story.py``); ``draw.py`` writes
both pages and the plots.
"""

from __future__ import annotations

import json

from scenarios.analysis.meetings import APART_MET_SHARE
from scenarios.analysis.tables import BUSY_START_MS, STALL_MS
from scenarios.analysis.verdict import BASELINE, folder_changes, headline, verdict_word
from scenarios.report import plots
from scenarios.report.phasesection import (
    pattern_prediction_text,
    pattern_schedule_section,
    phase_lines,
)
from scenarios.results import PLOTS_DIR, Results
from scenarios.throughput import throughput_change_pct
from scenarios.timescale import stated

ACCURACY_GOAL_PCT = 10.0  # the model's goal: the measured mean within 10 % of the prediction
LATE_START_NOTE_MS = 5.0  # a miss whose bursts start this much later than alone gets a sentence saying so
# A job whose bursts spent this much more (or less) of their data beside a job it meets in the first third
# of its bursts than in the last is named: the jobs sorted themselves apart (or fell into step) during the run.
MEETING_CHANGE = 0.25
SOLO_RATE_MIN = 0.90  # realised / configured rate of a solo burst below this = fidelity lost
CROSSCHECK_BOUNDS_PCT = {
    "capture_vs_iperf_bytes_err_pct": 2.0,
    "capture_vs_portstats_util_err_pct": 5.0,
}
FIDELITY_REMEDIES = (
    "lower the link rate (the userspace datapath keeps ~96 % of 10-20 Mbit/s with 2 flows "
    "at MTU 1500, far less at 50-100 Mbit/s)",
    "use jumbo frames (MTU 9000 on every switch port and host interface)",
    "run fewer concurrent flows (fewer workers per job, or fewer jobs)",
)
PLOT_CAPTIONS = {
    plots.BANDWIDTH_PNG: "Shared-link bandwidth over time, stacked by job; shading = scheduled windows",
    plots.ITERATION_TIMES_PNG: "Iteration-time distribution per job and policy; dashed = solo",
    plots.PREDICTION_PNG: "Predicted vs measured mean iteration time, with the % error",
    plots.SCHEDULE_PNG: "The schedule as circles: per job, and over one hyper-period",
}


def verdicts(results: Results) -> dict[str, str]:
    """The report's four verdicts in one phrase each (Markdown), as "In short" lists them."""
    return {"Schedule": _schedule_section(results)[0], "Policies": _policy_section(results)[0],
            "Theory vs measurement": _accuracy_section(results)[0], "Fidelity": _fidelity_section(results)[0]}


# --------------------------------------------------------------------------- the narrative


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:+.1f} %"


def _ms(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1f}"


def _fidelity_measured(results: Results) -> bool:
    fidelity = results.summary.fidelity
    return fidelity.solo_rate_ratio is not None or fidelity.capture_drops is not None


def _banners(results: Results) -> list[str]:
    """What a reader must know before trusting any number below."""
    summary = results.summary
    lines = []
    if not summary.complete:
        lines += [f"> **⚠ INCOMPLETE RUN: {summary.incomplete_reason or 'reason not recorded'}.** "
                  "The numbers below cover only what was measured before the run stopped.", ""]
    if not summary.fidelity_ok and not _fidelity_measured(results):
        lines += ["> **⚠ FIDELITY NOT CONFIRMED: the run did not measure solo bursts against the "
                  "configured link rate, so nothing shows that the fabric delivered what the "
                  "scenario asked for.**", ""]
    elif not summary.fidelity_ok:
        fidelity = summary.fidelity
        facts = []
        ratio = fidelity.solo_rate_ratio
        if ratio is not None:
            facts.append(f"solo bursts at the scenario's size reached {ratio * 100:.0f} % of the rate the "
                         f"configured links give them (needs at least {SOLO_RATE_MIN * 100:.0f} %)")
        if fidelity.unmeasured_jobs:
            facts.append(f"the solo bursts of {', '.join(fidelity.unmeasured_jobs)} were too short to "
                         "measure a rate")
        if fidelity.overrun_jobs:
            facts.append(f"alone, {', '.join(fidelity.overrun_jobs)} could not keep their periods")
        if fidelity.capture_drops:
            facts.append(f"the capture dropped {fidelity.capture_drops} packets")
        if fidelity.disturbed:
            facts.append(f"the machine's host took more than {fidelity.host_steal_max_pct or 0:g} % of its CPU "
                         f"during {', '.join(fidelity.disturbed)}")
        why = "; ".join(facts) or "the run marked fidelity as lost"
        lines += [f"> **⚠ FIDELITY LOST: the emulated fabric did not deliver what the scenario "
                  f"configured, so these measurements may show the emulator, not the model.** "
                  f"{why[0].upper() + why[1:]}.", ">", "> What to change:"]
        if fidelity.advice:
            lines.append(f"> - {fidelity.advice}")
        lines += [f"> - {remedy}" for remedy in FIDELITY_REMEDIES]
        lines.append("")
    return lines


def _schedule_section(results: Results) -> tuple[str, list[str]]:
    """The verdict (one phrase) and the section explaining it with gcd vs comm sum."""
    schedule = results.schedule
    pattern = pattern_schedule_section(results.path)
    if pattern is not None:
        return pattern
    if schedule is None:
        return "unknown (no schedule.json)", ["No schedule.json in this folder.", ""]
    lines = [
        f"Quantum {schedule.quantum_ms:g} ms, hyper-period (LCM of the periods) "
        f"{schedule.hyperperiod_ms:g} ms, method `{schedule.method}`.",
        "",
        "| job | period (ms) | comm (ms) | shift (ms) | measured solo period (ms) | measured solo comm (ms) |",
        "|---|---:|---:|---:|---:|---:|",
        *[f"| {j.name} | {j.period_ms:g} | {j.comm_ms:g} | {j.shift_ms:g} | "
          f"{_ms(j.solo_period_ms)} | {_ms(j.solo_comm_ms)} |" for j in schedule.jobs],
        "",
    ]
    if schedule.pairs:
        lines += ["Two jobs can be kept apart for ever iff their bursts fit in the gcd of their "
                  "periods: c_a + c_b ≤ gcd(T_a, T_b).", "",
                  "| pair | gcd(T_a, T_b) (ms) | c_a + c_b (ms) | separable |", "|---|---:|---:|---|"]
        lines += [f"| {p.a} – {p.b} | {p.gcd_ms:g} | {p.comm_sum_ms:g} | "
                  f"{'yes' if p.separable else '**no**'} |" for p in schedule.pairs]
        lines.append("")
    failing = [p for p in schedule.pairs if not p.separable]
    if schedule.feasible:
        verdict = "feasible"
        lines.append("**Feasible**: the shifts above keep every burst apart, every iteration.")
    elif failing:
        verdict = "infeasible"
        why = "; ".join(f"{p.a} – {p.b}: gcd {p.gcd_ms:g} ms < {p.comm_sum_ms:g} ms of bursts"
                        for p in failing)
        lines.append(f"**Infeasible** ({why}): those bursts collide in some iteration whatever "
                     f"the shifts. The best shifts still leave {schedule.overlap_ms:g} ms of "
                     "pairwise overlap per hyper-period.")
    else:
        verdict = "infeasible"
        load = sum(j.comm_ms / j.period_ms for j in schedule.jobs)
        why = (f"together the bursts need {load * 100:.0f} % of the link (Σ c/T > 1)" if load > 1
               else "the pairwise test is necessary but not sufficient for more than two jobs")
        lines.append(f"**Infeasible**, although every pair passes the gcd test: {why}. The best "
                     f"shifts leave {schedule.overlap_ms:g} ms of pairwise overlap per hyper-period.")
    longest_ms = max(j.period_ms for j in schedule.jobs)
    if schedule.hyperperiod_ms >= 20 * longest_ms:
        lines.append(f"The hyper-period is {schedule.hyperperiod_ms / longest_ms:.0f}× the longest "
                     "period: the periods are nearly coprime, so the joint pattern takes long to repeat.")
    lines.append("")
    return verdict, lines


def _links_lines(results: Results) -> list[str]:
    """Where the jobs meet (summary.json's ``links``): each directed link two or more jobs share,
    and whether the run captured it; nothing for a folder without them."""
    links = results.summary.links
    if not links:
        return []
    lines = ["### Where the jobs meet", "",
             "Jobs slow each other only on the directed links they share (docs/multilink.md); the "
             "schedule keeps apart only the pairs that meet there, so a pair that never meets need "
             "not be separable.", "",
             "| link | jobs | captured |", "|---|---|---|"]
    for name, entry in links.items():
        captured = "yes" if entry.get("captured") else f"no (same flows as {entry.get('same_flows_as', '?')})"
        lines.append(f"| {name} | {', '.join(entry.get('jobs', []))} | {captured} |")
    return [*lines, ""]


def predicted_change_pct(results: Results, policy: str) -> float | None:
    """What the model expected of ``policy`` versus ``none``, from the predicted iteration times."""
    policies = results.summary.policies
    if "none" not in policies:
        return None
    predicted, baseline = policies[policy].jobs, policies["none"].jobs
    pairs = {j: (predicted[j].predicted_iteration_ms, baseline[j].predicted_iteration_ms)
             for j in predicted if j in baseline}
    pairs = {j: (p, b) for j, (p, b) in pairs.items() if p and b}
    if not pairs:
        return None
    return throughput_change_pct({j: p for j, (p, _) in pairs.items()},
                                 {j: b for j, (_, b) in pairs.items()})


def _policy_section(results: Results) -> tuple[str, list[str]]:
    """The verdict (``verdict.headline``) and the table behind it: each policy's change against ``none``
    with its 95 % interval and what the interval says."""
    policies = results.summary.policies
    order = plots.policy_order(policies)
    if not order:
        return "no policy results recorded", ["The run recorded no policy results.", ""]
    changes = folder_changes(results)
    threshold = f"{next(iter(changes.values())).threshold_pct:g} %"
    lines = ["Throughput change = the mean over jobs of the change in iterations per second "
             "versus `none` (every job starting at t = 0, running free), with its 95 % interval from the "
             "measured means' standard errors. The predicted change "
             "applies the same formula to the fluid model's iteration times. A policy *helps* when its whole "
             f"interval is above +{threshold}, *hurts* when it is all below -{threshold}, and is *neutral* "
             "(within the run's noise) otherwise: the words and threshold of `shiftbed sweep` and `map`.", "",
             "| policy | measured throughput change vs none | 95 % interval | verdict | predicted |",
             "|---|---:|---:|---|---:|"]
    lines += [f"| {p} | {_pct(changes[p].change_pct)} | {changes[p].bounds_text()} | {verdict_word(changes[p])} "
              f"| {_pct(predicted_change_pct(results, p))} |" for p in order]
    lines += ["", *results.summary.stop_lines()]
    verdict = headline(changes)
    if all(c.policy == BASELINE or c.change_pct is None for c in changes.values()):
        lines.append("No policy other than `none` has a throughput figure: nothing to compare.")
    else:
        lines.append(f"{verdict[0].upper() + verdict[1:]}.")
    shift = changes.get("shift")
    if results.schedule is not None and not results.schedule.feasible and shift and shift.change_pct is not None:
        lines.append(f"The schedule is infeasible, so a static shift cannot keep the bursts "
                     f"apart for long: `shift` changed throughput by {shift.interval_text()} "
                     f"({verdict_word(shift)}).")
    lines.append("")
    return verdict, lines


def _accuracy_section(results: Results) -> tuple[str, list[str]]:
    rows = [(p, j, r) for p in plots.policy_order(results.summary.policies)
            for j, r in results.summary.policies[p].jobs.items()]
    intro = pattern_prediction_text(results.path) or (
             "Prediction: the fluid model fed with the measured solo figures, each job's solo bursts pooled "
             "with its bursts in this run's other policies that met no other job's burst (the machine's speed "
             "drifts between calibration and the policies). "
             "Error = (measured − predicted) / predicted. A burst launched while another job's data is on "
             "the link, or alongside another job's launch, is taken to cost more than alone (its processes "
             "start slower on the loaded machine): per "
             "job, how much later its data started in such bursts of this run's other policies, each busy start "
             f"drawing one of them (medians: {_busy_costs(rows)}; with fewer than three, {BUSY_START_MS:g} ms); "
             "model range: the prediction with those costs 0 to twice them. "
             "± is the measured mean's standard error (batch means over consecutive parts of the run): "
             "an error within about twice it is within the run's own noise, and a longer `--duration` narrows it. "
             "Jobs left free-running from a start off the schedule's shifts (`none`, `random`) run together "
             "(still meeting) or apart (bursting one after another), and once apart they stay apart; the "
             "model predicts both states, with max-min fair sharing, and weighs them by the job's iterations "
             "before and after the jobs parted (from there on their bursts spent at most "
             f"{APART_MET_SHARE:.0%} of their data beside each other): the share apart is given beside "
             "the prediction.")
    lines = [intro, "",
             "| policy | job | iterations | measured mean (ms) | predicted (ms) | model range (ms) | solo (ms) "
             "| error |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    lines += [f"| {p} | {j} | {r.iterations if r.iterations is not None else 'n/a'} | "
              f"{measured_cell(r)} | {predicted_cell(results.summary.policies[p], r)} | "
              f"{_range_cell(r)} | "
              f"{_ms(r.solo_iteration_ms)} | {_pct(r.error_pct)} |" for p, j, r in rows]
    lines.append("")
    if not rows:
        lines = []
    for p, why in results.summary.predictions_missing.items():
        lines += [f"No prediction for `{p}`: the model could not simulate it ({why}). Its measurement is kept "
                  "above; `shiftbed report --repredict` predicts the folder again with the model installed.", ""]
    errors = [(abs(r.error_pct), p, j, r.error_pct) for p, j, r in rows if r.error_pct is not None]
    if not errors:
        lines += ["No prediction error could be computed.", ""]
        return "no prediction error computed", lines
    worst_abs, worst_policy, worst_job, worst = max(errors)
    mean_abs = sum(e[0] for e in errors) / len(errors)
    outside = sum(1 for e in errors if e[0] > ACCURACY_GOAL_PCT)
    verdict = f"max |error| {worst_abs:.1f} %, mean |error| {mean_abs:.1f} %"
    goal = (f"all {len(errors)} within the {ACCURACY_GOAL_PCT:g} % goal" if not outside else
            f"**{outside} of {len(errors)} outside the {ACCURACY_GOAL_PCT:g} % goal**")
    lines += [f"Theory and measurement: {verdict} ({goal}); the worst is `{worst_job}` under "
              f"`{worst_policy}` ({_pct(worst)}).", ""]
    edges = [(p, j, r) for p, j, r in rows if r.knife_edge]
    if edges:
        named = ", ".join(f"`{j}` under `{p}` ({_ms(r.predicted_range_ms[0])}–{_ms(r.predicted_range_ms[1])} ms, "
                          f"measured {_ms(r.mean_iteration_ms)})" for p, j, r in edges)
        lines += [f"On a knife edge: {named}. A few ms per busy start move the model's mean by more than "
                  "a tenth: these jobs' bursts end within a few ms of the moment that decides whether they make "
                  "their next window, so each burst takes one period or two, and one run can land anywhere in "
                  "the range. Their errors count in the figures above; see docs/accuracy.md.", ""]
        verdict += f"; {len(edges)} on a knife edge"
    return verdict, lines


def _busy_costs(rows) -> str:
    """The busy-start costs the model took, per policy and job, e.g. ``none: a 9.1, b 7.2 ms``."""
    by_policy: dict[str, list[str]] = {}
    for p, j, r in rows:
        cost = BUSY_START_MS if r.busy_start_ms is None else r.busy_start_ms
        by_policy.setdefault(p, []).append(f"{j} {cost:.1f}")
    return "; ".join(f"{p}: {', '.join(items)} ms" for p, items in by_policy.items())


def predicted_cell(policy, r) -> str:
    """The predicted mean (with a free-running job's share apart), or why the model gave none."""
    if policy.prediction_unavailable:
        return "unavailable (the model failed)"
    apart = f" ({r.apart_share:.0%} apart)" if r.apart_share is not None else ""
    return f"{_ms(r.predicted_iteration_ms)}{apart}"


def measured_cell(r) -> str:
    """The measured mean, with its standard error where the run had enough iterations for one."""
    if r.iteration_se_ms is None or r.mean_iteration_ms is None:
        return _ms(r.mean_iteration_ms)
    return f"{_ms(r.mean_iteration_ms)} ± {r.iteration_se_ms:.1f}"


def _range_cell(r) -> str:
    """``low–high`` of the model range, marked when it is a knife edge."""
    if r.predicted_range_ms is None:
        return "n/a"
    cell = f"{_ms(r.predicted_range_ms[0])}–{_ms(r.predicted_range_ms[1])}"
    return f"**{cell}** (knife edge)" if r.knife_edge else cell


def _burst_section(results: Results) -> list[str]:
    """The run's bursts beside the solo bursts the model was fed, and what that says about a miss."""
    solo = {j: s for j, s in results.summary.fidelity.solo.items() if s.get("burst_all_flows_ms") is not None}
    rows = [(p, j, r) for p in plots.policy_order(results.summary.policies)
            for j, r in results.summary.policies[p].jobs.items() if r.burst_all_flows_ms is not None]
    if not rows:
        return []
    lines = ["Bursts on the wire, medians in ms from the launch of a burst (every burst starts new iperf3 "
             "processes and connections): its first data packet on the shared link, the first data "
             "packet of its last flow to start, and its data phase (first → last data packet). "
             "The model was fed the solo bursts.", "",
             "| policy | job | first data | every flow started | data phase |", "|---|---|---:|---:|---:|"]
    lines += [f"| solo | {j} | {_ms(s.get('burst_lead_ms'))} | {_ms(s['burst_all_flows_ms'])} | "
              f"{_ms(s.get('burst_data_ms'))} |" for j, s in solo.items()]
    lines += [f"| {p} | {j} | {_ms(r.burst_lead_ms)} | {_ms(r.burst_all_flows_ms)} | {_ms(r.burst_data_ms)} |"
              for p, j, r in rows]
    lines.append("")
    for p, j, r in rows:
        if j not in solo or r.error_pct is None or abs(r.error_pct) <= ACCURACY_GOAL_PCT:
            continue
        alone_ms = solo[j]["burst_all_flows_ms"]
        later_ms = r.burst_all_flows_ms - alone_ms
        if later_ms >= LATE_START_NOTE_MS:
            lines += [f"`{j}` under `{p}` ({_pct(r.error_pct)}): its bursts had every flow going "
                      f"{later_ms:.1f} ms later than alone (median "
                      f"{r.burst_all_flows_ms:.1f} vs {alone_ms:.1f} ms after launch). The model takes each "
                      "burst's start-up from the solo bursts, so this delay, an emulation artefact (starting "
                      "processes and connections slows while other jobs load the CPU), is not in the "
                      "prediction; see docs/accuracy.md.", ""]
    return lines


def _meeting_section(results: Results) -> list[str]:
    """Whether the jobs kept meeting through each policy's run, and what the run's last third measured.

    On the wire free-running jobs may sort themselves apart (or fall into
    step) within a run; the last third is then nearer the steady state than
    the whole run's mean. The model predicts `none` and `random` together and
    apart, weighed by the iterations before and after the jobs parted; when
    they part it does not say."""
    rows = [(p, j, r) for p in plots.policy_order(results.summary.policies)
            for j, r in results.summary.policies[p].jobs.items()
            if r.met_share_first is not None and r.met_share_last is not None]
    if not any(max(r.met_share_first, r.met_share_last) > 0 for _, _, r in rows):
        return []
    lines = ["Did the jobs keep meeting? The share of each burst's data phase spent beside the data of a job "
             "it shares a link with, over the first and the last third of its bursts, and the mean iteration "
             "over the run and over its last third:", "",
             "| policy | job | data beside another job: first third | last third | mean iteration (ms) "
             "| last third (ms) | predicted (ms) |",
             "|---|---|---:|---:|---:|---:|---:|"]
    lines += [f"| {p} | {j} | {r.met_share_first:.0%} | {r.met_share_last:.0%} | {_ms(r.mean_iteration_ms)} "
              f"| {_ms(r.mean_iteration_last_third_ms)} | {_ms(r.predicted_iteration_ms)} |" for p, j, r in rows]
    lines.append("")
    for policy in dict.fromkeys(p for p, _, _ in rows):
        mine = [(j, r) for p, j, r in rows if p == policy]
        apart = [j for j, r in mine if r.met_share_first - r.met_share_last >= MEETING_CHANGE]
        together = [j for j, r in mine if r.met_share_last - r.met_share_first >= MEETING_CHANGE]
        if apart:
            lines += [f"Under `{policy}` {', '.join(f'`{j}`' for j in apart)} met less as the run went on: the "
                      "free-running jobs were sorting themselves apart (a burst further along keeping more of "
                      "the link, or one job's burst stalled by a retransmission timeout). The model weighs "
                      "its two states by the iterations before and after they parted; the last third "
                      "is nearer where they settle, and a longer `--duration` shows it (docs/accuracy.md, "
                      "\"Together or apart\").", ""]
        if together:
            lines += [f"Under `{policy}` {', '.join(f'`{j}`' for j in together)} met more as the run went on: "
                      "the jobs fell into step. The model has jobs part but never join again, so it counts "
                      "the whole run together (docs/accuracy.md, \"Together or apart\").", ""]
    return lines


def _fidelity_section(results: Results) -> tuple[str, list[str]]:
    summary = results.summary
    fidelity, checks = summary.fidelity, summary.crosschecks
    verdict = ("ok" if summary.fidelity_ok else
               "**LOST** (see the warning at the top)" if _fidelity_measured(results) else
               "**not confirmed** (not measured)")
    ratio = fidelity.solo_rate_ratio
    drops = "n/a" if fidelity.capture_drops is None else fidelity.capture_drops
    lines = [f"- Fidelity: {verdict}.",
             f"- Solo bursts at the scenario's size reached {'n/a' if ratio is None else f'{ratio * 100:.1f} %'} "
             f"of the rate the configured links give them (needs at least {SOLO_RATE_MIN * 100:.0f} %).",
             f"- Packets dropped by the capture: {drops}."]
    steal, peaks = fidelity.host_steal_pct, fidelity.host_steal_peak_pct  # format 1 folders may lack them
    if steal:
        lines.append(f"- CPU taken by the machine's host (steal; a measurement above "
                     f"{fidelity.host_steal_max_pct or 0:g} % is measured again; its worst second): "
                     + ", ".join(f"{what} {pct:.1f} %" + (f" ({peaks[what]:.0f} %)" if what in peaks else "")
                                 for what, pct in steal.items()) + ".")
    drift = {job: pct for job, pct in fidelity.speed_drift_pct_of_period.items() if pct is not None}
    if drift:
        line = ("- The machine's speed during the policies: how much longer each job's bursts that met no "
                "other job's took from launch to end than its solo bursts in calibration, as a share of its "
                "period: " + ", ".join(f"{job} {pct:+.1f} %" for job, pct in drift.items()))
        if fidelity.drifted:
            line += (f"; **{', '.join(fidelity.drifted)} drifted by more than "
                     f"{fidelity.drift_max_pct or 0:g} %**, so ran off the period calibration set, and what "
                     "depends on it on the wire (a `shift` keeping free-running bursts apart) may not hold; "
                     "the model's figures follow the drift")
        lines.append(line + ".")
    stalled = {job: figures for job, figures in fidelity.solo.items() if figures.get("stalled_bursts")}
    if stalled:
        lines.append(f"- Solo bursts that stalled {STALL_MS:g} ms or more over their run's median, as on a TCP "
                     "retransmission timeout (the model's draws clip them to near the usual length): "
                     + ", ".join(f"{job} {f['stalled_bursts']} of {f['bursts']}" for job, f in stalled.items()) + ".")
    for again in fidelity.measured_again:
        lines.append(f"- Measured again: {again.measurement} (attempt {again.attempt}, "
                     f"{again.mean_pct:.1f} % stolen; kept in `raw/{again.run}`).")
    for name, value in checks.to_dict().items():
        bound = CROSSCHECK_BOUNDS_PCT.get(name)
        if isinstance(value, int | float) and bound is not None:
            within = "within" if abs(value) <= bound else "**outside**"
            lines.append(f"- Cross-check `{name}`: {value:.2f} % ({within} ±{bound:g} %).")
        elif isinstance(value, dict):  # per job
            lines.append(f"- Cross-check `{name}`: " + ", ".join(f"{k} {v:.3g}" for k, v in value.items()) + ".")
        else:
            lines.append(f"- Cross-check `{name}`: {'not measured' if value is None else value}.")
    lines.append("")
    return verdict, lines


def _environment_lines(results: Results) -> list[str]:
    if not results.environment:
        return ["No environment.json in this folder.", ""]
    lines = [f"- {key}: {value if isinstance(value, str | int | float) else json.dumps(value)}"
             for key, value in results.environment.items()]
    return [*lines, ""]


def render_report(results: Results, plot_names: list[str]) -> str:
    """report.md: warnings first, then the verdicts, then the numbers behind them, then plots."""
    summary = results.summary
    feasibility, schedule_lines = _schedule_section(results)
    policies_said, policy_lines = _policy_section(results)
    accuracy, accuracy_lines = _accuracy_section(results)
    fidelity, fidelity_lines = _fidelity_section(results)
    lines = [f"# shiftbed report: {summary.scenario or results.path.parent.name}", ""]
    lines += _banners(results)
    lines += [f"Results folder `{results.path.name}` "
              f"({'complete run' if summary.complete else 'incomplete run'}). "
              "Redraw with `shiftbed report <this folder>`.", "",
              *([stated(summary.time_scale), ""] if summary.time_scale != 1 else []),
              "## In short", "",
              f"- Schedule: {feasibility}.",
              f"- Policies: {policies_said}.",
              f"- Theory vs measurement: {accuracy}.",
              f"- Fidelity: {fidelity}.", "",
              "## The schedule: can the bursts be kept apart?", "", *schedule_lines, *_links_lines(results),
              "## Did a policy help?", "", *policy_lines,
              "## Theory vs measurement", "", *accuracy_lines, *_burst_section(results), *_meeting_section(results),
              "## Fidelity and cross-checks", "", *fidelity_lines, *phase_lines(results.path),
              "## Plots", ""]
    for name in plot_names:
        caption = PLOT_CAPTIONS.get(name, name)
        lines += [f"### {caption}", "", f"![{caption}]({PLOTS_DIR}/{name})", ""]
    lines += ["## Environment", "", *_environment_lines(results),
              "## Data", "",
              "Every number above comes from the tables in this folder (schema: docs/results.md), "
              "e.g. `pd.read_csv('iterations.csv')`; `shiftbed report` redraws this page from them.",
              ""]
    return "\n".join(lines).rstrip() + "\n"
