"""report.html's words: what each prediction was made from, the together-or-apart story of
free-running jobs, and fidelity, told for a student who has not read the docs.

**The kinds of prediction.** A figure on the page is one of three kinds
(docs/report.md; ``scenarios/experiment/prediction.py``):

- *before the run*: the theory from the scenario file alone (its periods
  and bursts, nothing measured) — the schedule, and what ``shiftbed plan``
  predicts for each job (:func:`plan_predictions`);
- *from calibration*: the fluid model fed each job's bursts measured alone
  before the policies ran, pooled with its bursts in the run's *other*
  policies that met no other job's; of the policy's own run it takes only
  the offsets the jobs started at and how many iterations to average;
- *explained afterwards*: free-running jobs (``none``, ``random``) end
  together or apart, and when they part the model cannot say; their
  figure weighs the two states (each from calibration) by the share of
  iterations apart counted in this very run, so it explains the run more
  than it predicts it.
"""

from __future__ import annotations

from html import escape as _e

from controller.theory.policies import POLICIES
from scenarios import spec
from scenarios.analysis.meetings import APART_MET_SHARE
from scenarios.planning import build_plan
from scenarios.report import plots
from scenarios.report.document import CROSSCHECK_BOUNDS_PCT, FIDELITY_REMEDIES, SOLO_RATE_MIN
from scenarios.results import Results
from scenarios.summary_record import JobSummary

BEFORE, CALIBRATION, AFTERWARDS = "before the run", "from calibration", "explained afterwards"
KIND_CLASS = {BEFORE: "kind-before", CALIBRATION: "kind-calibration", AFTERWARDS: "kind-afterwards"}

KINDS_HTML = (
    "<p>Each prediction below is one of three kinds, said beside it:</p><ul>"
    f"<li><span class=\"kind kind-before\">{BEFORE}</span>: the theory from the scenario file alone, the "
    "periods and bursts it declares and nothing measured: what <code>shiftbed plan</code> predicts for the "
    "job's steady state.</li>"
    f"<li><span class=\"kind kind-calibration\">{CALIBRATION}</span>: the fluid model fed each job's bursts "
    "as measured alone before the policies ran (pooled with its bursts in the run's <em>other</em> policies "
    "that met no other job's). Of this policy's own run it takes only where the jobs started and how many "
    "iterations to average: a prediction in the strict sense.</li>"
    f"<li><span class=\"kind kind-afterwards\">{AFTERWARDS}</span>: jobs left to run free (<code>none</code>, "
    "<code>random</code>) end either <em>together</em> (still meeting) or <em>apart</em> (taking turns), "
    "and when they part no model here can say. Both states are predicted from calibration, then weighed by "
    "the share of the job's iterations that came after the jobs parted, <em>counted in this run</em>: the "
    "figure uses one number from the run it is compared with.</li></ul>")


def prediction_kind(job: JobSummary) -> str:
    """:data:`CALIBRATION` or :data:`AFTERWARDS` for the run's prediction of ``job`` (module docstring).

    A folder from before the two states has no ``apart_share``: its one prediction is from calibration."""
    if job.apart_share is not None or job.predicted_together_ms is not None:
        return AFTERWARDS
    return CALIBRATION


def kind_cell(job: JobSummary) -> str:
    """The table's cell saying what ``job``'s prediction was made from."""
    kind = prediction_kind(job)
    badge = f"<span class=\"kind {KIND_CLASS[kind]}\">{kind}</span>"
    if kind == CALIBRATION:
        return badge
    share = job.apart_share or 0.0
    return (f"{badge} together {_ms(job.predicted_together_ms)}, apart {_ms(job.predicted_apart_ms)} ms, "
            f"{share:.0%} of its iterations apart")


def plan_predictions(results: Results) -> tuple[dict[str, dict[str, float]], str | None]:
    """Per policy and job, what ``shiftbed plan`` predicts from the folder's scenario.yaml, and a note
    when it could not (the scenario does not parse, or a policy is not a built-in one)."""
    try:
        scenario = spec.parse(results.scenario_yaml, str(results.path / "scenario.yaml"))
    except Exception as exc:  # an old or hand-made scenario.yaml: the page still draws, and says why
        return {}, f"no figure, the folder's scenario.yaml does not plan ({str(exc).splitlines()[0]})"
    policies = tuple(p for p in results.summary.policies if p in POLICIES)
    try:
        plan = build_plan(scenario, policies=policies or None, random_draws=0)
    except Exception as exc:
        return {}, f"no figure, the theory could not plan this scenario ({str(exc).splitlines()[0]})"
    if "policies" not in plan:  # a pattern job's plan: its exact schedule, no iteration times
        return {}, f"no figure, {plan.get('not_modelled', 'the plan predicts no iteration times here')}"
    out = {p: {j: job["predicted_iteration_ms"] for j, job in entry.items() if isinstance(job, dict)}
           for p, entry in plan["policies"].items() if "error" not in entry}
    others = sorted(set(results.summary.policies) - set(out))
    note = f"no figure for {', '.join(others)} (not a built-in policy the plan knows)" if others else None
    return out, note


def _ms(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1f}"


def apart(results: Results) -> list[str]:
    """Together or apart: what the free-running jobs did in this run, and how the model took it."""
    policies = results.summary.policies
    free = [p for p in plots.policy_order(policies)
            if any(prediction_kind(j) == AFTERWARDS for j in policies[p].jobs.values())]
    met = [(p, j, r) for p in plots.policy_order(policies) for j, r in policies[p].jobs.items()
           if r.met_share_first is not None and r.met_share_last is not None]
    if not free and not met:
        return []
    out = ["<h2 id=\"apart\">Together or apart: jobs left to run free</h2>",
           "<p>When nothing keeps the jobs' bursts apart, two things can happen. The jobs may stay "
           "<em>together</em>: their bursts keep meeting on a shared link, split its rate, and each takes "
           "longer. Or they drift <em>apart</em>: one burst falls a little behind (a burst further along keeps "
           "more of the link, or a lost packet stalls one for a retransmission timeout), and from then on "
           "they take turns, each burst at full speed. Once apart they stay apart. Which of the two happens, "
           "and when, differs from run to run.</p>"]
    for policy in free:
        jobs = policies[policy].jobs
        parted = [j for j, r in jobs.items() if (r.apart_share or 0) > 0]
        if parted:
            shares = ", ".join(f"{_e(j)} ran {jobs[j].apart_share:.0%} of its iterations apart" for j in parted)
            what = (f"the jobs parted: {shares}. From that moment on their bursts spent on average at most "
                    f"{APART_MET_SHARE:.0%} of their data beside each other.")
        else:
            what = ("no parting was found: there is no moment after which the jobs' bursts kept apart, so each "
                    "job's figure is the together one.")
        rows = "".join(f"<tr><td>{_e(j)}</td><td class=\"num\">{_ms(r.predicted_together_ms)}</td>"
                       f"<td class=\"num\">{_ms(r.predicted_apart_ms)}</td><td class=\"num\">"
                       f"{(r.apart_share or 0):.0%}</td><td class=\"num\">{_ms(r.predicted_iteration_ms)}</td>"
                       f"<td class=\"num\">{_ms(r.mean_iteration_ms)}</td></tr>" for j, r in jobs.items())
        out += [f"<h3>Under <code>{_e(policy)}</code></h3>",
                f"<p>In this run {what} The model predicted each job's mean iteration both ways from calibration, "
                "and weighed the two by the share of its iterations that came after the parting, as counted "
                "in this run: that is why its figure is <span class=\"kind kind-afterwards\">explained "
                "afterwards</span>, not a prediction made before.</p>",
                "<table><tr><th>job</th><th>together (ms)</th><th>apart (ms)</th><th>iterations apart</th>"
                f"<th>weighed (ms)</th><th>measured (ms)</th></tr>{rows}</table>"]
    if met:
        rows = "".join(f"<tr><td>{_e(p)}</td><td>{_e(j)}</td><td class=\"num\">{r.met_share_first:.0%}</td>"
                       f"<td class=\"num\">{r.met_share_last:.0%}</td></tr>" for p, j, r in met)
        out += ["<p>How much of each burst's data went beside another job's data on a link they share, in "
                "the first and the last third of the run. Falling from first to last: the jobs were sorting "
                "themselves apart. Rising: they fell into step. Under <code>shift</code> and <code>gate</code> "
                "it should stay near 0 % when the schedule is feasible.</p>",
                "<table><tr><th>policy</th><th>job</th><th>data beside another job: first third</th>"
                f"<th>last third</th></tr>{rows}</table>"]
    return out


def _check(ok: bool) -> str:
    return "<span class=\"ok\">✓</span>" if ok else "<span class=\"bad\">✗</span>"


def fidelity(results: Results) -> list[str]:
    """Fidelity in words: did the emulated network deliver what the scenario asked for?"""
    summary = results.summary
    f, checks = summary.fidelity, summary.crosschecks
    measured = f.solo_rate_ratio is not None or f.capture_drops is not None
    verdict = ("<span class=\"ok\">kept</span>" if summary.fidelity_ok else
               "<span class=\"bad\">lost</span>" if measured else "<span class=\"bad\">not confirmed</span>")
    out = ["<h2 id=\"fidelity\">Fidelity: did the emulator deliver what the scenario asked for?</h2>",
           "<p>The network here is emulated by software on a small machine. If it cannot carry the bursts at "
           "the rate the scenario configured, or the machine is too busy to keep the jobs' time, the numbers "
           "above describe the emulator's limits rather than the ideas being tested. So the run checks "
           f"itself. Fidelity: {verdict}.</p>", "<ul>"]
    ratio = f.solo_rate_ratio
    if ratio is None:
        out.append("<li>The rate of a job's bursts alone was not measured.</li>")
    else:
        out.append(f"<li>{_check(ratio >= SOLO_RATE_MIN)} Alone on the network, each job's bursts reached at "
                   f"least {ratio:.0%} of the rate its configured links give it (it must be at least "
                   f"{SOLO_RATE_MIN:.0%}).</li>")
    if f.capture_drops is not None:
        out.append(f"<li>{_check(f.capture_drops == 0)} The packet capture, which every bandwidth figure comes "
                   f"from, dropped {f.capture_drops} packets (it must drop none).</li>")
    if f.unmeasured_jobs:
        out.append(f"<li>{_check(False)} The bursts of {_e(', '.join(f.unmeasured_jobs))} were too short to "
                   "measure a rate.</li>")
    if f.overrun_jobs:
        out.append(f"<li>{_check(False)} Alone, {_e(', '.join(f.overrun_jobs))} could not keep their periods "
                   "(more than a quarter over).</li>")
    if f.host_steal_pct:
        worst = max(f.host_steal_pct.values())
        limit = f.host_steal_max_pct or 0
        out.append(f"<li>{_check(not f.disturbed)} The virtual machine's host took up to {worst:.1f} % of its CPU "
                   f"during a measurement (steal time); a measurement with more than {limit:g} % is taken "
                   f"again{', and ' + _e(', '.join(f.disturbed)) + ' stayed disturbed every time' if f.disturbed else ''}"
                   f"{f' ({len(f.measured_again)} taken again)' if f.measured_again else ''}.</li>")
    drift = {j: pct for j, pct in f.speed_drift_pct_of_period.items() if pct is not None}
    if drift:
        out.append(f"<li>{_check(not f.drifted)} The machine's speed: between calibration and the policies, "
                   "each job's undisturbed bursts took this much longer (as a share of its period): "
                   f"{_e(', '.join(f'{j} {pct:+.1f} %' for j, pct in drift.items()))}. Beyond "
                   f"{f.drift_max_pct or 0:g} % a job no longer runs at the period it was calibrated to "
                   "(the model follows the drift; a <code>shift</code> on the wire may not).</li>")
    out += _crosschecks(checks.to_dict())
    out.append("</ul>")
    if not summary.fidelity_ok and measured:
        remedies = ([f.advice] if f.advice else []) + list(FIDELITY_REMEDIES)
        out.append("<p>What to change for a faithful run:</p><ul>"
                   + "".join(f"<li>{_e(r)}</li>" for r in remedies) + "</ul>")
    return out


CROSSCHECK_WORDS = {
    "capture_vs_iperf_bytes_err_pct": "The bytes the capture saw against the bytes the senders (iperf3) "
                                      "reported sending",
    "capture_vs_portstats_util_err_pct": "The link's use measured from the capture against the switch's own "
                                         "port counters",
}


def _crosschecks(checks: dict) -> list[str]:
    out = []
    for name, value in checks.items():
        words = CROSSCHECK_WORDS.get(name)
        bound = CROSSCHECK_BOUNDS_PCT.get(name)
        if words and bound is not None and isinstance(value, int | float):
            out.append(f"<li>{_check(abs(value) <= bound)} {words}: they differ by {value:.2f} % "
                       f"(within ±{bound:g} % means the measurement is consistent).</li>")
        elif name == "gate_bytes_in_window" and isinstance(value, dict):
            shares = ", ".join(f"{j} {v:.1%}" for j, v in value.items() if isinstance(v, int | float))
            out.append(f"<li>Under <code>gate</code>, the share of each job's bytes that crossed in its windows: "
                       f"{_e(shares)}.</li>")
    return out
