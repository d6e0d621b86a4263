"""A chunk of map combinations evaluated as arrays: every point's grids, schedules, offsets and windows for
all the chunk's samples at once, every simulation in one compiled call, the gains as arrays.

The combinations and arms are those of ``controller/theory/mapping.py`` (its
:func:`~controller.theory.mapping.evaluate_point` is the reference) and the simulations those of the compiled
model (``fastlanes.simulate_many``: ``fastfluid.simulate_many``, two jobs under weighted sharing several
at a time); what differs is the bookkeeping. The policies' answers are read as
arrays: ``none``, ``priority`` and ``mltcp`` start every job at 0 (``priority`` ranks the shorter burst on
the grid first); ``shift``, ``gate`` and ``guard`` take the grid's schedule (``guard`` on bursts lengthened
by its band), two jobs' by the pair's closed form for all samples at once
(``pairschedule.two_job_tables_min``), more jobs' by ``manyschedule.exact_schedules`` (``compute_schedule``'s
kernels, every sample in one compiled call); ``random`` and
the noise floor take the drawn uniforms' share of each grid period (``draws.Uniforms``); ``align`` pads two
jobs by ``align.pair_paddings`` (compiled), more by ``align_periods``. Identical simulations run once
(``none`` at every point of a chunk, say). ``tests/unit/test_mapchunk.py`` holds the results to the
reference's within 1e-6.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from controller.theory import fastfluid, fastlanes, fluid, manyschedule, pairschedule
from controller.theory.align import (
    DEFAULT_PADDING_SHARE,
    PAIR_PRODUCT_LIMIT,
    padded_periods,
    pair_paddings,
)
from controller.theory.draws import HARMONIC_MULTIPLES, Block
from controller.theory.mapping import MAX_HORIZON_ITERATIONS, MapPoint
from controller.theory.policies import (
    AlignPolicy,
    GatePolicy,
    GuardPolicy,
    MltcpPolicy,
    NonePolicy,
    PolicyKnobs,
    PriorityPolicy,
    RandomPolicy,
    ShiftPolicy,
    get_policy,
)
from controller.theory.schedule import MAX_PERIOD_QUANTA, JobTiming
from controller.theory.sweep import grid_quanta

ARRAY_POLICIES = (NonePolicy, ShiftPolicy, GatePolicy, RandomPolicy, GuardPolicy, PriorityPolicy, MltcpPolicy,
                  AlignPolicy)
_KNOBS = PolicyKnobs()


class NotClosedForm(ValueError):
    """A grid pair beyond the closed form's periods (a quantum far below a millisecond): not for here."""


def applies(policies: tuple[str, ...]) -> bool:
    """Can a chunk of these combinations be evaluated here (built-in policies, not subclasses)?"""
    return all(type(get_policy(p)) in ARRAY_POLICIES for p in ("none", "random", *policies))


@dataclass
class PointArrays:
    """One point's combinations, one entry per sample: each arm's normalised throughput (NaN where the policy
    cannot schedule the jobs or the model could not simulate them), which arms the model could not simulate,
    the grid schedule's feasibility and the harmonic share."""

    throughput: dict[str, np.ndarray]  # none, random, each policy but random, sham
    unsimulated: dict[str, np.ndarray]  # per arm, a bool per sample
    feasible: np.ndarray
    harmonic_share: np.ndarray

    def gains(self, policies: tuple[str, ...]) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], np.ndarray]:
        """Each policy's gain over ``none`` and over random offsets, and the sham gain (``combine_point``)."""
        thr = self.throughput
        mine = {p: thr[p] for p in policies}
        vs_none = {p: mine[p] / thr["none"] - 1 for p in policies}
        vs_random = {p: (thr["sham"] if p == "random" else mine[p]) / thr["random"] - 1 for p in policies}
        return vs_none, vs_random, thr["sham"] / thr["random"] - 1


def evaluate_chunk(block: Block, points: tuple[MapPoint, ...], policies: tuple[str, ...]) -> dict[MapPoint, PointArrays]:
    """Every arm of ``mapping.point_arms`` for each of the block's samples at each of ``points`` (points that
    draw alike, ``mapstream.draws_alike``)."""
    periods, fracs = block.periods_ms, block.fracs
    comm = fracs * periods  # the true jobs (sweep.true_jobs)
    horizon = _horizons(periods)
    harmonic = _harmonic_share(periods)
    runs = _Runs(periods, comm, horizon)
    pending = []
    for point in points:
        view_p = periods * np.maximum(0.5, 1.0 + point.error * block.normals)  # mapping.scheduler_view
        view_f = fracs * periods / view_p
        q = point.quantum_ms
        t, c = grid_quanta(view_p, view_f, q)
        grid_feasible, shifts_ms = _schedule(t, c, q)
        arms = {"none": runs.add(np.zeros_like(periods), 0, 0)}
        arms["random"] = runs.add(_random_offsets(block.offsets[:, 1], t, q), 0, 0)  # draws.RANDOM_ARMS: sham_base
        for p in policies:
            if p == "random":
                continue
            pol = get_policy(p)
            if type(pol) is AlignPolicy:
                arms[p] = _align(runs, t, c, q)
                continue
            if type(pol) is GuardPolicy:
                arms[p] = _guard(runs, t, c, q, _KNOBS.guard_ms)
                continue
            offsets = shifts_ms if pol.uses_schedule else np.zeros_like(periods)
            sharing = fastfluid.SHARING_CODES[pol.link_sharing("fair")]
            rank = np.zeros(periods.shape, np.int64)
            if sharing == fastfluid.SHARING_CODES["priority"]:  # shortest burst on the grid first, ties in job order
                np.put_along_axis(rank, np.argsort(c, axis=1, kind="stable"), np.arange(c.shape[1])[None, :], axis=1)
            realign = bool(point.realign_s) and pol.uses_schedule and not pol.enforces_windows
            mode = fastfluid.GATED if pol.enforces_windows else (fastfluid.REALIGNED if realign else 0)
            if mode:  # windows on the grid from the offsets (fluid.policy_windows)
                arms[p] = runs.add(offsets, sharing, mode, rank, t * q, c * q,
                                   1000.0 * point.realign_s if realign else math.inf)
            else:
                arms[p] = runs.add(offsets, sharing, mode, rank)
        arms["sham"] = runs.add(_random_offsets(block.offsets[:, 2], t, q), 0, 0)
        pending.append((point, arms, grid_feasible))
    thr, stuck = runs.run()
    out = {}
    for point, arms, feasible in pending:
        out[point] = PointArrays({a: _pick(thr, rows) for a, rows in arms.items()},
                                 {a: _pick(stuck, rows, False) for a, rows in arms.items()}, feasible, harmonic)
    return out


def _pick(values: np.ndarray, rows: np.ndarray, missing=math.nan) -> np.ndarray:
    """``values[rows]``, ``missing`` where a row is -1 (the policy cannot schedule that sample's jobs)."""
    out = values[np.maximum(rows, 0)]
    out[rows < 0] = missing
    return out


class _Runs:
    """The chunk's simulations, gathered as rows of arrays; identical rows run once."""

    def __init__(self, periods: np.ndarray, comm: np.ndarray, horizon: np.ndarray):
        self.periods, self.comm, self.horizon = periods, comm, horizon
        self.parts: list[tuple] = []
        self.count = 0

    def add(self, offsets, sharing, mode, rank=None, w_period=None, w_length=None, realign_ms=math.inf,
            pad=None, valid=None) -> np.ndarray:
        """One arm for every sample; its rows (-1 where ``valid`` is False). ``pad``: what each job's period
        grows by (``align``), ``w_period``/``w_length``: the windows' period and length, ms, on the grid."""
        rows = len(offsets)
        period = self.periods if pad is None else self.periods + pad
        fits = ((self.comm > 0) & (self.comm < period)).all(axis=1)  # as fastfluid.Batch.add refuses
        valid = fits if valid is None else valid & fits
        zero = np.zeros_like(offsets)
        self.parts.append((period, offsets, np.full(rows, sharing, np.int64),
                           np.zeros(offsets.shape, np.int64) if rank is None else rank, np.full(rows, mode, np.int64),
                           zero if w_period is None else w_period, zero if w_length is None else w_length,
                           np.full(rows, realign_ms), valid))
        index = np.where(valid, self.count + np.arange(rows), -1)
        self.count += rows
        return index

    def run(self) -> tuple[np.ndarray, np.ndarray]:
        """Each row's normalised throughput (NaN where the model made no progress) and whether it made none."""
        period, offset, sharing, rank, mode, w_period, w_length, realign, valid = (
            np.concatenate(column) for column in zip(*self.parts, strict=True))
        k = len(self.parts)
        solo, comm, horizon = (np.tile(a, (k, 1)) if a.ndim == 2 else np.tile(a, k)
                               for a in (self.periods, self.comm, self.horizon))
        table = np.column_stack([period, comm, offset, sharing, rank, mode, w_period, w_length, realign, horizon])
        keys = np.ascontiguousarray(table[valid]).view(np.dtype((np.void, table.dtype.itemsize * table.shape[1])))
        _, first, inverse = np.unique(keys.ravel(), return_index=True, return_inverse=True)
        run = np.flatnonzero(valid)[first]  # each distinct simulation once
        means = fastlanes.simulate_many(period[run], comm[run], np.ones_like(comm[run]), offset[run], sharing[run],
                                        rank[run], mode[run], offset[run], w_period[run], w_length[run], realign[run],
                                        horizon[run], 0, 2, float(fluid.WARMUP_ITERATIONS), fluid.MLTCP_STEP_MS)
        means_all = np.full(period.shape, np.nan)
        means_all[np.flatnonzero(valid)] = means[inverse.ravel()]
        stuck = np.isnan(means_all).any(axis=1) & valid
        thr = (solo / means_all).sum(axis=1) / solo.shape[1]
        return np.where(stuck, math.nan, thr), stuck


def _schedule(t: np.ndarray, c: np.ndarray, q: float) -> tuple[np.ndarray, np.ndarray]:
    """Each sample's grid schedule (``pairschedule.compute_schedule_fast``): its feasibility and shifts, ms.
    Two jobs as arrays by the pair's closed form; more in one compiled call (``manyschedule``), the few it
    leaves sample by sample (``compute_schedule``)."""
    if t.max() > MAX_PERIOD_QUANTA:
        raise NotClosedForm(f"a grid period beyond {MAX_PERIOD_QUANTA} quanta: not a closed-form pair")
    shifts_ms = np.zeros(t.shape)
    if t.shape[1] == 2:
        d, overlap = pairschedule.two_job_tables_min(t[:, 0], c[:, 0], t[:, 1], c[:, 1])
        shifts_ms[:, 1] = d * q
        return overlap == 0, shifts_ms
    shifts_q, overlap, done = manyschedule.exact_schedules(t, c)
    feasible, shifts_ms = overlap == 0, shifts_q * q
    for r in np.flatnonzero(~done):  # the few compute_schedule takes its own way
        grid = [JobTiming(f"j{i}", int(t[r, i]) * q, int(c[r, i]) * q) for i in range(t.shape[1])]
        schedule = pairschedule.compute_schedule_fast(grid, q)
        feasible[r] = schedule.feasible
        shifts_ms[r] = [schedule.shifts_ms[j.name] for j in grid]
    return feasible, shifts_ms


def _random_offsets(uniforms: np.ndarray, t: np.ndarray, q: float) -> np.ndarray:
    """``RandomPolicy``'s offsets from its uniforms: ``randrange(periods in quanta)`` quanta each."""
    return np.minimum(np.floor(uniforms * t), t - 1) * q


def _guard(runs: _Runs, t: np.ndarray, c: np.ndarray, q: float, guard_ms: float) -> np.ndarray:
    """``guard``: gated windows ``guard_ms`` (up to the grid) longer than each burst, scheduled apart;
    no row where a lengthened burst does not fit in its period (``GuardPolicy.scheduled_timings``)."""
    band = math.ceil(guard_ms / q - 1e-9)
    length_ms = c * q + band * q
    valid = (length_ms < t * q).all(axis=1)
    wide = np.where(valid[:, None], c + band, np.minimum(c, t - 1))
    _, offsets = _schedule(t, wide, q)
    return runs.add(offsets, 0, fastfluid.GATED, None, t * q, length_ms, valid=valid)


def _align(runs: _Runs, t: np.ndarray, c: np.ndarray, q: float) -> np.ndarray:
    """``align``: each sample's padded periods (``align.pair_paddings``, compiled, where the periods keep to
    its limit; else ``align.padded_periods`` sample by sample: ``AlignPolicy``'s), gated on them; no row
    where no padding within its limit separates the jobs."""
    n = t.shape[1]
    padded = np.full(t.shape, -1, np.int64)
    compiled = (n == 2) & ((1 + DEFAULT_PADDING_SHARE) ** 2 * t[:, 0] * t[:, -1] < PAIR_PRODUCT_LIMIT)
    if compiled.any():
        padded[compiled] = pair_paddings(t[compiled, 0], c[compiled, 0], t[compiled, 1], c[compiled, 1], DEFAULT_PADDING_SHARE)
    for r in np.flatnonzero(~compiled):
        found = padded_periods([JobTiming(f"j{i}", int(t[r, i]) * q, int(c[r, i]) * q) for i in range(n)], q)
        if found is not None:
            padded[r] = found
    valid = padded[:, 0] > 0
    padded = np.where(valid[:, None], padded, t)
    _, offsets = _schedule(padded, c, q)
    w_period = padded * q  # the padded jobs on the grid (align._verified), their bursts the grid's
    return runs.add(offsets, 0, fastfluid.GATED, None, w_period, c * q, pad=w_period - t * q, valid=valid)


def _horizons(periods: np.ndarray) -> np.ndarray:
    """``fluid.default_horizon_ms`` of each sample's true jobs: for jobs of whole ms up to 100 s, the lcm in µs
    as arrays, taken job by job and no further once past the longest horizon (the horizon stays there);
    else sample by sample."""
    longest = periods.max(axis=1)
    low, high = fluid.MIN_HORIZON_ITERATIONS * longest, max(fluid.MIN_HORIZON_ITERATIONS,
                                                               MAX_HORIZON_ITERATIONS) * longest
    whole = (periods == np.floor(periods)).all(axis=1) & (longest <= 1e5)
    micros = np.where(whole[:, None], periods, 1).astype(np.int64) * 1000
    lcm, past = micros[:, 0], np.zeros(len(periods), np.bool_)
    for j in range(1, periods.shape[1]):  # a partial lcm of at most 1e10 µs times a period of 1e8: 64 bits
        lcm = np.lcm(np.where(past, 1, lcm), micros[:, j])
        past |= lcm > 1000 * high
    out = np.where(past, high, np.minimum(np.maximum(lcm / 1000, low), high))
    for r in np.flatnonzero(~whole):
        out[r] = fluid.default_horizon_ms([fluid.FluidJob(f"j{i}", float(p), 0.0) for i, p in enumerate(periods[r])],
                                          MAX_HORIZON_ITERATIONS)
    return out


def _harmonic_share(periods: np.ndarray) -> np.ndarray:
    """``mapping.harmonic_jobs``' share of each sample: a period within 1e-9 of 1, 2 or 3 times another's."""
    n = periods.shape[1]
    harmonic = np.zeros(periods.shape, np.bool_)
    for i in range(n):
        for j in range(n):
            if i != j:
                x, y = periods[:, i], periods[:, j]
                for k in HARMONIC_MULTIPLES:
                    harmonic[:, i] |= np.abs(x - k * y) <= 1e-9 * np.maximum(np.abs(x), np.abs(k * y))
    return harmonic.sum(axis=1) / n
