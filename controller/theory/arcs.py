"""Two periodic jobs with arbitrary busy patterns: which shifts keep them apart for ever, exactly.

Model. A job has period ``T`` quanta and a busy set ``B ⊂ Z_T`` (the quanta in which it sends), given as
arcs ``(start_q, length_q)`` inside ``[0, T)`` (:class:`Pattern`). Job 2 delayed by ``s`` quanta is busy
at time ``t`` iff ``(t - s) mod T2 ∈ B2``. :mod:`schedule` is the special case of one arc at 0 per job.

Theorem (the Chinese remainder theorem). Let ``g = gcd(T1, T2)`` and ``L = lcm(T1, T2)``. For ``a ∈ B1``
and ``b ∈ B2`` the system ``t ≡ a (mod T1)``, ``t ≡ b + s (mod T2)`` has a solution iff
``a ≡ b + s (mod g)``, and then exactly one modulo ``L``; conversely a common busy quantum ``t`` gives
back its pair ``a = t mod T1``, ``b = (t - s) mod T2``. Hence

- the two jobs collide in exactly ``O(s) = #{(a, b) ∈ B1 × B2 : a ≡ b + s (mod g)}`` quanta per
  hyper-period ``L``, a function of ``s mod g`` alone: the circular cross-correlation
  ``O(s) = Σ_r n1[r] · n2[(r - s) mod g]`` of the counts ``n_i[r] = #{a ∈ B_i : a ≡ r (mod g)}`` of
  the patterns projected onto the gcd circle (:func:`overlap_table`);
- a shift separates them for ever iff ``O(s) = 0``, i.e. iff
  ``(B1 mod g) ∩ ((B2 mod g) + s) = ∅`` (:func:`separating_shifts`).

One arc each (``B_i = [0, c_i)``) this is the closed form of :func:`schedule.separating_interval`:
separable iff ``c1 + c2 <= g``, by the shifts ``[c1, g - c2]`` (Korst, Aarts & Lenstra 1996). With
several arcs the busy total decides nothing either way: ``T1 = 12`` busy ``{0, 2, 4}`` and ``T2 = 18``
busy ``{0, 1}`` (5 busy quanta on a circle of 6) never separate, while ``T1 = 12`` busy
``{0, 1, 6, 7}`` and ``T2 = 18`` busy ``{2, 3, 8, 9, 14, 15}`` (10 on 6) separate at ``s ≡ 0, 1, 2``.
Where no shift separates, CASSINI (NSDI 2024) scores partial overlap on a circle;
:func:`compatibility` is such a score, defined from ``O``.

Cost and exactness. Everything is integer arithmetic (no FFT, no floats). Two patterns of ``k1`` and
``k2`` arcs forbid one circular interval of shifts per pair of arcs; :func:`separating_arcs` radix-sorts
those ``k1·k2`` intervals by start and reads the gaps, ``O(k1·k2)`` per pass and ``log g / log(k1·k2)``
passes. :func:`overlap_table` adds, per pair of arcs, the trapezoid their overlap draws as a function of
the shift through a second difference array, ``O(k1·k2 + g)``. Both loops are compiled (numba,
``cache=True``): the goal is exact two-job feasibility for 64 arcs each within 50 µs, and NumPy's own sort
of the 4 096 intervals alone takes longer than that (``bench/arcs.py`` measures it).
:func:`brute_force_separating_shifts` walks the hyper-period quantum by quantum: the tests' reference.

References: the Chinese remainder theorem; one arc each: Korst, Aarts & Lenstra 1996; CASSINI (NSDI
2024) scores partial overlap on a circle.
"""

from __future__ import annotations

import itertools
import math
import operator
from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property

import numba
import numpy as np

_INT64_SAFE = 2**62  # a table entry (at most |B1|·|B2|) below this fits int64 with room to spare


@dataclass(frozen=True)
class Pattern:
    """One periodic job's busy quanta: ``arcs`` of ``(start_q, length_q)`` inside ``[0, period_q)``.

    Arcs may come in any order and may overlap or touch; they are stored sorted and merged, so two
    patterns with the same busy set compare equal. An arc may not wrap past the period: busy quanta
    around 0 are two arcs, ``(0, x)`` and ``(period_q - y, y)``. A pattern has at least one busy quantum
    (an idle job meets nothing and needs no shift).
    """

    period_q: int
    arcs: tuple[tuple[int, int], ...]

    def __post_init__(self) -> None:
        period_q = _whole("period_q", self.period_q)
        if period_q < 1:
            raise ValueError(f"period_q must be at least 1 quantum, got {period_q}")
        try:
            raw = [tuple(arc) for arc in self.arcs]
        except TypeError:
            raise ValueError(f"arcs must be a sequence of (start_q, length_q) pairs, got {self.arcs!r}") from None
        if not raw:
            raise ValueError("a pattern needs at least one busy arc, got none")
        checked = []
        for k, arc in enumerate(raw):
            if len(arc) != 2:
                raise ValueError(f"arc {k} must be a (start_q, length_q) pair, got {arc!r}")
            start_q, length_q = _whole(f"arc {k} start_q", arc[0]), _whole(f"arc {k} length_q", arc[1])
            if start_q < 0:
                raise ValueError(f"arc {k} {arc!r} starts before 0 (start_q = {start_q})")
            if length_q < 1:
                raise ValueError(f"arc {k} {arc!r} has length_q {length_q}; an arc is at least 1 quantum")
            if start_q + length_q > period_q:
                raise ValueError(f"arc {k} {arc!r} ends at {start_q + length_q}, past the period {period_q} "
                                 "(arcs may not wrap: split it into two at 0)")
            checked.append((start_q, length_q))
        object.__setattr__(self, "period_q", period_q)
        object.__setattr__(self, "arcs", _merged(checked))

    @classmethod
    def rectangle(cls, period_q: int, comm_q: int) -> Pattern:
        """The classic job of :mod:`schedule`: one burst of ``comm_q`` quanta at the start of the period."""
        return cls(period_q, ((0, comm_q),))

    @property
    def busy_q(self) -> int:
        """Busy quanta per period, ``|B|``."""
        return sum(length_q for _, length_q in self.arcs)

    @cached_property
    def _starts_q(self) -> np.ndarray:
        return np.array([start_q for start_q, _ in self.arcs], dtype=np.int64)

    @cached_property
    def _lengths_q(self) -> np.ndarray:
        return np.array([length_q for _, length_q in self.arcs], dtype=np.int64)


def _whole(name: str, value) -> int:
    try:
        return operator.index(value)
    except TypeError:
        raise ValueError(f"{name} must be a whole number of quanta, got {value!r}") from None


def _merged(arcs: list[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    """Sorted, overlapping and touching arcs joined (on the line: arcs never wrap)."""
    out: list[list[int]] = []
    for start_q, length_q in sorted(arcs):
        if out and start_q <= out[-1][0] + out[-1][1]:
            out[-1][1] = max(out[-1][1], start_q + length_q - out[-1][0])
        else:
            out.append([start_q, length_q])
    return tuple((s, n) for s, n in out)


@numba.njit(cache=True, nogil=True)
def _fold(starts_q, lengths_q, g):
    """The pattern's counts modulo ``g`` as ``wraps`` whole turns of the circle plus partial arcs
    ``(start mod g, length mod g)``, each shorter than ``g``: an arc of length ``l`` covers every residue
    ``l // g`` times and then ``l mod g`` residues from its start on, so ``n[r] = wraps + #{partial arcs
    covering r}``."""
    wraps = 0
    keep = 0
    for k in range(len(lengths_q)):
        wraps += lengths_q[k] // g
        if lengths_q[k] % g:
            keep += 1
    starts, lengths = np.empty(keep, np.int64), np.empty(keep, np.int64)
    keep = 0
    for k in range(len(lengths_q)):
        if lengths_q[k] % g:
            starts[keep], lengths[keep] = starts_q[k] % g, lengths_q[k] % g
            keep += 1
    return wraps, starts, lengths


@numba.njit(cache=True, nogil=True)
def _free_gaps(starts1_q, lengths1_q, starts2_q, lengths2_q, g):
    """The separating shifts as sorted disjoint half-open gaps ``[lo, hi)`` of ``[0, g)``: two arrays.

    Partial arcs ``[p, p + m)`` of job 1 and ``[q, q + n)`` of job 2 meet at shift ``s`` iff
    ``s ≡ p - q - n + 1 + e`` with ``0 <= e < m + n - 1``: one forbidden interval per pair of arcs, from
    ``p + b`` with ``b = (1 - q - n) mod g``. The ``k1·k2`` intervals are sorted by start with an LSD radix
    sort whose digits have about ``log2(k1·k2)`` bits: ``ceil(log2 g / log2(k1·k2))`` linear passes, two
    for 64 arcs each and ``g`` up to ``2**24``, whatever the starts. The gaps are where the running maximum
    of the ends falls short of the next start; ends past ``g`` cover the prefix ``[0, max end - g)``.
    """
    none = np.empty(0, np.int64)
    wraps1, s1, l1 = _fold(starts1_q, lengths1_q, g)
    wraps2, s2, l2 = _fold(starts2_q, lengths2_q, g)
    if wraps1 or wraps2 or l1.max() + l2.max() - 1 >= g:  # busy at every residue, or one pair covers all
        return none, none
    k1, k2 = len(s1), len(s2)
    b = (1 - s2 - l2) % g
    total = k1 * k2
    lo, hi = np.empty(total, np.int64), np.empty(total, np.int64)
    for i in range(k1):
        for j in range(k2):
            start = s1[i] + b[j]
            if start >= g:
                start -= g
            lo[i * k2 + j], hi[i * k2 + j] = start, start + l1[i] + l2[j] - 1
    bits = 4  # LSD radix sort by start: digits of about log2(k1·k2) bits, ceil(log2 g / bits) passes
    while (1 << bits) < total:
        bits += 1
    digits = 1 << bits
    count = np.empty(digits + 1, np.int64)
    lo2, hi2 = np.empty(total, np.int64), np.empty(total, np.int64)
    shift = 0
    while (g - 1) >> shift:
        count[:] = 0
        for k in range(total):
            count[((lo[k] >> shift) & (digits - 1)) + 1] += 1
        for d in range(digits):
            count[d + 1] += count[d]
        for k in range(total):  # stable: equal digits keep the previous passes' order
            d = (lo[k] >> shift) & (digits - 1)
            lo2[count[d]], hi2[count[d]] = lo[k], hi[k]
            count[d] += 1
        lo, hi, lo2, hi2 = lo2, hi2, lo, hi
        shift += bits
    reach = 0
    for k in range(total):
        reach = max(reach, hi[k])
    spill = max(reach - g, 0)
    gap_lo, gap_hi = np.empty(total + 1, np.int64), np.empty(total + 1, np.int64)
    count = 0
    reach = spill
    for k in range(total + 1):
        nxt = lo[k] if k < total else g
        if nxt > reach:
            gap_lo[count], gap_hi[count] = reach, nxt
            count += 1
        if k < total:
            reach = max(reach, hi[k])
    return gap_lo[:count], gap_hi[:count]


@numba.njit(cache=True, nogil=True)
def _overlap_line(starts1_q, lengths1_q, starts2_q, lengths2_q, g):
    """:func:`overlap_table`'s sum, compiled (its docstring says what is summed)."""
    wraps1, s1, l1 = _fold(starts1_q, lengths1_q, g)
    wraps2, s2, l2 = _fold(starts2_q, lengths2_q, g)
    table = np.full(g, g * wraps1 * wraps2 + wraps1 * l2.sum() + wraps2 * l1.sum(), np.int64)
    if len(s1) == 0 or len(s2) == 0:
        return table
    line = np.zeros(4 * g, np.int64)  # second differences at d + 2g, d in [-2g + 3, 2g - 1]
    for i in range(len(s1)):
        for j in range(len(s2)):
            d0 = s1[i] - s2[j] - l2[j] + 1 + 2 * g
            line[d0] += 1
            line[d0 + l1[i]] -= 1
            line[d0 + l2[j]] -= 1
            line[d0 + l1[i] + l2[j]] += 1
    slope = 0
    value = 0
    for turn in range(4):
        for r in range(g):
            slope += line[turn * g + r]
            value += slope
            table[r] += value
    return table


def _check_g(g: int) -> int:
    g = _whole("g", g)
    if g < 1:
        raise ValueError(f"g must be at least 1 quantum, got {g}")
    return g


def projected_counts(pattern: Pattern, g: int) -> np.ndarray:
    """``n[r] = #{a ∈ B : a ≡ r (mod g)}`` for ``r`` in ``[0, g)``, int64."""
    g = _check_g(g)
    wraps, starts, lengths = _fold(pattern._starts_q, pattern._lengths_q, g)
    diff = np.bincount(starts, minlength=2 * g) - np.bincount(starts + lengths, minlength=2 * g)
    line = np.cumsum(diff)
    return line[:g] + line[g:] + wraps


def projected(pattern: Pattern, g: int) -> np.ndarray:
    """``B mod g`` as a bool array of length ``g``: which residues the job is ever busy in."""
    return projected_counts(pattern, g) > 0


def _gaps(p1: Pattern, p2: Pattern) -> tuple[np.ndarray, np.ndarray]:
    return _free_gaps(p1._starts_q, p1._lengths_q, p2._starts_q, p2._lengths_q,
                      math.gcd(p1.period_q, p2.period_q))


def separating_arcs(p1: Pattern, p2: Pattern) -> tuple[tuple[int, int], ...]:
    """The separating shifts of job 2 against job 1 modulo ``g``, as sorted disjoint ``(start, length)``
    arcs inside ``[0, g)`` (an interval through 0 comes as two). Exact, ``O(k1·k2·log k1)`` for ``k1`` and
    ``k2`` arcs, whatever ``g`` (:func:`_free_gaps`)."""
    lo, hi = _gaps(p1, p2)
    return tuple(zip(lo.tolist(), (hi - lo).tolist(), strict=True))


def separable(p1: Pattern, p2: Pattern) -> bool:
    """Does some shift keep the two jobs apart for ever? (Exact two-job feasibility.)"""
    return len(_gaps(p1, p2)[0]) > 0


def separating_shifts(p1: Pattern, p2: Pattern) -> tuple[int, ...]:
    """Every shift ``s`` in ``[0, g)`` of job 2 relative to job 1 (modulo ``g = gcd(T1, T2)``: only that
    residue matters) at which the two jobs never meet, ascending. Exact; see :func:`separating_arcs`.
    The tuple can hold up to ``g`` integers: building it, not finding them, is then the cost."""
    lo, hi = _gaps(p1, p2)
    return tuple(itertools.chain.from_iterable(map(range, lo.tolist(), hi.tolist())))


def overlap_table(p1: Pattern, p2: Pattern) -> np.ndarray:
    """``table[s]``: the quanta both jobs are busy per hyper-period ``lcm(T1, T2)`` when job 2 is shifted
    by ``s`` (mod ``g``) relative to job 1; int64 of length ``g``, zero exactly at the separating shifts.

    Why it is this correlation: a common busy quantum ``t`` in ``[0, L)`` is one pair ``(a, b)`` with
    ``a = t mod T1 ∈ B1``, ``b = (t - s) mod T2 ∈ B2``, and ``a ≡ b + s (mod g)`` since ``g`` divides both
    periods; conversely such a pair fixes ``t`` modulo ``T1`` and ``T2``, hence (CRT) exactly one ``t``
    in ``[0, L)``. So ``table[s] = #{(a, b) : a - b ≡ s (mod g)} = Σ_r n1[r] · n2[(r - s) mod g]``.

    How, in ``O(k1·k2 + g)``: with ``n_i = w_i + (partial arcs of i)`` (:func:`_fold`), the constant
    parts give ``g·w1·w2 + w1·P2 + w2·P1`` (``P_i`` the partial arcs' total) and each pair of partial
    arcs ``[p, p + m)``, ``[q, q + n)`` adds, at difference ``d = x - y``, the overlap of ``[p, p + m)``
    with ``[q + d, q + d + n)``: a trapezoid from ``d0 = p - q - n + 1`` whose second difference is
    ``+1`` at ``d0``, ``-1`` at ``d0 + m`` and ``d0 + n``, ``+1`` at ``d0 + m + n``. Integer sums over a
    line of ``4g`` differences (offset ``2g``), integrated twice, folded onto the circle.
    """
    if p1.busy_q * p2.busy_q >= _INT64_SAFE:
        raise OverflowError(f"overlap counts up to {p1.busy_q * p2.busy_q} would not fit int64")
    return _overlap_line(p1._starts_q, p1._lengths_q, p2._starts_q, p2._lengths_q,
                         math.gcd(p1.period_q, p2.period_q))


def most_collisions(p1: Pattern, p2: Pattern) -> int:
    """The most colliding quanta a shift can give per ``lcm(T1, T2)``: the less busy job's busy quanta in that
    time, ``min(N1, N2)`` with ``N_i = |B_i| · lcm / T_i``."""
    g = math.gcd(p1.period_q, p2.period_q)
    return min(p1.busy_q * (p2.period_q // g), p2.busy_q * (p1.period_q // g))


def compatibility(p1: Pattern, p2: Pattern) -> float:
    """How well the two jobs can share a link, in ``[0, 1]``: ``1 - min_s O(s) / min(N1, N2)``.

    ``O`` is :func:`overlap_table` and ``N_i = |B_i| · L / T_i`` the busy quanta of job ``i`` per
    hyper-period ``L``; no shift can collide on more than the less busy job's ``min(N1, N2)``. So 1 means
    some shift separates them fully, 0 that at every shift each busy quantum of the less busy job
    collides, and in between the share of the less busy job's quanta left clear at the best shift (in the
    spirit of CASSINI's compatibility score; not its exact formula). Computed exactly, then rounded; a
    score short of 1 never rounds to 1.
    """
    worst = most_collisions(p1, p2)
    least = int(overlap_table(p1, p2).min())
    if least == 0:
        return 1.0
    return min(float(Fraction(worst - least, worst)), math.nextafter(1.0, 0.0))


def brute_force_separating_shifts(p1: Pattern, p2: Pattern) -> tuple[int, ...]:
    """The reference: for every ``s`` in ``[0, g)`` walk the hyper-period quantum by quantum and keep
    ``s`` if the jobs are never busy together. Slow (``g · lcm(T1, T2)`` steps), obvious; for tests."""
    t1, t2 = p1.period_q, p2.period_q
    busy1 = {a for start_q, length_q in p1.arcs for a in range(start_q, start_q + length_q)}
    busy2 = {b for start_q, length_q in p2.arcs for b in range(start_q, start_q + length_q)}
    return tuple(
        s for s in range(math.gcd(t1, t2))
        if not any(t % t1 in busy1 and (t - s) % t2 in busy2 for t in range(math.lcm(t1, t2)))
    )
