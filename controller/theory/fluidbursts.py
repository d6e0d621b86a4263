"""Each job's bursts in the fluid model (:func:`controller.theory.fluid.simulate`): where each job is
(computing, waiting for its window, sending, draining what its window left queued), what its current
burst has left to send, and when it next changes state.

One list per quantity, indexed by job, as the compiled model (``fastfluid``) keeps them: this is the
reference it is checked against bit for bit, so every sum and every random draw happens in the same
order as there.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence

from controller.theory.fabricshare import JobLinks
from controller.theory.fluidjob import EPS_MS as _EPS
from controller.theory.fluidjob import TOGETHER_MS, FluidJob, FluidWindow

# What a re-alignment costs beyond the wait for the window: the scheduler measures and sends the
# new shift while the job computes, so the job only waits; 0.
REALIGN_COST_MS = 0.0

ON_LINK = ("send", "drain")  # the states in which a burst is on the link


class Bursts:
    """The jobs' progress: one current burst per job and the state machine that moves it.

    States: ``compute`` (until ``next_t``: the computation ends), ``wait`` (until ``next_t``: its
    window opens), ``send`` (on the link; ``next_t``: its window closes, or never) and ``drain``
    (the window closed; what the burst had queued past the gate still goes out).
    """

    def __init__(self, jobs: Sequence[FluidJob], offsets_ms: dict[str, float],
                 gate: list[FluidWindow | None], waits: Callable[[int], bool], enforce: bool,
                 realign_ms: float | None, rng: random.Random | None):
        n = len(jobs)
        self.jobs, self.n, self.gate, self.waits, self.enforce = jobs, n, gate, waits, enforce
        self.realign_ms, self.rng = realign_ms, rng
        self.compute = [j.period_ms - j.comm_ms for j in jobs]
        self.remaining = [0.0] * n  # solo-ms of burst left
        self.sent = [0.0] * n  # solo-ms of the current burst already sent (mltcp's weight)
        self.after = [0.0] * n  # the current burst's extra time after its end (FluidJob.after_samples_ms)
        self.late = [0.0] * n  # ... how much later than usual its data started (FluidJob.late_samples_ms)
        self.busy_cost = [0.0] * n  # ... what its busy start cost
        self.held_until = [-math.inf] * n  # ... its data waits until then (a busy start: its first data comes later)
        self.met: list[set] = [set() for _ in range(n)]  # the other jobs the current burst was on the link beside
        self.track_met = rng is not None and any(j.busy_after_samples_ms for j in jobs)  # only busy ends need it
        self.queued = [0.0] * n  # solo-ms of it already past the gate, waiting on the link
        self.on_link = [False] * n  # the current burst has gone once (a later window resumes it)
        self.went = [math.nan] * n  # when the current burst first went on the link
        self.launched = [math.nan] * n  # ... and when it was launched (went - lead_ms)
        self.busy = [False] * n  # the current burst started busy and has been charged for it
        self.state = ["compute"] * n  # compute | wait | send | drain
        self.next_t = [offsets_ms[j.name] for j in jobs]  # compute end / window start / window end
        self.starts: list[list[float]] = [[] for _ in jobs]  # when each burst was ready
        self.aligned = [False] * n  # the current burst has waited for (or met) its window start
        self.ends: list[list[float]] = [[] for _ in jobs]  # when each burst ended
        self.next_realign = [realign_ms or math.inf] * n

    def going_at(self, k: int, at: float) -> bool:
        """Was job k's data going at ``at`` (its current or last burst on the link, not yet ended)?"""
        data_from = max(self.went[k], self.held_until[k])  # a busy start holds the data back
        if self.state[k] in ON_LINK:
            return data_from <= at
        return bool(self.ends[k]) and data_from <= at < self.ends[k][-1]

    def go(self, i: int, t: float) -> None:
        """Job i's burst is on the link at ``t``; the first time, its data held back if it started busy:
        another job's data was going when it launched (``lead_ms`` before), or another job launched within
        ``TOGETHER_MS`` of it (that burst, if not busy already, is held too). On the wire a busy start is
        a later first data packet, so a held burst takes no share of the link."""
        if not self.on_link[i]:
            jobs, state, launched, busy = self.jobs, self.state, self.launched, self.busy
            self.went[i] = t
            launched[i] = t - jobs[i].lead_ms
            together = [k for k in range(self.n) if k != i and self.on_link[k]
                        and state[k] in ("send", "drain", "wait") and abs(launched[k] - launched[i]) <= TOGETHER_MS]
            busy[i] = bool(together) or any(self.going_at(k, launched[i]) for k in range(self.n) if k != i)
            if busy[i]:
                self.busy_cost[i] = jobs[i].busy_start_cost(self.rng)
                self.held_until[i] = t + self.busy_cost[i]
            for k in together:
                if not busy[k]:
                    busy[k] = True
                    self.busy_cost[k] = jobs[k].busy_start_cost(self.rng)
                    self.held_until[k] = max(self.held_until[k], t) + self.busy_cost[k]
        self.on_link[i] = True

    def begin(self, i: int, now: float, t: float) -> None:
        """Job i's burst, ready at ``now`` (the simulated time is ``t``), goes, or waits for its next
        window start (re-aligned or gated)."""
        w, state, next_t, aligned = self.gate[i], self.state, self.next_t, self.aligned
        if w is None:
            self.go(i, t)
            state[i], next_t[i] = "send", math.inf
            return
        if now >= self.next_realign[i] - _EPS and not aligned[i]:  # time to re-align (realign_ms)
            while self.next_realign[i] <= now + _EPS:
                self.next_realign[i] += self.realign_ms
            aligned[i] = True
            if not w.takes(now):
                state[i], next_t[i] = "wait", w.wait_start(now) + REALIGN_COST_MS
                return
        if self.waits(len(self.starts[i]) - 1) and not aligned[i] and not w.takes(now):
            state[i], next_t[i] = "wait", w.wait_start(now)
            return
        aligned[i] = True  # this burst has met its window start (or needs none)
        end = w.end_of_current(now) if self.enforce else math.inf
        if end is None:  # enforced and outside every window
            state[i], next_t[i] = "wait", w.next_start(now)
        else:
            self.go(i, t)
            state[i], next_t[i] = "send", end

    def sending(self, t: float) -> tuple[list[int], list[float]]:
        """The jobs whose bursts send data at ``t``, and when the others on the link start to: a burst
        whose busy start still holds its data back is on the link but sends nothing yet."""
        state, held_until = self.state, self.held_until
        sending = [i for i in range(self.n) if state[i] in ON_LINK and held_until[i] <= t + _EPS]
        held = [held_until[i] for i in range(self.n) if state[i] in ON_LINK and held_until[i] > t + _EPS]
        return sending, held

    def next_change(self, t: float, sending: list[int], share: list[float], held: list[float]) -> float:
        """When the next burst ends, the next drain empties or the next state change is due, at these shares."""
        remaining, state, queued = self.remaining, self.state, self.queued
        t_next = min([*self.next_t, *held])
        for i in sending:
            if share[i] > 0:
                t_next = min(t_next, t + remaining[i] / share[i])
                if state[i] == "drain":
                    t_next = min(t_next, t + queued[i] / share[i])
        return t_next

    def meet(self, sending: list[int]) -> None:
        """Note which bursts were on the link together (only what busy ends need)."""
        if self.track_met and len(sending) >= 2:
            for i in sending:
                self.met[i].update(k for k in sending if k != i)

    def send(self, sending: list[int], share: list[float], dt: float, queue_ms: float) -> None:
        """``dt`` ms at these shares: what each burst sends, and what it queues behind the gate (it
        arrives at its solo rate and is served at its share, up to ``queue_ms``)."""
        remaining, sent, queued, state = self.remaining, self.sent, self.queued, self.state
        for i in sending:
            remaining[i] -= dt * share[i]
            sent[i] += dt * share[i]
            if state[i] == "send":
                queued[i] = min(queue_ms, remaining[i], queued[i] + dt * (1.0 - share[i]))
            else:
                queued[i] -= dt * share[i]

    def settle(self, t: float, trace: list | None, links: JobLinks | None) -> None:
        """Every job's state change due at ``t``, in job order."""
        state, next_t, queued, remaining, jobs = self.state, self.next_t, self.queued, self.remaining, self.jobs
        for i in range(self.n):
            eps = _EPS * max(1.0, jobs[i].comm_ms)
            if state[i] in ON_LINK and remaining[i] <= eps:
                self._end(i, t, trace, links)
            elif state[i] == "compute" and next_t[i] <= t + _EPS:
                self._ready(i, t)
            elif state[i] in ("wait", "drain") and next_t[i] <= t + _EPS:
                self.begin(i, next_t[i], t)
            elif state[i] == "drain" and queued[i] <= eps:  # what was past the gate is out
                state[i], queued[i] = "wait", 0.0
            elif state[i] == "send" and next_t[i] <= t + _EPS:  # gated window closes
                state[i], next_t[i] = ("drain" if queued[i] > eps else "wait"), self.gate[i].next_start(t + _EPS)

    def _end(self, i: int, t: float, trace: list | None, links: JobLinks | None) -> None:
        """Job i's burst has sent everything at ``t``: its next computation starts."""
        job = self.jobs[i]
        self.ends[i].append(t)
        if trace is not None:
            trace.append((job.name, self.starts[i][-1], self.went[i], t))
        extra = 0.0
        if self.met[i]:
            shared = any(links is None or links.meeting((job.name, self.jobs[k].name)) for k in self.met[i])
            extra = job.busy_after_cost("shared" if shared else "apart", self.rng)
        # a job that keeps its clock takes what its start and end took beyond the usual (a late or
        # busy start, a longer after phase) off its computation: only the data phase moves it
        compute = self.compute[i]
        gap = compute - self.late[i] - self.busy_cost[i] if job.keeps_clock else compute + self.after[i] + extra
        self.state[i], self.next_t[i], self.queued[i] = "compute", t + max(0.0, gap), 0.0

    def _ready(self, i: int, t: float) -> None:
        """Job i's computation has ended at ``t``: its next burst, drawn, goes or waits."""
        self.remaining[i], self.after[i], self.late[i] = self.jobs[i].draw(self.rng)
        self.busy_cost[i] = 0.0
        self.met[i] = set()
        self.sent[i] = 0.0
        self.starts[i].append(t)
        self.aligned[i] = self.on_link[i] = False
        self.begin(i, t, t)
