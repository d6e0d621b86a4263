"""The fidelity verdict: did the emulated fabric deliver what the scenario configured, and if not, what to change.

Fidelity asks whether the fabric carries the scenario's bursts at its link
rate, so it is measured on each job's first solo run, at the scenario's burst
size (``fill`` of comm_ms at the link rate). Calibration then shortens the
bursts to make room for process start-up; a 10-packet burst's rate measures
one scheduling pause more than the fabric (docs/accuracy.md). A job whose
bursts carry too few packets for a rate (``analysis.burst_rates_mbps``) is
unmeasured, not "0 %". Fidelity is lost too when a job alone overran its
period, when the capture dropped packets, when the machine's host took its
CPU in every attempt at a measurement, or when jobs that share no link slowed
each other (the machine's cores, not a link: :data:`APART_SLOWDOWN_MAX`).
"""

from __future__ import annotations

import pandas as pd

from apps import hoststeal
from scenarios.analysis import tables as analysis
from scenarios.experiment.calibration import PERIOD_TOLERANCE
from scenarios.experiment.drive import MEASURE_ATTEMPTS, MeasureLog
from scenarios.experiment.prediction import keeps_clock
from scenarios.summary_record import FidelitySummary

FIDELITY_MIN_RATIO = 0.90  # realised solo burst rate / the rate the configured links give it
# Calibration makes each job's solo iteration ~4 % shorter than its period
# (PERIOD_MARGIN; a parameter server measured up to 3.8 % over it). A job this far
# over its period alone is a calibration gone wrong or a job this emulator cannot
# run (two solo runs once shared a folder: 9.2 times the period, docs/accuracy.md).
SOLO_OVERRUN_SHARE = 0.25
# A burst whose job meets no one then sending shares no link, so the model has it go as
# fast as alone. On this emulator every switch shares the machine's two cores: beside
# jobs it never meets, a job's data phase is allowed this much longer than alone (its
# solo bursts vary by a few per cent) before the machine, not the links, is the bottleneck.
APART_SLOWDOWN_MAX = 1.15


def overrun_jobs(solo: dict[str, dict], period_ms: dict[str, float]) -> list[str]:
    """Jobs whose solo iteration exceeds their period by more than :data:`SOLO_OVERRUN_SHARE`."""
    return sorted(n for n, s in solo.items() if s["iteration_ms"] > (1 + SOLO_OVERRUN_SHARE) * period_ms[n])


def measurement_steal(solo: dict[str, dict], policy_steal: dict[str, dict], peak: bool = False) -> dict[str, float]:
    """The host's stolen CPU (%) during each kept measurement fidelity rests on: each job's first
    solo run (its rate is the fidelity figure: in one h7-triple run job a's came at 38.5 of 50 Mbit/s
    with 12.3 % stolen in all three attempts), the solo run the model draws from, each policy.
    With ``peak``, the worst second of each (what a mean over a whole run hides)."""
    key = "host_steal_peak_pct" if peak else "host_steal_pct"
    steal = {f"first solo {n}": s[f"nominal_{key}"] for n, s in solo.items() if f"nominal_{key}" in s}
    steal.update({f"solo {n}": s[key] for n, s in solo.items() if key in s})
    steal.update({p: st["peak_pct" if peak else "mean_pct"] for p, st in policy_steal.items()})
    return steal


def fidelity_advice(solo: dict[str, dict], link_mbps: float, ratio: float | None, unmeasured: list[str],
                    drops: int, overrun: dict[str, float] | None = None,
                    disturbed: dict[str, float] | None = None, slowed: dict[str, float] | None = None) -> str:
    """What to change when fidelity is lost, one sentence per cause.

    ``overrun``: the period (ms) of each job whose solo iteration exceeded it;
    ``disturbed``: the stolen CPU (%) of each measurement the host disturbed in every attempt;
    ``slowed``: each job's data phase beside jobs it never meets, over alone.
    """
    parts = []
    if slowed:
        why = ", ".join(f"{n} {100 * (r - 1):.0f} %" for n, r in slowed.items())
        parts.append(f"beside jobs they share no link with, the bursts of {', '.join(slowed)} took longer than "
                     f"alone ({why}): the machine's cores, not a link, slowed them; lower the link rates or run "
                     "fewer jobs at once")
    if disturbed:
        why = ", ".join(f"{what} {pct:.0f} %" for what, pct in disturbed.items())
        parts.append(f"this machine's host took more than {hoststeal.MAX_STEAL_PCT:g} % of its CPU in all "
                     f"{MEASURE_ATTEMPTS} attempts at {', '.join(disturbed)} ({why}); run again when the host "
                     "is quieter, or give the machine more cores of its own")
    if overrun:
        why = "; ".join(f"{n}: {solo[n]['iteration_ms']:.0f} ms per iteration for a {period:.0f}-ms period"
                        for n, period in overrun.items())
        parts.append(f"alone, {', '.join(overrun)} could not keep their periods ({why}); give them a longer "
                     "comm_ms or period, or look in raw/ for a burst that stalled")
    if unmeasured:
        why = "; ".join(f"{n}: {solo[n]['data_ms']:.0f} ms of data after {solo[n]['startup_ms']:.0f} ms of "
                        "process start-up" for n in unmeasured)
        parts.append(f"the solo bursts of {', '.join(unmeasured)} were too short to measure a rate ({why}); "
                     "give those jobs a longer comm_ms")
    if ratio is not None and ratio < FIDELITY_MIN_RATIO:
        parts.append(f"solo bursts reached only {ratio:.0%} of the rate the {link_mbps:g}-Mbit/s links give them; "
                     "lower the link rates, keep jumbo frames, or use fewer concurrent flows")
    if drops:
        parts.append(f"tcpdump dropped {drops} packets; capture fewer links or lower the link rates")
    return "; ".join(parts) or "fidelity was not confirmed"


def judge_fidelity(solo: dict[str, dict], solo_spans: dict[str, pd.DataFrame], policy_bursts: pd.DataFrame,
                   expected_solo_mbps: dict[str, float], link_mbps: float, period_ms: dict[str, float],
                   policy_steal: dict[str, dict], notes: MeasureLog,
                   meets: set[frozenset] | None = None) -> tuple[bool, FidelitySummary]:
    """The verdict and its figures, from calibration's ``solo`` figures and bursts, every policy's
    bursts (``policy_bursts``), each job's planned solo rate and period, what measuring noticed, and
    which pairs of jobs share a link (``meets``; None: all, on one link)."""
    rates = {name: s["nominal_sustained_mbps"] for name, s in solo.items()}
    unmeasured = sorted(name for name, mbps in rates.items() if not mbps)
    # against what the configured links give the job's flows on the shared link (a parameter
    # server's flows share its link, so each gets a part of the rate)
    ratio = min((mbps / (expected_solo_mbps.get(name) or link_mbps) for name, mbps in rates.items() if mbps),
                default=None)
    drops = notes.capture_drops
    overrun = overrun_jobs(solo, period_ms)
    steal = measurement_steal(solo, policy_steal)
    disturbed = {what: pct for what, pct in steal.items() if pct > hoststeal.MAX_STEAL_PCT}
    # Not part of fidelity_ok: the fabric may still carry its rate, and the model's figures
    # follow the drift (pooled_solo). But a job that drifted further than calibration's own
    # tolerance did not run at the period it was calibrated to, and the report says so.
    drift_ms = analysis.speed_drift_ms(solo_spans, policy_bursts,
                                       frozenset(name for name, figures in solo.items() if keeps_clock(figures)))
    drift_pct = {n: None if ms is None else round(100 * ms / period_ms[n], 2) for n, ms in drift_ms.items()}
    drifted = sorted(n for n, pct in drift_pct.items() if pct is not None and abs(pct) > 100 * PERIOD_TOLERANCE)
    apart = (analysis.apart_slowdown(policy_bursts, {n: s["data_ms"] for n, s in solo.items()}, meets)
             if meets is not None else {})
    slowed = {n: r for n, r in apart.items() if r is not None and r > APART_SLOWDOWN_MAX}
    fidelity_ok = (bool(solo) and not unmeasured and not overrun and ratio >= FIDELITY_MIN_RATIO
                   and drops == 0 and not disturbed and not slowed)
    advice = (fidelity_advice(solo, link_mbps, ratio, unmeasured, drops,
                              {n: period_ms[n] for n in overrun}, disturbed, slowed) if not fidelity_ok else None)
    return fidelity_ok, FidelitySummary(
        solo_rate_ratio=ratio, expected_solo_mbps=expected_solo_mbps, unmeasured_jobs=tuple(unmeasured),
        overrun_jobs=tuple(overrun), capture_drops=drops, advice=advice,
        host_steal_pct=steal, host_steal_max_pct=hoststeal.MAX_STEAL_PCT,
        host_steal_peak_pct=measurement_steal(solo, policy_steal, peak=True),
        disturbed=tuple(sorted(disturbed)), measured_again=tuple(notes.measured_again),
        speed_drift_pct_of_period=drift_pct, drifted=tuple(drifted), drift_max_pct=100 * PERIOD_TOLERANCE,
        solo=solo, apart_slowdown={n: None if r is None else round(r, 3) for n, r in apart.items()},
        slowed_apart=tuple(sorted(slowed)), apart_slowdown_max=APART_SLOWDOWN_MAX)
