"""Fluid model of pattern jobs: several collectives per iteration on the shared link.

:mod:`fluid` sends one burst per iteration. A pattern job (``phases.JobPattern``: DDP's buckets, a
DLRM's all-to-all, a pipeline stage's sends) sends one phase per collective, each at its offset in
the iteration; this model runs such jobs under the same link sharing (``policies.link_shares``, or a
fabric's ``fabricshare.JobLinks``) and the same policies.

Assumptions, beside :mod:`fluid`'s:

- A phase is ``busy_ms`` of the job's link alone (``phases.busy_ms``); it is released ``start_ms``
  after its iteration starts. Phases of one job that are in flight together share that job's part of
  the link: the job is one sender whose backlog is what its released phases still have to send, served
  at the job's share, so only the total matters (the order within the job changes no phase's last byte
  and no other job's rate).
- **Dependency rule.** Iteration ``k`` starts at ``S``; its computation that does not wait for the
  network (forward and backward: DDP's buckets go out *during* backward) ends at ``S + ready_ms``, with
  ``ready_ms = period_ms - tail_ms``; the rest, ``tail_ms`` (the optimizer step), waits for the last
  byte of the last phase, ``E``. The next iteration starts at ``max(S + ready_ms, E) + tail_ms``. A
  profile gives ``tail_ms`` (its optimizer step, ``JobPattern.tail_ms``); otherwise everything after
  the phases' solo end waits for them, ``tail_ms = period_ms - solo_end_ms`` (``solo_end_ms``: the
  phases sent one after another from their starts, alone), the rectangle's rule. Alone, each iteration
  takes exactly ``period_ms``. A one-phase job at 0 with ``tail_ms = period - comm`` is
  :mod:`fluid`'s job: next burst at ``E + period - comm`` (``tests/unit/test_patternfluid.py`` checks
  that both models agree).
- Policies, as in :mod:`fluid`: the first iteration starts at the policy's offset; ``none``, ``shift``,
  ``random``, ``priority``, ``mltcp`` run free. A policy that waits for windows (``gate``) starts
  iteration ``k`` at the job's next window origin ``shift + k·T`` (its grid period) at or after it is
  ready, and one that enforces windows keeps the job's data on the link only inside its windows: one
  window per busy arc of the job's on-grid pattern (``phases.as_pattern``), ``[shift + k·T + a·q,
  shift + k·T + (a + n)·q)``. A phase released outside every window (stretched past its arc) waits
  for the next one. Policies that change the jobs' timings (``guard``, ``align``) and re-alignment
  (``realign_s``) are not modelled for patterns (:class:`Unsimulated`).
- The mean iteration time is over a horizon after a warm-up, from the iterations' last bytes
  (``fluidjob.mean_iteration``), as :mod:`fluid`'s; measured bursts and busy-start costs are a run's
  calibration of one-burst jobs and are not modelled here.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache

from controller.theory.fabricshare import JobLinks
from controller.theory.floatsum import left_to_right_sum
from controller.theory.fluid import (
    MLTCP_STEP_MS,
    WARMUP_ITERATIONS,
    FluidJobResult,
    FluidPolicyResult,
    default_horizon_ms,
    offset_generator,
)
from controller.theory.fluidjob import EPS_MS as _EPS
from controller.theory.fluidjob import mean_iteration
from controller.theory.phases import JobPattern, busy_ms
from controller.theory.policies import (
    PROGRESS_GAIN,
    SHARING,
    GatePolicy,
    NonePolicy,
    PolicyKnobs,
    PriorityPolicy,
    RandomPolicy,
    ShiftPolicy,
    get_policy,
    link_shares,
)
from controller.theory.schedule import JobTiming, Schedule
from controller.theory.unsimulated import Unsimulated

# the policies whose answers the compiled loop reproduces (``fastpatterns``); a subclass is not one
FAST_POLICIES = (NonePolicy, ShiftPolicy, GatePolicy, RandomPolicy, PriorityPolicy)


@dataclass(frozen=True)
class PatternFluidJob:
    """A job as the pattern model runs it: its solo iteration, its phases as ``(start_ms, busy_ms)`` and
    the computation after the last phase that waits for it (module docstring)."""

    name: str
    period_ms: float
    phases: tuple[tuple[float, float], ...]
    tail_ms: float | None = None  # None: period_ms - solo_end_ms
    link_headroom: float = 1.0  # link rate / this job's solo rate (>= 1), as FluidJob's

    def __post_init__(self):
        if not self.phases or any(not (0 <= s < self.period_ms and b > 0) for s, b in self.phases):
            raise ValueError(f"{self.name}: every phase needs 0 <= start_ms < period_ms and busy_ms > 0, "
                             f"got {self.phases}")
        object.__setattr__(self, "phases", tuple(sorted(self.phases)))
        if not self.link_headroom >= 1.0:
            raise ValueError(f"{self.name}: link_headroom is link rate / solo rate, >= 1, got {self.link_headroom}")
        if self.solo_end_ms > self.ready_ms + _EPS * max(1.0, self.period_ms):
            raise ValueError(f"{self.name}: its phases alone end at {self.solo_end_ms:g} ms, past what its "
                             f"iteration ({self.period_ms:g} ms, {self.wait_tail_ms:g} of it after the last phase) "
                             "leaves them")

    @property
    def comm_ms(self) -> float:
        """Every phase's time on the link alone, added up."""
        return sum(b for _, b in self.phases)

    @property
    def solo_end_ms(self) -> float:
        """When the phases, sent one after another from their starts, are done alone."""
        free = 0.0
        for start, length in self.phases:
            free = max(free, start) + length
        return free

    @property
    def wait_tail_ms(self) -> float:
        """The computation after the last phase that waits for it."""
        return max(0.0, self.period_ms - self.solo_end_ms) if self.tail_ms is None else self.tail_ms

    @property
    def ready_ms(self) -> float:
        """When, after the iteration starts, the computation that does not wait for the network ends."""
        return self.period_ms - self.wait_tail_ms

    @classmethod
    def rectangle(cls, name: str, period_ms: float, comm_ms: float, link_headroom: float = 1.0) -> PatternFluidJob:
        """:mod:`fluid`'s job: one burst at the iteration's start, then ``period - comm`` of computation."""
        return cls(name, period_ms, ((0.0, comm_ms),), period_ms - comm_ms, link_headroom)

    @classmethod
    def from_pattern(cls, name: str, pattern: JobPattern, link_mbps: float,
                     link_headroom: float = 1.0) -> PatternFluidJob:
        """A ``JobPattern`` whose workers' links run at ``link_mbps``."""
        return cls(name, pattern.iteration_ms,
                   tuple((p.start_ms, busy_ms(p, pattern.workers, link_mbps)) for p in pattern.phases),
                   pattern.tail_ms, link_headroom)


@cache
def _arcs_ms(pattern, quantum_ms: float) -> tuple[tuple[float, float], ...]:
    """A pattern's busy arcs as ``(start_ms, end_ms)`` (cached: a sweep gates the same jobs again and again)."""
    return tuple((a * quantum_ms, (a + n) * quantum_ms) for a, n in pattern.arcs)


@cache
def _realigns(pol) -> bool:
    """``pol.realigns()``, asked once per policy (it runs the policy's answer for 64 iterations)."""
    return pol.realigns()


@dataclass(frozen=True)
class PatternWindows:
    """A job's windows: ``[shift + k·period + a, shift + k·period + b)`` for each ``(a, b)`` in ``arcs_ms``
    (sorted, disjoint, inside ``[0, period]``), any k; its iterations start at ``shift + k·period``."""

    shift_ms: float
    period_ms: float
    arcs_ms: tuple[tuple[float, float], ...]

    @classmethod
    def from_pattern(cls, shift_ms: float, pattern, quantum_ms: float) -> PatternWindows:
        """The windows of an on-grid ``arcs.Pattern`` (its busy arcs, which it keeps sorted and merged)."""
        return cls(shift_ms, pattern.period_q * quantum_ms, _arcs_ms(pattern, quantum_ms))

    def _locate(self, t_ms: float) -> tuple[int, float]:
        k = math.floor((t_ms - self.shift_ms) / self.period_ms)
        r = t_ms - self.shift_ms - k * self.period_ms
        if r >= self.period_ms - _EPS:
            k, r = k + 1, r - self.period_ms
        return k, r

    def end_of_current(self, t_ms: float) -> float | None:
        """End of the window containing ``t_ms``, or None outside every window."""
        k, r = self._locate(t_ms)
        for a, b in self.arcs_ms:
            if a - _EPS <= r < b - _EPS:
                return self.shift_ms + k * self.period_ms + b
        return None

    def next_start(self, t_ms: float) -> float:
        """Start of the first window that opens at or after ``t_ms``."""
        k, r = self._locate(t_ms)
        for a, _ in self.arcs_ms:
            if a >= r - _EPS:
                return self.shift_ms + k * self.period_ms + a
        return self.shift_ms + (k + 1) * self.period_ms + self.arcs_ms[0][0]

    def next_origin(self, t_ms: float) -> float:
        """The first iteration origin at or after ``t_ms`` (one within 1 µs before it still counts)."""
        return self.shift_ms + math.ceil((t_ms - self.shift_ms - 1e-6) / self.period_ms) * self.period_ms


def simulate_patterns(jobs: Sequence[PatternFluidJob], offsets_ms: dict[str, float],
                      windows: dict[str, PatternWindows] | None = None, *, horizon_ms: float | None = None,
                      warmup_ms: float | None = None, waits: Callable[[int], bool] | None = None,
                      enforce: bool = True, sharing: str = "fair", priority: Sequence[str] = (),
                      mltcp_step_ms: float = MLTCP_STEP_MS, links: JobLinks | None = None,
                      stats: dict | None = None, trace: list | None = None) -> dict[str, FluidJobResult]:
    """Run the jobs from their first iterations' starts ``offsets_ms`` until each has run past
    ``warmup_ms + horizon_ms`` (defaults as :func:`fluid.simulate`'s); per-job results.

    ``windows``: the named jobs' windows; ``waits(k)``: whether iteration ``k`` (0 = the first) of a job
    with windows starts at a window origin; ``enforce``: whether its data is on the link only inside its
    windows. ``sharing``, ``priority``, ``links``, ``mltcp_step_ms``, ``stats`` as :func:`fluid.simulate`;
    ``trace``: if given, one ``(job, start_ms, last_byte_ms)`` per finished iteration is appended.
    """
    windows = windows or {}
    waits = waits if waits is not None else (lambda k: True)
    if sharing not in SHARING:
        raise ValueError(f"sharing must be one of {', '.join(SHARING)}, got {sharing!r}")
    n = len(jobs)
    gate = [windows.get(j.name) for j in jobs]
    order = {name: k for k, name in enumerate(priority)}
    rank = [order.get(j.name, len(order) + k) for k, j in enumerate(jobs)]
    horizon_ms = horizon_ms or default_horizon_ms(jobs)
    warmup_ms = WARMUP_ITERATIONS * max(j.period_ms for j in jobs) if warmup_ms is None else warmup_ms
    span = (warmup_ms, warmup_ms + horizon_ms)
    give_up_ms = span[1] + horizon_ms + 2 * max(j.period_ms for j in jobs)
    max_events = 1000 * sum(len(j.phases) + 2 for j in jobs) * (math.ceil(give_up_ms / min(j.period_ms for j in jobs)) + 3)
    if sharing in PROGRESS_GAIN:
        max_events += 2 * math.ceil(give_up_ms / mltcp_step_ms)

    run = _Jobs(jobs, offsets_ms, gate, enforce)
    overlap_ms = 0.0
    by_link = dict.fromkeys(links.shared_links() if links is not None else (), 0.0)
    t = min(run.begin_at)
    while t < give_up_ms and any(not e or e[-1] < span[1] for e in run.ends):
        max_events -= 1
        if max_events < 0:
            raise RuntimeError("pattern fluid model made no progress (window or time values out of range)")
        sending = [i for i in range(n) if run.on_link(i, t)]
        share = (link_shares(jobs, sending, sharing, rank, run.sent, run.backlog) if links is None
                 else links.shares(jobs, sending, sharing, rank, run.sent, run.backlog))
        t_next = run.next_event(t, share)
        if sharing in PROGRESS_GAIN and len(sending) >= 2:
            t_next = min(t_next, t + mltcp_step_ms)
        if not math.isfinite(t_next):
            break  # nothing left that can move (every job starved)
        moving = {jobs[i].name: share[i] for i in sending if share[i] > 0}
        if len(moving) >= 2:
            inside = max(0.0, min(t_next, span[1]) - max(t, span[0]))
            overlap_ms += inside
            for link in links.meeting(moving) if links else ():
                by_link[link] += inside
        for i in sending:
            run.backlog[i] -= (t_next - t) * share[i]
            run.sent[i] += (t_next - t) * share[i]
        t = t_next
        run.settle(t, waits, trace)
    if stats is not None:
        measured_ms = min(t, span[1]) - span[0]
        stats.update(overlap_share=overlap_ms / measured_ms if measured_ms > 0 else 0.0,
                     span_ms=measured_ms, warmup_ms=span[0])
        if links is not None:
            stats.update(links.overlap_stats(by_link, measured_ms))
    return run.results(offsets_ms, span)


class _Jobs:
    """The jobs' state in :func:`simulate_patterns`: each one's backlog and where its iteration is."""

    def __init__(self, jobs: Sequence[PatternFluidJob], offsets_ms: dict[str, float], gate: list, enforce: bool):
        n = len(jobs)
        self.jobs, self.gate, self.enforce = jobs, gate, enforce
        self.backlog = [0.0] * n  # solo-ms released and not yet sent
        self.sent = [0.0] * n  # solo-ms of this iteration sent (mltcp's and leader's weights)
        self.released = [0] * n  # phases of this iteration released
        self.running = [False] * n  # an iteration is under way (else: waiting to start at begin_at)
        self.begin_at = [offsets_ms[j.name] for j in jobs]
        self.starts: list[list[float]] = [[] for _ in jobs]
        self.ends: list[list[float]] = [[] for _ in jobs]
        self.done_eps = [_EPS * max(1.0, j.comm_ms) for j in jobs]

    def on_link(self, i: int, t: float) -> bool:
        """Has job i data to send at t, and may it (inside a window, where they are enforced)?"""
        gate = self.gate[i]
        return self.backlog[i] > self.done_eps[i] and (gate is None or not self.enforce
                                                       or gate.end_of_current(t) is not None)

    def next_event(self, t: float, share: dict[int, float]) -> float:
        """The next iteration start, phase release, backlog emptied or window edge after t."""
        t_next = math.inf
        for i, job in enumerate(self.jobs):
            if not self.running[i]:
                t_next = min(t_next, self.begin_at[i])
                continue
            if self.released[i] < len(job.phases):
                t_next = min(t_next, self.starts[i][-1] + job.phases[self.released[i]][0])
            if i in share and share[i] > 0:
                t_next = min(t_next, t + self.backlog[i] / share[i])
            gate = self.gate[i]
            if gate is not None and self.enforce and self.backlog[i] > self.done_eps[i]:
                end = gate.end_of_current(t)
                t_next = min(t_next, gate.next_start(t + _EPS) if end is None else end)
        return t_next

    def settle(self, t: float, waits: Callable[[int], bool], trace: list | None) -> None:
        """At t: iterations that start, phases released, iterations whose last byte is out (and when the
        next starts: the dependency rule, at a window origin where the policy waits for one)."""
        for i, job in enumerate(self.jobs):
            if not self.running[i] and self.begin_at[i] <= t + _EPS:
                self.running[i], self.released[i], self.sent[i] = True, 0, 0.0
                self.starts[i].append(t)
            if not self.running[i]:
                continue
            origin = self.starts[i][-1]
            while self.released[i] < len(job.phases) and origin + job.phases[self.released[i]][0] <= t + _EPS:
                self.backlog[i] += job.phases[self.released[i]][1]
                self.released[i] += 1
            if self.released[i] == len(job.phases) and self.backlog[i] <= self.done_eps[i]:
                self.backlog[i] = 0.0
                self.ends[i].append(t)
                if trace is not None:
                    trace.append((job.name, origin, t))
                ready = max(origin + job.ready_ms, t) + job.wait_tail_ms
                gate = self.gate[i]
                self.running[i] = False
                self.begin_at[i] = gate.next_origin(ready) if gate is not None and waits(len(self.starts[i])) else ready

    def results(self, offsets_ms: dict[str, float], span: tuple[float, float]) -> dict[str, FluidJobResult]:
        """Each job's mean iteration over ``span`` and where its last iteration started against its grid."""
        out = {}
        for i, job in enumerate(self.jobs):
            count, mean = mean_iteration(self.ends[i], 0, span)
            k = len(self.starts[i]) - 1
            period = self.gate[i].period_ms if self.gate[i] else job.period_ms
            start = self.starts[i][-1] if self.starts[i] else offsets_ms[job.name]
            lag = start - (offsets_ms[job.name] + max(k, 0) * period)
            phase = (lag + period / 2) % period - period / 2
            out[job.name] = FluidJobResult(job.name, job.period_ms, count, mean, 1000.0 / mean, lag,
                                           0.0 if abs(phase) < 1e-6 else phase)
        return out


def pattern_schedule_record(names: Sequence[str], patterns: Sequence, shifts_q: Sequence[int],
                            quantum_ms: float, feasible: bool) -> Schedule:
    """The pattern jobs' schedule in the form the policies read (``policies.Policy``): each job's grid
    period, its busy quanta added up as its ``comm_ms`` (``priority`` serves the least busy first), and
    its shift."""
    timings = tuple(JobTiming(n, p.period_q * quantum_ms, p.busy_q * quantum_ms)
                    for n, p in zip(names, patterns, strict=True))
    hyper_q = math.lcm(*(p.period_q for p in patterns))
    return Schedule(timings, quantum_ms, {n: s * quantum_ms for n, s in zip(names, shifts_q, strict=True)},
                    hyper_q * quantum_ms, feasible, math.nan, "patterns", None)


def _policy_setup(policy: str, jobs: Sequence[PatternFluidJob], patterns: Sequence, schedule: Schedule, seed,
                  knobs: PolicyKnobs | None):
    """``policy``'s offsets and windows for the pattern jobs; :class:`Unsimulated` where this model does not
    take the policy (module docstring)."""
    pol = get_policy(policy)
    knobs = knobs or PolicyKnobs()
    try:
        if list(pol.scheduled_timings(schedule.jobs, schedule.quantum_ms, knobs)) != list(schedule.jobs):
            raise Unsimulated(policy, "its schedule changes the jobs' timings, which is not modelled for pattern jobs")
    except ValueError as exc:
        raise Unsimulated(policy, exc) from exc
    if knobs.realign_s and pol.uses_schedule and not pol.enforces_windows:
        raise Unsimulated(policy, "re-alignment (realign_s) is not modelled for pattern jobs")
    offsets = pol.initial_offsets_ms(schedule, offset_generator(seed))
    windows = ({j.name: PatternWindows.from_pattern(offsets[j.name], p, schedule.quantum_ms)
                for j, p in zip(jobs, patterns, strict=True)} if _realigns(pol) else None)
    return pol, offsets, windows


def predict_pattern_policy(policy: str, jobs: Sequence[PatternFluidJob], patterns: Sequence,
                           schedule: Schedule, *, seed=0, horizon_ms: float | None = None,
                           knobs: PolicyKnobs | None = None, links: JobLinks | None = None,
                           tcp_sharing: str = "fair") -> FluidPolicyResult:
    """``policy`` on the pattern ``jobs`` (true timing), its offsets and windows from ``schedule``
    (:func:`pattern_schedule_record`) and the jobs' on-grid ``patterns`` (``arcs.Pattern``, same order).
    :class:`Unsimulated` for what this model does not take (module docstring)."""
    pol, offsets, windows = _policy_setup(policy, jobs, patterns, schedule, seed, knobs)
    stats: dict = {}
    try:
        out = simulate_patterns(jobs, offsets, windows, horizon_ms=horizon_ms, waits=pol.waits_for_window,
                                enforce=pol.enforces_windows, sharing=pol.link_sharing(tcp_sharing),
                                priority=pol.priority_order(schedule), links=links, stats=stats)
    except Exception as exc:  # the schedule exists; the model could not run it
        raise Unsimulated(policy, exc) from exc
    return FluidPolicyResult(policy, offsets, out, stats["overlap_share"], stats.get("overlap_by_link", {}))


def pattern_throughput(policy: str, jobs: Sequence[PatternFluidJob], patterns: Sequence, schedule: Schedule, *,
                       seed=0, horizon_ms: float | None = None, prepared: tuple | None = None) -> float:
    """``policy``'s normalised throughput (mean over jobs of period / mean iteration time) on one shared
    link, as :func:`predict_pattern_policy`'s, by the compiled loop (``fastpatterns``) where it covers the
    policy (the built-in ``none``, ``shift``, ``random``, ``gate``, ``priority``), else by the reference.
    ``prepared``: ``fastpatterns.prepare(jobs)``, for a caller that runs several policies on the same jobs."""
    from controller.theory import fastpatterns

    pol = get_policy(policy)
    if type(pol) not in FAST_POLICIES:
        return predict_pattern_policy(policy, jobs, patterns, schedule, seed=seed,
                                      horizon_ms=horizon_ms).normalised_throughput
    pol, offsets, windows = _policy_setup(policy, jobs, patterns, schedule, seed, None)
    horizon_ms = horizon_ms or default_horizon_ms(jobs)
    try:
        means, _ = fastpatterns.run(jobs, offsets, windows, pol.enforces_windows, pol.link_sharing(),
                                    pol.priority_order(schedule), horizon_ms, prepared=prepared)
    except Exception as exc:
        raise Unsimulated(policy, exc) from exc
    return left_to_right_sum(j.period_ms / m for j, m in zip(jobs, means, strict=True)) / len(jobs)
