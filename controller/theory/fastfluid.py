"""The fluid model compiled: the same event loop as :func:`controller.theory.fluid.simulate`, for the cases
the sweep and the map run, at machine speed (numba).

What it covers: jobs as they are (one period and one burst each, a ``link_headroom``, nothing drawn from
samples, no busy starts), one shared link with ``fair``, ``priority``, ``mltcp`` or ``leader`` sharing, and
either free-running jobs or windows that every burst waits for and that are enforced (``gate``, ``guard``,
``align``) with no queue behind the gate and no grace; a horizon or a fixed count of iterations. Only the
built-in policies whose answers it knows (:data:`FAST_POLICIES`) are routed here, and only without
re-alignment; everything else goes to the reference model. It takes the same steps in the same order with
the same tolerances as the reference, so the two agree to rounding (``tests/unit/test_fastfluid.py``
checks 1e-6 on thousands of seeded combinations).

The two-job schedule comes in closed form from ``controller/theory/pairschedule.py``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence

import numba
import numpy as np

from controller.theory import fluid, fluidbursts, pairschedule
from controller.theory.floatsum import left_to_right_sum
from controller.theory.fluidjob import EPS_MS, FluidJob
from controller.theory.policies import (
    LEADER_GAIN,
    MLTCP_GAIN,
    AlignPolicy,
    GatePolicy,
    GuardPolicy,
    MltcpPolicy,
    NonePolicy,
    Policy,
    PolicyKnobs,
    PriorityPolicy,
    RandomPolicy,
    ShiftPolicy,
    get_policy,
)
from controller.theory.schedule import JobTiming

# policies whose answers (offsets, windows, sharing) the compiled loop reproduces; a subclass is not one
FAST_POLICIES = (NonePolicy, ShiftPolicy, GatePolicy, RandomPolicy, GuardPolicy, PriorityPolicy, MltcpPolicy,
                 AlignPolicy)
SHARING_CODES = {"fair": 0, "priority": 1, "mltcp": 2, "leader": 3}
_GAIN = (0.0, 0.0, MLTCP_GAIN, LEADER_GAIN)
_COMPUTE, _SEND, _WAIT = 0, 1, 2
GATED, REALIGNED = 1, 2  # the compiled loop's window modes (0: none)
REALIGN_COST_MS = fluidbursts.REALIGN_COST_MS


@numba.njit(cache=True, inline="always")
def _next_start(shift, period, t):
    return shift + math.ceil((t - shift) / period - EPS_MS) * period


@numba.njit(cache=True)
def simulate_means(period, comm, headroom, offset, sharing, rank, windows, w_shift, w_period, w_length, realign_ms,
                   horizon_ms, warmup_ms, iterations, warmup, step_ms):
    """Each job's mean iteration time (ms; inf where it finished too few bursts), as
    :func:`fluid.simulate` with ``horizon_ms`` (> 0) or a fixed count ``iterations`` (``horizon_ms <= 0``).
    ``windows``: 0 none; :data:`GATED`: every burst waits for its window start and the windows are enforced;
    :data:`REALIGNED`: the first burst ready after every ``realign_ms`` waits for its window start, the windows
    not enforced. NaN: no progress.

    Why one long loop: its state is a dozen per-job arrays that every event reads and writes (the lists of
    ``fluidbursts.Bursts`` in the reference); compiled, they are local arrays, so each step split out would
    take most of them as arguments. The pieces that need few are out of it already
    (``_next_start``, ``_running``, ``_end``). Written out in it: the link's shares (``policies.link_shares``:
    fair, strict priority in ``rank`` order, weights growing with the share sent, sorted stably as Python's
    ``sorted``) and a ready burst's window (``fluid.simulate``'s ``begin``). Its readable twin, in named
    pieces, is :func:`fluid.simulate`, which it matches bit for bit."""
    n = len(period)
    compute = period - comm
    eps = np.empty(n)
    cap = np.empty(n)
    for i in range(n):
        eps[i] = EPS_MS * max(1.0, comm[i])
        cap[i] = 1.0 / headroom[i]
    remaining = np.zeros(n)
    sent = np.zeros(n)
    share = np.zeros(n)
    state = np.zeros(n, np.int64)
    aligned = np.zeros(n, np.bool_)
    next_realign = np.full(n, realign_ms if windows == REALIGNED else math.inf)
    next_t = offset.copy()
    sending = np.zeros(n, np.int64)
    order = np.zeros(n, np.int64)
    weight = np.empty(n)
    key = np.empty(n)
    rank_f = rank.astype(np.float64)
    gain = _GAIN[sharing]
    ends = _no_ends(n)
    span0, span1, give_up, target, max_events = _limits(period, horizon_ms, warmup_ms, iterations, warmup,
                                                        sharing, step_ms)
    t = next_t.min()
    while _running(t, ends, horizon_ms, span1, give_up, target):
        max_events -= 1
        if max_events < 0:
            return np.full(n, np.nan)
        count = 0
        for i in range(n):
            if state[i] == _SEND:
                sending[count] = i
                count += 1
        if sharing == 0 or (sharing >= 2 and count < 2):
            for m in range(count):
                i = sending[m]
                share[i] = min(1.0, headroom[i] / count)
        else:
            total = 0.0
            if sharing == 1:
                for m in range(count):
                    key[sending[m]] = rank_f[sending[m]]
            else:
                for m in range(count):
                    i = sending[m]
                    weight[i] = 1.0 + gain * sent[i] / max(sent[i] + remaining[i], 1e-9)
                    key[i] = 1.0 / (headroom[i] * weight[i])
                    total += weight[i]
            for a in range(count):  # stable insertion sort by key
                x = sending[a]
                b = a - 1
                while b >= 0 and key[order[b]] > key[x]:
                    order[b + 1] = order[b]
                    b -= 1
                order[b + 1] = x
            left = 1.0
            if sharing == 1:
                for m in range(count):
                    i = order[m]
                    take = min(cap[i], left) if left > 1e-12 else 0.0
                    share[i] = take * headroom[i]
                    left = left - take
            else:
                for m in range(count):
                    i = order[m]
                    take = cap[i] if cap[i] * total <= left * weight[i] else left * weight[i] / total
                    share[i] = take * headroom[i]
                    left = left - take
                    total = total - weight[i]
        t_next = next_t[0]
        for i in range(1, n):
            if next_t[i] < t_next:
                t_next = next_t[i]
        stepping = sharing >= 2 and count >= 2
        for m in range(count):
            i = sending[m]
            # a burst that cannot end within a step cannot come first (its end at least the step's, rounded alike)
            if share[i] > 0 and not (stepping and remaining[i] > share[i] * step_ms * (1 + 1e-9)):
                t_next = min(t_next, t + remaining[i] / share[i])
        if stepping:
            t_next = min(t_next, t + step_ms)
        dt = t_next - t
        for m in range(count):
            i = sending[m]
            remaining[i] -= dt * share[i]
            sent[i] += dt * share[i]
        t = t_next
        for i in range(n):
            s = state[i]
            if s == _SEND and remaining[i] <= eps[i]:
                _end(ends, i, t, horizon_ms, span0, span1, warmup)
                state[i], next_t[i] = _COMPUTE, t + max(0.0, compute[i])
            elif s != _SEND and next_t[i] <= t + EPS_MS:  # a burst is ready (computed, or its wait is over)
                now = t
                if s == _COMPUTE:
                    remaining[i] = comm[i]
                    sent[i] = 0.0
                    aligned[i] = False
                else:
                    now = next_t[i]
                if windows == 0:
                    state[i], next_t[i] = _SEND, math.inf
                    continue
                start = w_shift[i] + math.floor((now - w_shift[i]) / w_period[i] + EPS_MS) * w_period[i]  # the last
                end = start + w_length[i]
                inside = now < end - EPS_MS
                takes = now - start <= 1e-6 and inside  # at a window start
                following = _next_start(w_shift[i], w_period[i], now)
                if now >= next_realign[i] - EPS_MS and not aligned[i]:  # time to re-align
                    while next_realign[i] <= now + EPS_MS:
                        next_realign[i] += realign_ms
                    aligned[i] = True
                    if not takes:
                        state[i], next_t[i] = _WAIT, following + REALIGN_COST_MS
                        continue
                if windows == GATED and not aligned[i] and not takes:  # waits for a window start
                    state[i], next_t[i] = _WAIT, following
                    continue
                aligned[i] = True
                if windows != GATED:
                    state[i], next_t[i] = _SEND, math.inf
                elif not inside:
                    state[i], next_t[i] = _WAIT, following
                else:
                    state[i], next_t[i] = _SEND, end
            elif s == _SEND and next_t[i] <= t + EPS_MS:  # the window closes
                state[i], next_t[i] = _WAIT, _next_start(w_shift[i], w_period[i], t + EPS_MS)
    return _means(ends, horizon_ms, warmup)


@numba.njit(cache=True)
def simulate_free_fair(period, comm, headroom, offset, horizon_ms, warmup_ms, iterations, warmup):
    """:func:`simulate_means` where every job runs free (no windows) and sending bursts share the link
    fairly: the sweep's ``none``, ``shift`` and ``random`` arms. The same steps, so the same numbers bit for
    bit (a minimum is the same in any order; each burst's progress and its end are read in one pass, the
    shares for each number of bursts sending computed once, and whether it runs kept as the number of jobs
    still short of their ends); without the window, re-alignment and weighted-sharing branches it takes a
    third of the time."""
    n = len(period)
    compute = period - comm
    eps = np.empty(n)
    shares = np.zeros((n + 1, n))  # by the number of bursts sending: each one's share
    for i in range(n):
        eps[i] = EPS_MS * max(1.0, comm[i])
        for count in range(1, n + 1):
            shares[count, i] = min(1.0, headroom[i] / count)
    remaining = np.zeros(n)
    sending = np.zeros(n, np.bool_)
    count = 0
    next_t = offset.copy()  # a computing job's next burst start; inf while it sends
    ends = _no_ends(n)
    span0, span1, give_up, target, max_events = _limits(period, horizon_ms, warmup_ms, iterations, warmup, 0, 1.0)
    short = n  # jobs _running waits for: no end yet or none past the span (horizon), too few ends (count)
    t = next_t.min()
    while short > 0 and (horizon_ms <= 0 or t < give_up):  # _running
        max_events -= 1
        if max_events < 0:
            return np.full(n, np.nan)
        t_next = math.inf
        for i in range(n):
            if sending[i]:
                if shares[count, i] > 0:
                    t_next = min(t_next, t + remaining[i] / shares[count, i])
            elif next_t[i] < t_next:
                t_next = next_t[i]
        dt = t_next - t
        t = t_next
        shared_by = count
        for i in range(n):
            if sending[i]:
                remaining[i] -= dt * shares[shared_by, i]
                if remaining[i] <= eps[i]:
                    waited = ends[i, _COUNT] == 0 or ends[i, _LAST] < span1 if horizon_ms > 0 else True
                    _end(ends, i, t, horizon_ms, span0, span1, warmup)
                    if waited and (t >= span1 if horizon_ms > 0 else ends[i, _COUNT] == target):
                        short -= 1
                    sending[i], count, next_t[i] = False, count - 1, t + max(0.0, compute[i])
            elif next_t[i] <= t + EPS_MS:
                remaining[i] = comm[i]
                sending[i], count, next_t[i] = True, count + 1, math.inf
    return _means(ends, horizon_ms, warmup)


@numba.njit(cache=True)
def _limits(period, horizon_ms, warmup_ms, iterations, warmup, sharing, step_ms):
    """(span start, span end, give-up time, ends each job needs, event budget) as ``fluid.simulate`` sets them."""
    n = len(period)
    if horizon_ms > 0:
        span0, span1 = warmup_ms, warmup_ms + horizon_ms
        give_up = span1 + horizon_ms + 2 * period.max()
        max_events = 1000 * n * (math.ceil(give_up / period.min()) + 3)
        if sharing >= 2:
            max_events += 2 * math.ceil(give_up / step_ms)
        return span0, span1, give_up, 0, max_events
    target = warmup + iterations + 1
    return 0.0, math.inf, math.inf, target, 1000 * n * target


# The ends, streamed: per job how many, the last, and what the mean needs (fluidjob.mean_iteration)
_COUNT, _LAST, _FIRST_AT, _FIRST, _SECOND, _INNER_AT, _INNER = range(7)


@numba.njit(cache=True)
def _no_ends(n):
    ends = np.zeros((n, 7))
    ends[:, _LAST] = -math.inf
    ends[:, _FIRST_AT] = -1.0  # index of the first end in the span (horizon) or of the warm-up's end (count)
    ends[:, _INNER_AT] = -1.0  # index of the last end at or before the span's end
    return ends


@numba.njit(cache=True, inline="always")
def _running(t, ends, horizon_ms, span1, give_up, target):
    """``fluid.simulate``'s ``running()``."""
    for i in range(ends.shape[0]):
        if horizon_ms > 0:
            if t < give_up and (ends[i, _COUNT] == 0 or ends[i, _LAST] < span1):
                return True
        elif ends[i, _COUNT] < target:
            return True
    return False


@numba.njit(cache=True, inline="always")
def _end(ends, i, t, horizon_ms, span0, span1, warmup):
    """Job i's burst ended at ``t``."""
    k = ends[i, _COUNT]
    if horizon_ms > 0:
        if ends[i, _FIRST_AT] < 0 and t >= span0 - EPS_MS:
            ends[i, _FIRST_AT], ends[i, _FIRST] = k, t
        elif ends[i, _FIRST_AT] >= 0 and k == ends[i, _FIRST_AT] + 1:
            ends[i, _SECOND] = t
        if ends[i, _FIRST_AT] >= 0 and t <= span1 + EPS_MS:
            ends[i, _INNER_AT], ends[i, _INNER] = k, t
    elif k == warmup:
        ends[i, _FIRST_AT], ends[i, _FIRST] = k, t
    ends[i, _COUNT] = k + 1
    ends[i, _LAST] = t


@numba.njit(cache=True)
def _means(ends, horizon_ms, warmup):
    """Each job's mean iteration time from its streamed ends (``fluidjob.mean_iteration``)."""
    n = ends.shape[0]
    out = np.empty(n)
    for i in range(n):
        first_at, first = ends[i, _FIRST_AT], ends[i, _FIRST]
        if horizon_ms <= 0:
            out[i] = (ends[i, _LAST] - first) / (ends[i, _COUNT] - 1 - warmup)
        elif first_at < 0 or ends[i, _COUNT] - first_at < 2:
            out[i] = math.inf
        elif ends[i, _INNER_AT] > first_at:
            out[i] = (ends[i, _INNER] - first) / (ends[i, _INNER_AT] - first_at)
        else:
            out[i] = ends[i, _SECOND] - first
    return out


def supports(policy: str) -> bool:
    """Does the compiled model reproduce ``policy`` (one of :data:`FAST_POLICIES`, not a subclass)?"""
    return type(get_policy(policy)) in FAST_POLICIES


def predict_throughput(policy: str, timings: Sequence[JobTiming], jobs: Sequence[FluidJob], quantum_ms: float,
                       knobs: PolicyKnobs | None = None, schedule_cache: dict | None = None, seed: int = 0, *,
                       iterations: int | None = None, horizon_ms: float | None = None) -> float:
    """The normalised throughput that ``fluid.predict_policy(...)[1].normalised_throughput`` gives, for a
    policy :func:`supports` accepts. ValueError as there where the policy cannot schedule the jobs,
    ``fluid.Unsimulated`` where the model cannot simulate it."""
    batch = Batch(iterations=iterations)
    slot = batch.add(policy, timings, jobs, quantum_ms, knobs, schedule_cache, seed, horizon_ms=horizon_ms)
    batch.run()
    return batch.throughput(slot)


class Batch:
    """Simulations gathered here and run in one compiled call: :meth:`add` each (it returns a slot), then
    :meth:`run`, then :meth:`throughput` of each slot. All of a batch's simulations have as many jobs and
    the same ``iterations`` (None: each its own horizon). Identical simulations share a slot (``none`` is the
    same at every quantum): the loop is a function of its inputs alone."""

    def __init__(self, iterations: int | None = None):
        self.iterations = iterations
        self._inputs: list[tuple] = []
        self._policies: list[str] = []  # per slot, the policy first added there (to name it)
        self._solo: list[list[float]] = []
        self._slots: dict[tuple, int] = {}
        self._means: np.ndarray | None = None
        self._jobs: Sequence[FluidJob] | None = None
        self._figures: tuple = ()
        self.seconds = 0.0

    def add(self, policy: str, timings: Sequence[JobTiming], jobs: Sequence[FluidJob], quantum_ms: float,
            knobs: PolicyKnobs | None = None, schedule_cache: dict | None = None, seed: int = 0, *,
            horizon_ms: float | None = None) -> tuple[int, int]:
        """One policy on the true ``jobs``, its schedule from the grid ``timings`` (as
        ``fluid.predict_policy``); its slot. ValueError where the policy cannot schedule the jobs."""
        pol = get_policy(policy)
        if type(pol).scheduled_timings is Policy.scheduled_timings:  # the grid as it is
            scheduled, padded = timings, False
        else:
            scheduled = pol.scheduled_timings(timings, quantum_ms, knobs or _KNOBS)
            padded = any(s.period_ms != t.period_ms for s, t in zip(scheduled, timings, strict=True))
        key = tuple(scheduled)
        cache = schedule_cache if schedule_cache is not None else {}
        schedule = cache.get(key)
        if schedule is None:
            schedule = cache[key] = pairschedule.compute_schedule_fast(scheduled, quantum_ms)
        offsets = pol.initial_offsets_ms(schedule, fluid.offset_generator(seed) if type(pol) is RandomPolicy else None)
        if jobs is not self._jobs:
            self._jobs = jobs
            self._figures = (tuple(j.period_ms for j in jobs), tuple(j.comm_ms for j in jobs),
                             tuple(j.link_headroom for j in jobs))
        solo, comm, headroom = self._figures
        period = solo
        if padded:
            period = tuple(p + (s.period_ms - t.period_ms) for p, s, t in zip(solo, scheduled, timings, strict=True))
        if self.iterations is not None:
            horizon_ms = 0.0
        elif horizon_ms is None:
            horizon_ms = fluid.default_horizon_ms([FluidJob(j.name, p, j.comm_ms) for j, p in zip(jobs, period,
                                                                                               strict=True)])
        sharing = SHARING_CODES[pol.link_sharing("fair")]
        if sharing == SHARING_CODES["priority"]:
            order = {name: k for k, name in enumerate(pol.priority_order(schedule))}
            rank = tuple(order.get(j.name, len(order) + k) for k, j in enumerate(jobs))
        else:
            rank = (0,) * len(jobs)  # only strict priority reads it
        offset = tuple(offsets[j.name] for j in jobs)
        realign_s = (knobs or _KNOBS).realign_s
        realign = bool(realign_s) and pol.uses_schedule and not pol.enforces_windows
        # of these policies, those that enforce windows wait for them every iteration (Policy.realigns())
        mode = GATED if pol.enforces_windows else (REALIGNED if realign else 0)
        if mode:  # fluid.policy_windows: on the schedule's grid, from the offsets
            by_name = {s.name: s for s in schedule.jobs}
            windows = (offset, tuple(by_name[j.name].period_ms for j in jobs),
                       tuple(by_name[j.name].comm_ms for j in jobs))
        else:
            windows = (offset, offset, offset)  # not read
        inputs = (period, comm, headroom, offset, sharing, rank, mode, *windows,
                  1000.0 * realign_s if realign else math.inf, horizon_ms)
        slot = self._slots.get(inputs)
        if slot is None:
            for c, p, h in zip(comm, period, headroom, strict=True):
                if not 0 < c < p or not h >= 1.0:
                    raise ValueError(f"need 0 < comm_ms < period_ms and link_headroom >= 1, got {c}, {p}, {h}")
            slot = self._slots[inputs] = len(self._inputs)
            self._inputs.append(inputs)
            self._policies.append(policy)
        self._solo.append(solo)
        return len(self._solo) - 1, slot

    def run(self) -> None:
        """Run every simulation added (:attr:`seconds`: how long the compiled loop took, CPU)."""
        if not self._inputs:
            self._means = np.zeros((0, 0))
            return
        columns = list(zip(*self._inputs, strict=True))
        arrays = [np.array(c, dtype=np.int64 if k in (4, 5, 6) else np.float64)
                  for k, c in enumerate(columns)]
        started = time.process_time()
        self._means = simulate_many(*arrays, self.iterations or 0, 2, float(fluid.WARMUP_ITERATIONS),
                                    fluid.MLTCP_STEP_MS)
        self.seconds = time.process_time() - started
        self._rows, self._stuck = self._means.tolist(), np.isnan(self._means).any(axis=1).tolist()

    def throughput(self, handle: tuple[int, int]) -> float:
        """The normalised throughput (mean over jobs of solo period / mean iteration time) of a slot;
        ``fluid.Unsimulated`` where the compiled loop made no progress on it."""
        solo, slot = handle
        means = self._rows[slot]
        if self._stuck[slot]:
            raise fluid.Unsimulated(self._policies[slot], "fluid model made no progress (window or time values "
                                                          "out of range)")
        return left_to_right_sum(p / m for p, m in zip(self._solo[solo], means, strict=True)) / len(means)


_KNOBS = PolicyKnobs()


@numba.njit(cache=True)
def simulate_many(period, comm, headroom, offset, sharing, rank, windows, w_shift, w_period, w_length, realign_ms,
                  horizon_ms, iterations, warmup, warmup_periods, step_ms):
    """:func:`simulate_means` of every row (``horizon_ms[k] <= 0``: ``iterations`` each), the span after
    ``warmup_periods`` of the longest job."""
    out = np.empty(period.shape)
    for k in range(period.shape[0]):
        longest = period[k].max()
        if windows[k] == 0 and sharing[k] == 0:
            out[k] = simulate_free_fair(period[k], comm[k], headroom[k], offset[k], horizon_ms[k],
                                        warmup_periods * longest, iterations, warmup)
            continue
        out[k] = simulate_means(period[k], comm[k], headroom[k], offset[k], sharing[k], rank[k], windows[k],
                                w_shift[k], w_period[k], w_length[k], realign_ms[k], horizon_ms[k], warmup_periods * longest,
                                iterations, warmup, step_ms)
    return out
