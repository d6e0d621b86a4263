"""Calibration: each job alone, its bursts sized to fit ``comm_ms`` and its solo iteration set just under its period.

A burst is a fixed start-up cost (process start, iperf3's control exchange:
docs/gate.md) plus data at the rate the fabric delivers. Each solo run
measures both; the fill is corrected until a solo burst takes
:data:`BURST_TARGET` × ``comm_ms`` (± :data:`BURST_TOLERANCE`), leaving margin
so that a gated burst ends inside its window. Then the compute phase is set
so that a solo iteration takes ``1 − PERIOD_MARGIN`` of the period, checked on
the solo run the model draws from (:func:`period_correction`), and what is
left of the error trimmed off (:func:`trimmed_to_target`). The figures of
that last solo run are the job's solo figures (:attr:`Calibration.solo`).

A pattern job's phases keep the size the run gives them (``fill`` of each phase's
link time at the model's rate, ``apps.jobmodel.pattern_phases``): one solo run,
no re-sizing; its compute phase is set as a classic job's, its communication
counted from the iteration's origin.
"""

from __future__ import annotations

import logging
import time
from dataclasses import replace

import numpy as np
import pandas as pd

from apps.iterations import iteration_table
from scenarios.analysis import tables as analysis
from scenarios.experiment.counts import (
    CALIBRATION_ITERATIONS,
    MODEL_CALIBRATION_ITERATIONS,
    PERIOD_CORRECTIONS,
    SIZING_ROUNDS,
)
from scenarios.experiment.drive import MEASURE_ATTEMPTS, START_IN_S, Measurer, job_view
from scenarios.experiment.patternprediction import solo_phases_ms
from scenarios.experiment.prediction import typical_lead_ms
from scenarios.experiment.progress import calibrated_line, figures_line, stages

log = logging.getLogger(__name__)

BURST_TARGET = 0.7  # a solo burst (start-up included) should take this share of comm_ms ...
BURST_TOLERANCE = 0.1  # ... give or take this share (else the fill is corrected again)
PERIOD_MARGIN = 0.04  # an emulated job's solo iteration is this share shorter than its period
# ... give or take this share of the period, else its compute phase is moved by
# the difference and the solo run measured again. The fill of the last sizing
# round is never measured before the compute phase is set from it; in one
# classroom run alpha came out at 299.7 ms for 300 and its gated run missed 14
# of 24 windows (measured 2026-12-01, docs/accuracy.md).
PERIOD_TOLERANCE = 0.02
# Fidelity asks whether the fabric delivers its configured rate, so the first
# part of each solo burst (a fresh TCP connection's slow start, which real
# networks share) is left out of the sustained rate; the whole-burst rate is
# recorded beside it.
SLOW_START_SHARE = 0.25
# A burst's data should reach its leaf just after its window opened there, never
# before: edges take effect 1-3 ms after their time (docs/gate.md), and data
# that meets a closed gate (in floor mode, a token bucket of 31 KB at 2 % of the
# link) loses its 8 948-byte segments while smaller ones pass; now and then TCP
# then waits for retransmission timeouts past the window's end (600 ms). Each job
# launches its own solo lead (launch -> first data packet; the median,
# prediction.typical_lead_ms) minus this guard early; with one lead for all
# jobs (their mean), the job with the shorter lead sent ~2 ms before its window
# (measured 2026-11-30, docs/accuracy.md).
LAUNCH_GUARD_MS = 3.0


def launch_leads_ms(solo: dict[str, dict]) -> dict[str, float]:
    """Per job, how early it launches a burst before its window or offset: its solo lead less
    :data:`LAUNCH_GUARD_MS` (``solo``: each job's solo figures). Negative for a job whose data
    follows its launch by less than the guard (standing connections: under a millisecond), which
    then launches after its window opens, so its data still meets an open gate."""
    return {name: typical_lead_ms(figures) - LAUNCH_GUARD_MS for name, figures in solo.items()}


def with_phase(spec, phase_ms: float):
    """``spec`` with a communication phase of ``phase_ms`` and the same bytes per burst, so that
    its compute phase is ``period − phase_ms``; None when no such job exists (fill > 1, or no compute)."""
    if not 0 < phase_ms < spec.period_ms or spec.fill * spec.comm_ms > phase_ms:
        return None
    try:
        return replace(spec, comm_ms=phase_ms, fill=spec.fill * spec.comm_ms / phase_ms)
    except ValueError:  # a pattern job's last phase would start past its communication
        return None


def period_correction(spec, solo_iteration_ms: float):
    """``spec`` with its compute phase moved so its solo iteration lands on ``(1 − PERIOD_MARGIN)``
    of its period; None when it is already within :data:`PERIOD_TOLERANCE` of that (or cannot move).

    The compute phase is a fixed sleep, so moving it moves the solo iteration by as much."""
    target_ms = (1 - PERIOD_MARGIN) * spec.period_ms
    error_ms = solo_iteration_ms - target_ms
    if abs(error_ms) <= PERIOD_TOLERANCE * spec.period_ms:
        return None
    return with_phase(spec, spec.comm_ms + error_ms)


def trimmed_to_target(spec, solo: dict):
    """``spec`` and its ``solo`` figures with the compute phase moved by what is left of the solo
    iteration's error after :func:`period_correction` (at most :data:`PERIOD_TOLERANCE`), so every
    job's solo iteration is exactly ``(1 − PERIOD_MARGIN)`` of its period. Unchanged if it cannot move.

    No new measurement is needed: the compute phase is a fixed sleep, so the solo
    iteration moves by exactly as much and the bursts not at all. It matters under
    a static shift: each job within 2 % of its own target (up to 24 ms per 600 ms
    between classroom alpha and beta) left alpha at 285 ms and beta at 578, 8 ms
    apart per 600 ms; with the machine's drift they moved 20 ms apart per 600 ms
    under `shift` and met after 3 s. Lab 3's `shift` met bursts in 16 % of busy
    bins where it promises at most 8 % (measured 2026-12-02, docs/accuracy.md)."""
    target_ms = (1 - PERIOD_MARGIN) * spec.period_ms
    trimmed = with_phase(spec, spec.comm_ms + solo["iteration_ms"] - target_ms)
    if trimmed is None:
        return spec, solo
    return trimmed, {**solo, "iteration_ms": target_ms, "measured_iteration_ms": solo["iteration_ms"],
                     "compute_trim_ms": trimmed.compute_ms - spec.compute_ms}


class Calibration:
    """Each job alone: its sized spec, its solo figures and bursts, its launch lead.

    Filled job by job, so a run stopped during calibration still reports the
    jobs calibrated so far.
    """

    def __init__(self):
        self.solo: dict[str, dict] = {}  # per job: the figures of the solo run the model draws from
        self.solo_spans: dict[str, pd.DataFrame] = {}  # per job: the bursts of that solo run
        self.launch_lead_ms: dict[str, float] = {}  # per job: launch this early so its data meets its offset
        self._runs: dict[str, int] = {}  # per job: solo runs so far (each has its own raw folder)
        self.solo_dirs: dict[str, str] = {}  # per job: the raw folder of the solo run its figures come from

    def run(self, measurer: Measurer, specs, on_job=None, known=None) -> list:
        """Calibrate every job of ``specs`` in turn; returns the specs sized and phased.
        ``on_job(name)`` is called as each job's calibration starts (the display's stages); ``known``:
        the batch's calibrations (``reuse.ScenarioCalibrations``), a job's reused when its shape is there
        and kept there when measured."""
        sized = []
        for spec in specs:
            if on_job is not None:
                on_job(spec.name)
            found = known.lookup(spec.name) if known is not None else None
            if found is not None:
                spec = self._reuse(measurer, spec, found)
            else:
                spec, solo, nominal = self._size_bursts(measurer, spec)
                spec, solo = self._set_period(measurer, spec, solo)
                self.solo[spec.name] = {**solo, "fill": spec.fill, **nominal}
                if known is not None:
                    known.keep(spec.name, spec, self.solo[spec.name], self.solo_spans[spec.name],
                               self.solo_dirs[spec.name])
            sized.append(spec)
            stages.info("%s", calibrated_line(spec.name, spec.period_ms, self.solo[spec.name]))
            log.info("%s", figures_line(spec.name, self.solo[spec.name]))
        self.launch_lead_ms = launch_leads_ms(self.solo)
        return sized

    def _reuse(self, measurer: Measurer, spec, found):
        """``spec`` as ``found`` (a calibration of the same shape, ``reuse.py``) sized it; its figures and
        bursts this job's, its kept solo run linked into this run's raw/ under its own name."""
        from scenarios.experiment.reuse import link_tree

        link_tree(found.stored, measurer.raw_dir / found.run)
        self.solo_dirs[spec.name] = str(measurer.raw_dir / found.run)
        self.solo_spans[spec.name] = found.spans
        self.solo[spec.name] = {**found.solo, "reused_from": found.scenario}
        stages.info("calibration of %s reused from %s (the same job shape on the same fabric)", spec.name,
                    found.scenario)
        return replace(spec, comm_ms=found.comm_ms, fill=found.fill)

    @property
    def launch_overhead_ms(self) -> dict[str, float]:
        """Per job calibrated so far: a burst's usual launch overhead alone (``apps.dltjob.JobDriver.compute_s``)."""
        return {name: figures["launch_overhead_ms"] for name, figures in self.solo.items()
                if figures.get("launch_overhead_ms") is not None}

    def _size_bursts(self, measurer: Measurer, spec) -> tuple:
        """Correct the fill until a solo burst takes ``BURST_TARGET`` of ``comm_ms``, at most
        ``SIZING_ROUNDS`` solo runs; returns the spec, the last run's figures and the first run's
        rate and stolen CPU (the scenario's own burst size: the fidelity figure)."""
        nominal_mbps = nominal_steal = nominal_peak = None
        for _ in range(1 if spec.phases else SIZING_ROUNDS):  # a pattern job's phases keep their size
            solo = self._solo(measurer, spec)
            if nominal_mbps is None:  # the scenario's own burst size, before any re-sizing
                nominal_mbps, nominal_steal = solo["sustained_mbps"], solo["host_steal_pct"]
                nominal_peak = solo["host_steal_peak_pct"]
            if abs(solo["comm_ms"] / spec.comm_ms - BURST_TARGET) <= BURST_TOLERANCE:
                break
            data_target_ms = max(BURST_TARGET * spec.comm_ms - solo["startup_ms"], 0.2 * spec.comm_ms)
            fill = spec.fill * data_target_ms / max(solo["data_ms"], 1e-3)
            spec = replace(spec, fill=min(1.0, max(0.02, fill)))
        nominal = {"nominal_sustained_mbps": nominal_mbps, "nominal_host_steal_pct": nominal_steal,
                   "nominal_host_steal_peak_pct": nominal_peak}
        return spec, solo, nominal

    def _set_period(self, measurer: Measurer, spec, solo: dict) -> tuple:
        """The compute phase set so the solo iteration is ``1 − PERIOD_MARGIN`` of the period.

        The scenario's period is the solo iteration time: compute for period −
        (the burst's measured length) − a small margin, with the same bytes, so
        a gated job is ready a little before its next window (a job even 1 ms
        slower than its window period misses every other window). The margin
        is a share of the period, so commensurate periods stay commensurate.
        """
        origin_ms = spec.phases[0][0] if spec.phases else 0.0  # a pattern job's first phase is this far in
        rephased = with_phase(spec, origin_ms + solo["comm_ms"] + PERIOD_MARGIN * spec.period_ms)
        if rephased is None:
            return spec, solo
        spec = rephased
        solo = self._solo(measurer, spec, MODEL_CALIBRATION_ITERATIONS)
        for _ in range(PERIOD_CORRECTIONS):
            corrected = period_correction(spec, solo["iteration_ms"])
            if corrected is None:
                break
            log.info("solo %s: %.1f ms per iteration for a %.0f-ms period; compute moved by %.1f ms",
                     spec.name, solo["iteration_ms"], spec.period_ms, spec.compute_ms - corrected.compute_ms)
            spec = corrected
            solo = self._solo(measurer, spec, MODEL_CALIBRATION_ITERATIONS)
        return trimmed_to_target(spec, solo)

    def _solo(self, measurer: Measurer, spec, iterations: int = CALIBRATION_ITERATIONS) -> dict:
        """One job alone for ``iterations`` iterations: its solo figures (ms) and burst rate (Mbit/s)."""
        from apps.jobmodel import JobPlan

        # One folder per solo run: two runs of a job at the same fill once shared one, their
        # rows were read as one run's, and the model got 2.8-s iterations for a 300-ms job.
        for attempt in range(1, MEASURE_ATTEMPTS + 1):  # a run the host disturbed is kept, and run again
            self._runs[spec.name] = self._runs.get(spec.name, 0) + 1
            run_dir = measurer.work_dir("solo", spec.name, str(self._runs[spec.name]), f"{spec.fill:.3f}")
            plan = JobPlan("none", time.time() + START_IN_S, 0.0, spec.period_ms, spec.comm_ms)
            # alone, a job has no window to launch early into: no launch lead, no late launch
            measured = measurer.drive([spec], run_dir, f"solo {spec.name}", plans={spec.name: plan},
                                      iterations=iterations)
            if not measured.steal.disturbed or attempt == MEASURE_ATTEMPTS:
                break
            measurer.measure_again(f"solo {spec.name}", attempt, run_dir, measured.steal)
        self.solo_dirs[spec.name] = run_dir
        home = measurer.links.home[spec.name].name
        return self._figures(spec, measured, measurer.home_senders([spec])[spec.name], home)

    def _figures(self, spec, measured, senders: set[str], home: str) -> dict:
        """The solo figures of one kept solo run (:func:`solo_figures`) with the CPU the host took
        meanwhile; its bursts become the job's solo bursts."""
        figures, spans = solo_figures(spec, measured.rows, measured.captures, senders, home, measured.phase_rows)
        self.solo_spans[spec.name] = spans  # the last solo run of a job is the one kept
        steal = measured.steal
        return {**figures, "host_steal_pct": round(steal.mean_pct, 2), "host_steal_peak_pct": round(steal.peak_pct, 2)}


def solo_figures(spec, rows: pd.DataFrame, captures: dict, senders: set[str], home: str,
                 phase_rows: pd.DataFrame | None = None) -> tuple[dict, pd.DataFrame]:
    """One solo run's figures and bursts (``analysis.burst_spans``), from its drivers' ``rows`` and its
    ``captures`` (port name -> packets, jobs: ``drive.Measurement.captures``). Its rate is the rate of
    its packets leaving its ``home`` port's leaf through that port (``senders``): a burst's, or for a
    pattern job each phase's (``phase_rows``; the idle time between its phases is not the link's)."""
    packets, labels = job_view(captures)
    it = iteration_table(rows)
    steady = it[it["iteration"] >= 1]
    on_home, home_labels = captures[home]
    sent = steady
    if spec.phases and phase_rows is not None and not phase_rows.empty:
        mine = phase_rows[(phase_rows["job"] == spec.name) & (phase_rows["iteration"] >= 1)]
        sent = mine.rename(columns={"launch": "comm_start", "end": "comm_end"})
    rates = analysis.burst_rates_mbps(on_home, home_labels, sent, senders)
    sustained = analysis.burst_rates_mbps(on_home, home_labels, sent, senders, skip_fraction=SLOW_START_SHARE)
    spans = analysis.burst_spans(packets, labels, steady, it)
    first_ms, data_ms = analysis.burst_spans_ms(spans, steady)
    # Medians: a slow process start now and then is not the burst. The compute
    # phase is a fixed sleep, so the median iteration is compute + median burst;
    # a mean pulled up by one slow burst (302 ms for a 300 ms job) had a gated
    # job miss every window in the model when it is on time in most.
    comm_ms = float(steady["comm_ms"].median())
    overheads = rows[rows["iteration"] >= 1].groupby("iteration")["launch_overhead_ms"].first().dropna()
    return {"launch_overhead_ms": float(overheads.median()) if len(overheads) else None,
            "iteration_ms": float(steady["iteration_ms"].median()), "comm_ms": comm_ms, "data_ms": data_ms,
            "startup_ms": comm_ms - data_ms, "lead_ms": first_ms,
            "burst_mbps": float(np.median(rates)) if len(rates) else 0.0,
            "sustained_mbps": float(np.median(sustained)) if len(sustained) else 0.0,
            "link_samples_ms": analysis.link_time_samples_ms(spans),
            "after_samples_ms": analysis.after_time_samples_ms(spans),
            "late_samples_ms": analysis.late_time_samples_ms(spans),
            "bursts": len(steady), "stalled_bursts": analysis.stalled_bursts(steady["comm_ms"]),
            **({"phases_ms": solo_phases_ms(spec, phase_rows)} if spec.phases else {}),
            **analysis.burst_medians_ms(spans).get(spec.name, {})}, spans
