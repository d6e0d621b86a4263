"""A run's prediction for pattern jobs: the pattern fluid model fed with what calibration measured.

Each job is what its solo run measured (``calibration.solo_figures``, ``phases_ms``): its solo
iteration (median) and each phase at its offset, as long as that phase took alone (launch to its
last byte at the receivers, median over the solo iterations after the first); the computation after
the last phase waits for it, as the driver's next iteration waits for the phase's end
(``patternfluid.PatternFluidJob``, the rectangle's rule). A job of one burst is one phase at 0. The
offsets are those the policy ran with; ``gate``'s windows are the scheduler's, one per busy arc of each
job's on-grid pattern (``spec.busy_patterns``), from the offset the job ran with. Phases that meet
share the link as the transport shares it (``prediction.WIRE_SHARING``: max-min fair over standing
connections), with each job's measured headroom (link rate / its solo rate), or the fabric's links
where the run captured several (``runlinks.RunLinks.model_links``).

The range is the prediction with every phase as long as its solo run's 25th and 75th percentile.
The mean is over the span the wire's covers (from the end of the first iteration, as many
iterations as the run measured). What the one-burst model adds for iperf3's bursts (busy starts,
the other policies' quiet bursts, jobs together or apart) is not modelled here: a phase starts no
process and opens no connection.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

from controller.theory.fabricshare import JobLinks
from controller.theory.patternfluid import PatternFluidJob, PatternWindows, simulate_patterns
from controller.theory.policies import get_policy
from controller.theory.schedule import Schedule

QUANTILES = (0.25, 0.5, 0.75)  # each phase's solo length: the range's low end, the prediction, its high end


def solo_phases_ms(spec, phase_rows: pd.DataFrame) -> list[list[float]]:
    """Each phase of a pattern job's solo run as ``[offset_ms, p25_ms, median_ms, p75_ms]``: its offset
    after the computation and how long it took alone (launch to last byte), over the iterations after
    the first (``phase_rows``: the drivers' phase rows, ``apps.jobmodel.PHASE_CSV_FIELDS``)."""
    mine = phase_rows[(phase_rows["job"] == spec.name) & (phase_rows["iteration"] >= 1)]
    took_ms = (mine["end"] - mine["launch"]) * 1000
    return [[float(offset_ms), *(float(took_ms[mine["phase"] == i].quantile(q)) for q in QUANTILES)]
            for i, (offset_ms, _) in enumerate(spec.phases)]


def pattern_fluid_job(name: str, solo: dict, link_mbps: float, quantile: int = 1) -> PatternFluidJob:
    """The model's job from its solo figures: ``quantile`` 0, 1 or 2 takes each phase's p25, median or p75
    (a job of one burst without ``phases_ms``: its median burst, ``comm_ms``, for all three)."""
    headroom = max(1.0, link_mbps / solo["burst_mbps"]) if solo.get("burst_mbps") else 1.0
    measured = solo.get("phases_ms") or [[0.0, *[solo["comm_ms"]] * len(QUANTILES)]]  # one burst: its median
    phases = tuple((p[0], max(p[1 + quantile], 0.01)) for p in measured)
    return PatternFluidJob(name, solo["iteration_ms"], phases, None, headroom)


def predict_pattern_run(schedule: Schedule, solo: dict[str, dict], patterns: Mapping[str, object], policy: str,
                        offsets_ms: dict[str, float], iterations: Mapping[str, int], link_mbps: float, *,
                        sharing: str = "fair", links: JobLinks | None = None,
                        ) -> tuple[dict[str, float], dict[str, tuple[float, float]]]:
    """Each job's predicted mean iteration time under ``policy`` and its (low, high) range (module
    docstring). ``patterns``: each job's on-grid busy pattern (``arcs.Pattern``) the scheduler used."""
    names = [j.name for j in schedule.jobs]
    unmeasured = [n for n in names if "phases_ms" not in solo[n] and patterns[n].arcs != ((0, patterns[n].busy_q),)]
    if unmeasured:  # e.g. a calibration reused from a run that did not measure each phase
        raise ValueError(f"{', '.join(unmeasured)}: the solo figures hold no phase lengths (phases_ms)")
    by_quantile = [_means(schedule, [pattern_fluid_job(n, solo[n], link_mbps, k) for n in names], patterns,
                          policy, offsets_ms, iterations, sharing, links) for k in range(len(QUANTILES))]
    predicted = by_quantile[1]
    return predicted, {n: (min(m[n] for m in by_quantile), max(m[n] for m in by_quantile)) for n in names}


def _means(schedule: Schedule, jobs: Sequence[PatternFluidJob], patterns: Mapping[str, object], policy: str,
           offsets_ms: dict[str, float], iterations: Mapping[str, int], sharing: str,
           links: JobLinks | None) -> dict[str, float]:
    pol = get_policy(policy)
    windows = ({j.name: PatternWindows.from_pattern(offsets_ms[j.name], patterns[j.name], schedule.quantum_ms)
                for j in jobs} if pol.realigns() else None)
    first_ms = max(j.period_ms for j in jobs)  # the wire's means start after the first iteration
    horizon_ms = max(max(1, iterations.get(j.name, 1)) * j.period_ms for j in jobs)
    out = simulate_patterns(jobs, offsets_ms, windows, horizon_ms=horizon_ms, warmup_ms=first_ms,
                            waits=pol.waits_for_window, enforce=pol.enforces_windows,
                            sharing=pol.link_sharing(sharing), priority=pol.priority_order(schedule), links=links)
    return {name: result.mean_iteration_ms for name, result in out.items()}
