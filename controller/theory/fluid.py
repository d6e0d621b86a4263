"""Fluid model of contention: what each policy does to iteration times on a shared link.

Assumptions (the emulator's measurements are compared against these):

- Every job's iteration is compute then communication: ``period - comm`` ms of computation, then a burst that
  takes ``comm`` ms alone at full link rate (a ring all-reduce, each worker sending ``2(N-1)/N × gradient``
  bytes; see ``controller/theory/zoo.py``). The next iteration starts when the burst ends.
- All bursts of all jobs cross one bottleneck link. While ``n`` bursts are on it, each gets ``1/n`` of the
  capacity (max-min fair), so overlapping bursts stretch and the realised periods grow (``links``: over a
  fabric, ``fabricshare``). A burst alone may not fill the link (a measured solo rate includes TCP's ramp-up):
  ``link_headroom`` (link rate / solo rate) says so, and each of ``n`` bursts runs at
  ``min(1, link_headroom / n)`` of its solo speed. A policy's ``sharing`` may say otherwise (strict priority,
  MLTCP weights: ``policies.link_shares``), and a run's model shares as TCP does on the emulated fabric
  (``"leader"``: the burst further along keeps more; ``scenarios.experiment.prediction.FAIR_ON_THE_WIRE``).
- ``none`` starts every job's first burst at t = 0, ``shift`` and ``gate`` at the schedule's shift, ``random``
  at a random on-grid offset; after that ``none``/``shift``/``random`` run free.
- ``gate``: a burst may only be on the link inside the job's windows ``[shift + k*T, shift + k*T + comm)``
  (the schedule's on-grid period and comm). A finished computation waits for the start of the job's next
  window; a burst still unfinished when its window closes pauses until the next one. With ``queue_ms`` (a run
  passes its fabric's port queue), what that burst already has queued on the link behind the gate still
  crosses it first, sharing the link with whoever's window opens next (see :func:`simulate`). So gate
  re-aligns every iteration, while a static shift computed from solo periods drifts once stretching happens
  (``phase_error_ms`` shows both).
- Any registered policy (``controller/theory/policies.py``) is simulated through the same three answers: its
  first-burst offsets, whether iteration ``k``'s burst waits for the job's next window start
  (``waits_for_window``), and whether the windows are enforced on the link (``enforces_windows``). A job's
  windows are ``[offset + k*T, offset + k*T + comm)`` on the schedule's grid; for ``gate`` the offset is the
  schedule's shift. A re-aligning policy that does not enforce its windows (e.g. wait for the window every
  K-th iteration) runs free in between and its bursts are never paused.
- A burst that starts while another job's burst is on the link may take longer than alone:
  ``FluidJob.busy_start_ms`` more of the link (0 by default); and a burst that was on the link beside
  another job's (on any link) may end later: ``busy_after_samples_ms`` more before the next computation.
  On the emulator its processes start and end slower while other jobs' bursts load the CPU, and its flows start apart.
- The jobs are simulated as they are (true, real-valued periods and bursts: the scenario's, or measured ones);
  only the schedule and its windows are on the grid. With measured bursts (``comm_samples_ms``) and an
  ``rng``, each burst draws its length from them (with ``after_samples_ms``, also how much longer its job then
  took), and :func:`mean_iterations` averages such runs.
- The mean iteration time is over a horizon (:func:`default_horizon_ms`: until the relative phases cycle)
  after a warm-up, or over a fixed count.

It is event-driven: time jumps from one burst start, burst end or window edge to the next, with constant rates
in between (in steps while weights that grow with the bytes sent move).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from fractions import Fraction

from controller.theory.fabricshare import JobLinks
from controller.theory.floatsum import left_to_right_sum
from controller.theory.fluidbursts import Bursts
from controller.theory.fluidjob import FluidJob, FluidWindow, LinkTrace, mean_iteration
from controller.theory.policies import (
    PROGRESS_GAIN,
    SHARING,
    Policy,
    PolicyKnobs,
    get_policy,
    link_shares,
)
from controller.theory.schedule import JobTiming, Schedule, compute_schedule
from controller.theory.unsimulated import Unsimulated, exception_line  # noqa: F401  (fluid.Unsimulated)

WARMUP_ITERATIONS = 2  # of the longest job, before the horizon starts
MIN_HORIZON_ITERATIONS = 40  # the horizon is at least this many periods of the longest job
MAX_HORIZON_ITERATIONS = 400  # ... and at most this many: where the lcm is longer, phases cycle too slowly to wait for
MLTCP_STEP_MS = 1.0  # the model's step while mltcp bursts share the link (halving it moves results < 0.5 %)


@dataclass(frozen=True)
class FluidJobResult:
    """What the fluid model predicts for one job under one policy (``scenarios/results.py`` holds what
    a run measured)."""

    name: str
    solo_period_ms: float
    iterations: int
    mean_iteration_ms: float
    throughput_per_s: float
    lag_ms: float  # last burst start minus where solo periods would have put it
    phase_error_ms: float  # that lag modulo the period, centred: 0 = still aligned


@dataclass(frozen=True)
class FluidPolicyResult:
    """What the fluid model predicts for all jobs under one policy."""

    policy: str
    offsets_ms: dict[str, float]
    jobs: dict[str, FluidJobResult]
    overlap_share: float = math.nan  # share of the time with two or more bursts moving data on the link
    overlap_by_link: dict = field(default_factory=dict)  # with JobLinks: that share on each shared link

    @property
    def normalised_throughput(self) -> float:
        """Mean over jobs of solo period / realised iteration time (1 = no slowdown)."""
        return left_to_right_sum(j.solo_period_ms / j.mean_iteration_ms for j in self.jobs.values()) / len(self.jobs)


def _check_inputs(jobs: Sequence[FluidJob], windows: dict[str, FluidWindow], sharing: str) -> None:
    """ValueError for a job, a window or a sharing the model cannot run."""
    for j in jobs:
        if not 0 < j.comm_ms < j.period_ms:
            raise ValueError(f"{j.name}: need 0 < comm_ms < period_ms, got {j.comm_ms}, {j.period_ms}")
        if not j.busy_start_ms >= 0.0 or any(not c >= 0.0 for c in j.busy_start_samples_ms):
            raise ValueError(f"{j.name}: busy_start_ms and busy_start_samples_ms must be >= 0, got "
                             f"{j.busy_start_ms}, {j.busy_start_samples_ms}")
        if any(not c >= 0.0 for _, samples in j.busy_after_samples_ms for c in samples):
            raise ValueError(f"{j.name}: busy_after_samples_ms must be >= 0, got {j.busy_after_samples_ms}")
        if not 0.0 <= j.lead_ms < math.inf:
            raise ValueError(f"{j.name}: lead_ms must be >= 0 and finite, got {j.lead_ms}")
        if not j.link_headroom >= 1.0:
            raise ValueError(f"{j.name}: link_headroom is link rate / solo rate, >= 1, got {j.link_headroom}")
        if any(not 0 < c < j.period_ms for c in j.comm_samples_ms):
            raise ValueError(f"{j.name}: every burst sample must be in (0, period_ms), got {j.comm_samples_ms}")
    for name, w in windows.items():
        if not 0 < w.length_ms <= w.period_ms:
            raise ValueError(f"{name}: need 0 < window length <= period, got {w.length_ms}, {w.period_ms}")
    if sharing not in SHARING:
        raise ValueError(f"sharing must be one of {', '.join(SHARING)}, got {sharing!r}")


def _ranks(jobs: Sequence[FluidJob], priority: Sequence[str]) -> list[int]:
    """Each job's place under ``"priority"`` sharing: ``priority``'s order first, then the others in job order."""
    order = {name: k for k, name in enumerate(priority)}
    return [order.get(j.name, len(order) + k) for k, j in enumerate(jobs)]


def simulate(jobs: Sequence[FluidJob], offsets_ms: dict[str, float],
             windows: dict[str, FluidWindow] | None = None, iterations: int | Mapping[str, int] = 40,
             warmup: int = 2, waits: Callable[[int], bool] | None = None,
             enforce: bool = True, queue_ms: float = 0.0,
             rng: random.Random | None = None, trace: list | None = None, *,
             horizon_ms: float | None = None, warmup_ms: float | None = None, sharing: str = "fair",
             priority: Sequence[str] = (), realign_ms: float | None = None,
             mltcp_step_ms: float = MLTCP_STEP_MS, stats: dict | None = None,
             links: JobLinks | None = None, link_trace: LinkTrace | None = None) -> dict[str, FluidJobResult]:
    """Run until every job has finished ``warmup + iterations`` bursts (or, with ``horizon_ms``, until
    every job has run past ``warmup_ms + horizon_ms``); per-job results.

    ``iterations``: one count for all (each mean over every burst after ``warmup``), or one per job
    (each mean over exactly that many: a run's, so that model and wire cover the same span of time).

    ``offsets_ms``: first burst start of each job (its computation starts ``period - comm`` earlier).
    ``windows``: the named jobs' windows; by default (``waits=None``, ``enforce=True``) they are gated: every
    burst waits for a window start and pauses when its window closes. ``waits(k)``: whether burst ``k`` (0 =
    first) waits for the next window start; ``enforce``: whether a burst may only be on the link inside a window.

    ``horizon_ms``: the mean iteration time is over the bursts that end in ``[warmup_ms, warmup_ms +
    horizon_ms]`` (``warmup_ms`` default: :data:`WARMUP_ITERATIONS` of the longest period); ``iterations`` and
    ``warmup`` are then not used. A job that cannot finish two bursts in twice that time is reported at an
    infinite iteration time.

    ``sharing``: how bursts that meet share the link (see :func:`link_shares`); ``priority``: job names,
    highest first, for ``"priority"``. With ``"mltcp"`` or ``"leader"`` rates change as bursts progress: the model steps at
    most ``mltcp_step_ms`` while two or more bursts share the link.

    ``realign_ms``: the first burst ready after every ``realign_ms`` of time waits for its job's next window
    start (plus ``fluidbursts.REALIGN_COST_MS``), the windows being ``windows`` (a run-free policy's re-alignment).

    ``queue_ms``: how much of a burst (ms at its solo rate) the link's queue holds behind the gate. While ``n
    >= 2`` bursts share the link, each arrives at its solo rate and is served at ``1/n``, so its queue grows
    at ``1 - 1/n`` up to ``queue_ms``; when its window closes, that queue still drains (at the fair share)
    before the burst pauses. Measured: two held jobs' 20 ms queues took the first ~60 ms of the next job's
    window at two thirds of the link (docs/accuracy.md). 0: bursts stop dead at the edge.

    ``rng``: each burst's length is drawn from its job's ``comm_samples_ms`` (see :meth:`FluidJob.draw`);
    without one, every burst is ``comm_ms``.

    ``trace``: if given, one ``(job, ready_ms, first_on_link_ms, end_ms)`` per finished burst is appended, to
    set beside a run's bursts burst by burst. ``stats``: if given, receives ``overlap_share`` (share of the
    measured span with two or more bursts moving data on the link), ``span_ms`` and ``warmup_ms`` (the span
    measured and where it starts). ``links``: the bursts share a fabric's links max-min fairly
    (``fabricshare.JobLinks``; no ``link_headroom``); ``stats`` then gets ``overlap_by_link`` and
    ``overlap_share`` is the busiest shared link's. ``link_trace``: gets every step (:class:`LinkTrace`).
    """
    windows = windows or {}
    waits = waits if waits is not None else (lambda k: True)
    _check_inputs(jobs, windows, sharing)
    rank = _ranks(jobs, priority)
    bursts = Bursts(jobs, offsets_ms, [windows.get(j.name) for j in jobs], waits, enforce, realign_ms, rng)
    length = RunLength.of(jobs, iterations, warmup, horizon_ms, warmup_ms, sharing, mltcp_step_ms)
    overlap = Overlap(length.span, links)
    events_left = length.max_events
    t = min(bursts.next_t)
    while length.running(t, bursts.ends):
        events_left -= 1
        if events_left < 0:
            raise RuntimeError("fluid model made no progress (window or time values out of range)")
        sending, held = bursts.sending(t)
        # each burst's speed relative to alone: its share of the link, at most its solo rate
        share = (link_shares(jobs, sending, sharing, rank, bursts.sent, bursts.remaining) if links is None
                 else links.shares(jobs, sending, sharing, rank, bursts.sent, bursts.remaining))
        t_next = bursts.next_change(t, sending, share, held)
        if sharing in PROGRESS_GAIN and len(sending) >= 2:
            t_next = min(t_next, t + mltcp_step_ms)  # the weights move as the bursts progress
        dt = t_next - t
        bursts.meet(sending)
        moving = {jobs[i].name: share[i] for i in sending if share[i] > 0}
        overlap.add(t, t_next, moving)
        if link_trace is not None:
            link_trace.record(t, t_next, moving, links, windows)
        bursts.send(sending, share, dt, queue_ms)
        t = t_next
        bursts.settle(t, trace, links)
    if stats is not None:
        stats.update(overlap.stats(length.measured_ms(t)))
    return _job_results(jobs, offsets_ms, bursts, length, warmup)


@dataclass(frozen=True)
class RunLength:
    """How long :func:`simulate` runs, and over which bursts each job's mean is taken: a count of bursts
    per job (``horizon=False``), or every burst ending in ``span`` (a horizon after a warm-up)."""

    horizon: bool
    target: list[int]  # bursts each job needs (a count): warm-up + iterations + 1
    counts: Mapping[str, int] | None  # one count per job (a run's), else None
    span: tuple[float, float]  # the measured span (a horizon): (warm-up end, warm-up end + horizon)
    give_up_ms: float  # a horizon's run stops here even if a job has not reached the span's end
    max_events: int  # a guard against a run that makes no progress, far above any real run

    @classmethod
    def of(cls, jobs: Sequence[FluidJob], iterations: int | Mapping[str, int], warmup: int,
           horizon_ms: float | None, warmup_ms: float | None, sharing: str, mltcp_step_ms: float) -> RunLength:
        """:func:`simulate`'s length from its arguments; ValueError for a per-job count below 1."""
        n = len(jobs)
        counts = iterations if isinstance(iterations, Mapping) else None
        if counts is not None and any(counts.get(j.name, 0) < 1 for j in jobs):
            raise ValueError(f"iterations: need a count >= 1 for every job, got {dict(counts)}")
        target = [warmup + (counts[j.name] if counts is not None else iterations) + 1 for j in jobs]
        if horizon_ms is None:
            return cls(False, target, counts, (0.0, math.inf), math.inf, 1000 * n * max(target))
        warmup_ms = WARMUP_ITERATIONS * max(j.period_ms for j in jobs) if warmup_ms is None else warmup_ms
        span = (warmup_ms, warmup_ms + horizon_ms)
        give_up_ms = span[1] + horizon_ms + 2 * max(j.period_ms for j in jobs)
        max_events = 1000 * n * (math.ceil(give_up_ms / min(j.period_ms for j in jobs)) + 3)
        if sharing in PROGRESS_GAIN:
            max_events += 2 * math.ceil(give_up_ms / mltcp_step_ms)
        return cls(True, target, counts, span, give_up_ms, max_events)

    def running(self, t: float, ends: list[list[float]]) -> bool:
        """Whether the run goes on at ``t``, the jobs' bursts having ended at ``ends``."""
        if not self.horizon:
            return any(len(e) < k for e, k in zip(ends, self.target, strict=True))
        return t < self.give_up_ms and any(not e or e[-1] < self.span[1] for e in ends)

    def measured_ms(self, t: float) -> float:
        """How long the measured span is, the run having stopped at ``t``."""
        return (min(t, self.span[1]) if self.horizon else t) - self.span[0]


class Overlap:
    """How long two or more bursts moved data at once inside the measured span (on each shared link
    with ``links``)."""

    def __init__(self, span: tuple[float, float], links: JobLinks | None):
        self.span, self.links = span, links
        self.total_ms = 0.0
        self.by_link = dict.fromkeys(links.shared_links() if links is not None else (), 0.0)

    def add(self, t: float, t_next: float, moving: dict[str, float]) -> None:
        """The bursts ``moving`` (name -> share) moved data from ``t`` to ``t_next``."""
        if len(moving) >= 2:
            inside = max(0.0, min(t_next, self.span[1]) - max(t, self.span[0]))
            self.total_ms += inside
            for link in self.links.meeting(moving) if self.links else ():
                self.by_link[link] += inside

    def stats(self, measured_ms: float) -> dict:
        """:func:`simulate`'s ``stats``: the overlap's share of the measured span, the span and its start."""
        out = dict(overlap_share=self.total_ms / measured_ms if measured_ms > 0 else 0.0,
                   span_ms=measured_ms, warmup_ms=self.span[0])
        if self.links is not None:
            out.update(self.links.overlap_stats(self.by_link, measured_ms))
        return out


def _job_results(jobs: Sequence[FluidJob], offsets_ms: dict[str, float], bursts: Bursts, length: RunLength,
                 warmup: int) -> dict[str, FluidJobResult]:
    """Each job's mean iteration time over the bursts ``length`` measures, and how far its last burst
    start lags where its own period (gated: its window grid) would have put it."""
    out = {}
    for i, job in enumerate(jobs):
        ends, starts, gate = bursts.ends[i], bursts.starts[i], bursts.gate[i]
        mine = ends[:length.target[i]] if length.counts is not None else ends
        count, mean = mean_iteration(mine, warmup, length.span if length.horizon else None)
        k = len(starts) - 1
        burst_start = _burst_start(starts[k], gate if bursts.waits(k) else None)
        period = gate.period_ms if gate else job.period_ms  # gated: against its window grid
        lag = burst_start - (offsets_ms[job.name] + k * period)
        phase = (lag + period / 2) % period - period / 2
        out[job.name] = FluidJobResult(job.name, job.period_ms, count, mean, 1000.0 / mean, lag,
                                       0.0 if abs(phase) < 1e-6 else phase)
    return out


def mean_iterations(jobs: Sequence[FluidJob], offsets_ms: dict[str, float], draws: int = 16, seed: int = 0,
                    **kwargs) -> dict[str, float]:
    """Each job's mean iteration time (ms) over ``draws`` runs of :func:`simulate` with sampled bursts.

    With nothing measured to draw from, one run (they would all be the same).
    """
    if not any(j.comm_samples_ms or j.busy_start_samples_ms for j in jobs):
        draws = 1
    rng = random.Random(seed)
    runs = [simulate(jobs, offsets_ms, rng=rng, **kwargs) for _ in range(draws)]
    return {j.name: left_to_right_sum(r[j.name].mean_iteration_ms for r in runs) / len(runs) for j in jobs}


def _burst_start(ready_ms: float, window: FluidWindow | None) -> float:
    """When a burst that is ready at ``ready_ms`` actually starts."""
    return ready_ms if window is None or window.takes(ready_ms) else window.wait_start(ready_ms)


def default_horizon_ms(jobs: Sequence[FluidJob], max_iterations: int = MAX_HORIZON_ITERATIONS) -> float:
    """Long enough for the jobs' relative phases to cycle: the lcm of their periods where every period
    is a whole number of µs, within [:data:`MIN_HORIZON_ITERATIONS`, ``max_iterations``] periods of
    the longest job (``max_iterations`` where the lcm does not exist)."""
    longest = max(j.period_ms for j in jobs)
    low, high = MIN_HORIZON_ITERATIONS * longest, max(MIN_HORIZON_ITERATIONS, max_iterations) * longest
    if all(float(j.period_ms).is_integer() for j in jobs):  # whole ms (the sweep's): no Fraction needed
        micros = [int(j.period_ms) * 1000 for j in jobs]
    else:
        exact = [Fraction(j.period_ms) * 1000 for j in jobs]
        if any(m.denominator != 1 for m in exact):
            return high
        micros = [int(m) for m in exact]
    return float(min(max(math.lcm(*micros) / 1000, low), high))


def simulate_policy(schedule: Schedule, policy: str, jobs: Sequence[FluidJob] | None = None,
                    seed: int = 0, iterations: int | None = None, *, horizon_ms: float | None = None,
                    knobs: PolicyKnobs | None = None, solo_periods_ms: dict[str, float] | None = None,
                    links: JobLinks | None = None, tcp_sharing: str = "fair", link_trace: LinkTrace | None = None):
    """One policy on ``jobs`` (the true jobs; default the schedule's own), against windows on the
    schedule's grid. ``iterations``: simulate that many per job (a fixed count); else over
    ``horizon_ms`` (default :func:`default_horizon_ms`). ``knobs.realign_s``: re-alignment for a
    policy that uses the schedule but enforces no windows. ``solo_periods_ms``: what each job's
    throughput is normalised to, where its simulated period is not its own (align's padding).
    ``links``: the jobs share a fabric (see :func:`simulate`). ``tcp_sharing``: the sharing (``"fair"``
    or ``"leader"``) where the policy leaves it to TCP, i.e. its own is ``"fair"``; ``link_trace``: see simulate."""
    pol = get_policy(policy)
    fluid_jobs = list(jobs) if jobs is not None else [FluidJob(j.name, j.period_ms, j.comm_ms) for j in schedule.jobs]
    offsets = pol.initial_offsets_ms(schedule, offset_generator(seed))
    realign_s = (knobs or PolicyKnobs()).realign_s
    realign_ms = 1000.0 * realign_s if realign_s and pol.uses_schedule and not pol.enforces_windows else None
    windows = policy_windows(pol, schedule, offsets, always=realign_ms is not None)
    length = {"iterations": iterations} if iterations is not None else {
        "horizon_ms": horizon_ms or default_horizon_ms(fluid_jobs)}
    stats: dict = {}
    out = simulate(fluid_jobs, offsets, windows, waits=pol.waits_for_window, enforce=pol.enforces_windows,
                   sharing=pol.link_sharing(tcp_sharing), priority=pol.priority_order(schedule),
                   realign_ms=realign_ms,
                   stats=stats, links=links, link_trace=link_trace, **length)
    for name, solo in (solo_periods_ms or {}).items():
        out[name] = replace(out[name], solo_period_ms=solo)
    return FluidPolicyResult(policy, offsets, out, stats["overlap_share"], stats.get("overlap_by_link", {}))


def offset_generator(seed):
    """What a policy draws its start offsets from: Python's generator seeded ``seed``, or ``seed`` itself
    where it is a generator already (``draws.Uniforms``: the sweep's and the map's drawn offsets)."""
    return seed if hasattr(seed, "randrange") else random.Random(seed)


def policy_windows(pol: Policy, schedule: Schedule, offsets_ms: dict[str, float],
                   late_ms: dict[str, float] | None = None,
                   grace_ms: dict[str, float] | None = None, always: bool = False) -> dict[str, FluidWindow] | None:
    """Each job's windows under ``pol`` (None if it never waits for one and enforces none, unless
    ``always``: a re-aligning run needs them).

    ``[offset + k*T, offset + k*T + comm)`` on the schedule's grid. A run passes
    what the wire does: ``late_ms[job]``, how long after the window opens a
    waiting burst's data arrives (the window is that much shorter for it), and
    ``grace_ms[job]`` (see :class:`FluidWindow`).
    """
    if not (always or pol.realigns()):
        return None
    late_ms, grace_ms = late_ms or {}, grace_ms or {}
    out = {}
    for j in schedule.jobs:
        late = min(max(late_ms.get(j.name, 0.0), 0.0), 0.5 * j.comm_ms)
        out[j.name] = FluidWindow(offsets_ms[j.name] + late, j.period_ms, j.comm_ms - late, grace_ms.get(j.name, 0.0))
    return out


def compare_policies(schedule: Schedule, policies: Sequence[str] = ("none", "shift", "gate", "random"),
                     jobs: Sequence[FluidJob] | None = None, seed: int = 0, iterations: int | None = None,
                     **kwargs) -> dict[str, FluidPolicyResult]:
    """Every policy on the same jobs and schedule (``kwargs`` as :func:`simulate_policy`); see
    :func:`change_vs_none` for the comparison."""
    return {p: simulate_policy(schedule, p, jobs, seed, iterations, **kwargs) for p in policies}


def change_vs_none(results: dict[str, FluidPolicyResult], policy: str, job: str) -> float:
    """Relative throughput change of ``job`` under ``policy`` versus ``none`` (0.05 = +5 %)."""
    return results[policy].jobs[job].throughput_per_s / results["none"].jobs[job].throughput_per_s - 1


def predict_policy(policy: str, timings: Sequence[JobTiming], jobs: Sequence[FluidJob], quantum_ms: float,
                   knobs: PolicyKnobs | None = None, schedule_cache: dict | None = None,
                   schedule_kwargs: dict | None = None, **kwargs) -> tuple[Schedule, FluidPolicyResult, dict]:
    """``policy`` on the true ``jobs``: its schedule from the grid ``timings``
    (:func:`~controller.theory.policies.policy_schedule`), windows on that schedule's grid.

    Where the policy's schedule lengthens a job's period (padding), the job's
    computation is that much longer and its throughput is still normalised to
    its own period. ``schedule_cache``: schedules by the timings they were made
    from (the policies that do not change the timings share one). Returns
    (schedule, result, padding_ms per job); ValueError if the policy cannot schedule these jobs,
    :class:`Unsimulated` if the model cannot simulate it on them.
    """
    knobs = knobs or PolicyKnobs()
    scheduled = tuple(get_policy(policy).scheduled_timings(timings, quantum_ms, knobs))
    cache = schedule_cache if schedule_cache is not None else {}
    if scheduled not in cache:
        cache[scheduled] = compute_schedule(scheduled, quantum_ms, **(schedule_kwargs or {}))
    grid = {t.name: t.period_ms for t in timings}
    padding = {t.name: t.period_ms - grid[t.name] for t in scheduled}
    padded = [replace(j, period_ms=j.period_ms + padding[j.name]) for j in jobs]
    solo = {j.name: j.period_ms for j in jobs} if any(padding.values()) else None
    try:
        result = simulate_policy(cache[scheduled], policy, padded, knobs=knobs, solo_periods_ms=solo, **kwargs)
    except Exception as exc:  # the schedule exists; the model could not run it
        raise Unsimulated(policy, exc) from exc
    return cache[scheduled], result, padding
