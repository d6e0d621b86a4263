"""The random combinations of the sweep and the map, drawn a block of samples at a time (the one sampler).

A stream is one seed, number of jobs, workload and harmonic share; its samples come in blocks of
:data:`BLOCK_SAMPLES`, each drawn by its own ``numpy.random.Generator`` seeded ``[seed, n_jobs, workload,
mix, block]``. So sample k is the same whichever chunk (or process) asks for it, and drawing a chunk is a
few array calls rather than a generator per sample.

Per sample and job: the true period (uniform over the integer ms of the period range; the zoo: a random
model trained by 2, 4 or 8 workers), the communication fraction (uniform over its range; the zoo: the
model's), a standard normal (the map's measurement error) and, for each random-offset arm
(:data:`RANDOM_ARMS`), a uniform in [0, 1): that arm's start offset is that share of the job's period on
the grid (:class:`Uniforms`). The offsets' uniforms are the same at every quantum, a paired design like
the jobs'. A block draws them in this order, each for all its samples at once: the uniforms, the normals,
the fractions, the periods. With a harmonic share (the map's uniform workload) a given number of jobs of each sample is
harmonic, and a draw in which jobs came out related by chance is drawn again (:func:`harmonic_counts`).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from functools import cache, lru_cache

import numpy as np

from controller.theory import zoo

BLOCK_SAMPLES = 1024
RANDOM_ARMS = ("random", "sham_base", "sham")  # the `random` policy, and the noise floor's two arms
HARMONIC_MULTIPLES = (1, 2, 3)  # a period identical to, or this many times, another job's
ZOO_WORKERS = (2, 4, 8)
_WORKLOADS = ("uniform", "zoo")
_MAX_REDRAWS = 10_000  # of a sample whose harmonic count came out wrong (a guard, never reached)


@dataclass(frozen=True)
class Block:
    """Samples ``[start, start + len)`` of one stream: arrays of (samples, jobs), ``offsets`` (samples,
    arms, jobs)."""

    start: int
    periods_ms: np.ndarray
    fracs: np.ndarray
    normals: np.ndarray
    offsets: np.ndarray

    def raw(self, sample: int) -> list[tuple[float, float]]:
        """(period_ms, comm fraction) of each job of ``sample``."""
        r = sample - self.start
        return [(float(p), float(f)) for p, f in zip(self.periods_ms[r], self.fracs[r], strict=True)]

    def uniforms(self, sample: int) -> np.ndarray:
        """The random-offset arms' uniforms of ``sample``: (arms, jobs)."""
        return self.offsets[sample - self.start]


class Uniforms:
    """Draws from given uniforms in [0, 1), in order: what ``RandomPolicy`` asks of its generator
    (``randrange(n)``: the uniform's share of n, rounded down)."""

    def __init__(self, values):
        self._values = iter(values)

    def randrange(self, n: int) -> int:
        return min(int(next(self._values) * n), n - 1)


def draw(seed: int, n_jobs: int, start: int, stop: int, period_range: tuple[int, int],
         frac_range: tuple[float, float], workload: str = "uniform", zoo_link_mbps: float = 10_000.0,
         mix: float | None = None) -> Block:
    """Samples ``[start, stop)`` of the stream (``mix``: the share of harmonic jobs, uniform workload only;
    None: no constraint, the sweep's)."""
    if workload not in _WORKLOADS:
        raise ValueError(f"workload: one of {', '.join(_WORKLOADS)}, got {workload!r}")
    if stop <= start:
        raise ValueError(f"need start < stop, got {start}, {stop}")
    first, last = start // BLOCK_SAMPLES, (stop - 1) // BLOCK_SAMPLES
    blocks = [_block(seed, n_jobs, b, tuple(period_range), tuple(frac_range), workload, zoo_link_mbps,
                     None if workload == "zoo" else mix) for b in range(first, last + 1)]
    a, b = start - first * BLOCK_SAMPLES, stop - first * BLOCK_SAMPLES
    return Block(start, *(np.concatenate(parts)[a:b] for parts in zip(*blocks, strict=True)))


@lru_cache(maxsize=32)  # a chunk's block serves the chunks next to it, and every point drawing alike
def _block(seed, n_jobs, block, period_range, frac_range, workload, zoo_link_mbps, mix):
    mix_code = 0 if mix is None else 1 + round(1000 * mix)
    rng = np.random.default_rng([seed, n_jobs, _WORKLOADS.index(workload), mix_code, block])
    shape = (BLOCK_SAMPLES, n_jobs)
    offsets = rng.random((BLOCK_SAMPLES, len(RANDOM_ARMS), n_jobs))
    normals = rng.standard_normal(shape)
    if workload == "zoo":
        names = sorted(zoo.models())
        model = rng.integers(len(names), size=shape)
        workers = rng.choice(ZOO_WORKERS, size=shape)
        timing = np.array([[_zoo_timing(names[m], int(w), zoo_link_mbps) for m, w in zip(row_m, row_w, strict=True)]
                           for row_m, row_w in zip(model, workers, strict=True)])
        return timing[..., 0], timing[..., 1], normals, offsets
    fracs = rng.uniform(*frac_range, size=shape)
    lo, hi = period_range
    if mix is None:
        return rng.integers(lo, hi + 1, size=shape).astype(np.float64), fracs, normals, offsets
    samples = np.arange(block * BLOCK_SAMPLES, (block + 1) * BLOCK_SAMPLES)
    periods = mixed_periods(rng, harmonic_count(n_jobs, mix, samples), n_jobs, lo, hi)
    return periods.astype(np.float64), fracs, normals, offsets


@cache
def _zoo_timing(model: str, workers: int, link_mbps: float) -> tuple[float, float]:
    t = zoo.job_timing(model, workers, link_mbps)
    return t.period_ms, t.comm_ms / t.period_ms


def harmonic_count(n_jobs: int, share: float, samples):
    """How many of the ``n_jobs`` of each of ``samples`` are harmonic: ``floor`` or ``ceil`` of
    ``share × n_jobs``, spread over the samples so that samples 0..K-1 hold ``floor(K × share × n)``."""
    x = _rate(share) * n_jobs
    k = np.asarray(samples, dtype=np.int64)
    return ((k + 1) * x.numerator) // x.denominator - (k * x.numerator) // x.denominator


@cache
def _rate(share: float) -> Fraction:
    return Fraction(share).limit_denominator(10_000)


def harmonic_counts(periods: np.ndarray) -> np.ndarray:
    """Per row of integer periods, how many jobs are harmonic (a period identical to, or 2 or 3 times,
    another job's: ``mapping.harmonic_jobs``)."""
    n = periods.shape[1]
    a, b = periods[:, :, None], periods[:, None, :]
    related = np.zeros(periods.shape + (n,), np.bool_)
    for k in HARMONIC_MULTIPLES:
        related |= a == k * b  # job i's period is k times job j's
    related &= ~np.eye(n, dtype=np.bool_)
    return related.any(axis=2).sum(axis=1)


def mixed_periods(rng: np.random.Generator, harmonic: np.ndarray, n_jobs: int, lo: int, hi: int) -> np.ndarray:
    """Integer periods of ``n_jobs`` jobs per row, ``harmonic[row]`` of them harmonic, in random order.

    All harmonic: a root period, a twin of it, the others 1, 2 or 3 times it. Otherwise the free jobs
    are uniform (the first from the lower half of the range, so that a double fits) and each harmonic
    job is 2 or 3 times a free job; rows whose count comes out otherwise are drawn again.
    """
    harmonic = np.asarray(harmonic)
    if ((harmonic < 0) | (harmonic > n_jobs)).any():
        raise ValueError(f"harmonic jobs: need 0..{n_jobs}, got {harmonic.max()}")
    if 2 * lo > hi and harmonic.any():
        raise ValueError(f"period range {lo}:{hi} has no room for a period and its double")
    out = np.zeros((len(harmonic), n_jobs), np.int64)
    todo = np.arange(len(harmonic))
    for _ in range(_MAX_REDRAWS):
        if not len(todo):
            order = np.argsort(rng.random(out.shape), axis=1)  # harmonic jobs are not always the last ones
            return np.take_along_axis(out, order, axis=1)
        drawn = _structured(rng, harmonic[todo], n_jobs, lo, hi)
        ok = harmonic_counts(drawn) == harmonic[todo]
        out[todo[ok]] = drawn[ok]
        todo = todo[~ok]
    raise RuntimeError(f"could not draw {n_jobs} jobs with the harmonic counts asked for in {lo}:{hi}")


def _structured(rng, harmonic, n_jobs, lo, hi):
    """One draw of :func:`mixed_periods`' structure for every row (not yet checked)."""
    rows = len(harmonic)
    periods = rng.integers(lo, hi + 1, size=(rows, n_jobs))
    low_half = rng.integers(lo, hi // 2 + 1, size=rows) if hi // 2 >= lo else periods[:, 0]
    pick, multiple = rng.random((rows, n_jobs)), rng.random((rows, n_jobs))
    free = n_jobs - harmonic
    some = (harmonic > 0) & (free > 0)
    periods[:, 0] = np.where(some, low_half, periods[:, 0])
    column = np.arange(n_jobs)
    fitting = (column[None, :] < free[:, None]) & (2 * periods <= hi)  # bases with room for a double
    count = np.maximum(fitting.sum(axis=1), 1)
    for j in range(1, n_jobs):
        chosen = np.argmax(np.cumsum(fitting, axis=1) > np.floor(pick[:, j] * count)[:, None], axis=1)
        base = periods[np.arange(rows), chosen]
        times = 2 + np.floor(multiple[:, j] * (1 + (3 * base <= hi))).astype(np.int64)
        periods[:, j] = np.where(some & (j >= free), base * times, periods[:, j])
    root = periods[:, 0]
    choices = 1 + (2 * root <= hi) + (3 * root <= hi)
    rest = root[:, None] * (1 + np.floor(multiple * choices[:, None]).astype(np.int64))
    every = harmonic == n_jobs
    periods[every] = rest[every]
    periods[every, :2] = root[every, None]
    return periods

