"""Benchmark: exact two-job feasibility for busy patterns of many arcs (``controller/theory/arcs.py``).

Each case is two :class:`~controller.theory.arcs.Pattern` s of seeded random arcs (fixed seed): 64 arcs
each at periods 100 000 and 150 000 quanta (``g = 50 000``), short arcs (the jobs separate, at thousands
of shifts) and long ones (they do not); 64 arcs each at the realistic circles of a 1-ms quantum,
``g = 2 000`` and ``5 000``; and 8 arcs each at periods 1 000 and 1 500. For each case, the median time of
one call, in µs, of:

- ``separable``: exact feasibility (is there a separating shift?), the figure the goal is about;
- ``separating_arcs``: every separating shift, as ``(start, length)`` arcs (Python tuples);
- ``separating_shifts``: every separating shift as a tuple of ints (as many as ``g``: building the tuple
  then costs more than finding the shifts);
- ``overlap_table``: the overlap of every shift on the gcd circle, ``O(k1·k2 + g)``.

The patterns are built once (a pattern keeps its arcs as arrays); the compiled kernels (numba) are loaded
or compiled by a warm-up call, not timed (``first_call_ms``). Timer: ``time.perf_counter`` around blocks
of calls that take at least 2 ms, the median over ``--repeats`` blocks. ``numpy_sort_us``: what NumPy
alone takes to sort the ``k1·k2`` interval starts, for comparison with a plain-NumPy design.
The goal, exact feasibility of two 64-arc patterns in at most 50 µs, is ``goal_met`` (every 64-arc case).

    .venv/bin/python bench/arcs.py [--json] [--repeats 31]

With ``--json`` the last line is one JSON object: ``{"cases": {name: {"g", "arcs", "separable",
"free_arcs", "free_shifts", "us": {function: median µs}, "numpy_sort_us"}}, "goal_us", "goal_met", ...}``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import random
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from controller.theory.arcs import (  # noqa: E402
    Pattern,
    overlap_table,
    separable,
    separating_arcs,
    separating_shifts,
)

GOAL_US = 50.0
# name: (period 1, period 2, arcs each, longest arc) in quanta
CASES = {
    "g50000_64arcs_short": (100_000, 150_000, 64, 3),
    "g50000_64arcs_long": (100_000, 150_000, 64, 400),
    "g5000_64arcs": (10_000, 15_000, 64, 2),
    "g2000_64arcs": (4_000, 6_000, 64, 1),
    "g500_8arcs": (1_000, 1_500, 8, 10),
}
FUNCTIONS = {"separable": separable, "separating_arcs": separating_arcs,
             "separating_shifts": separating_shifts, "overlap_table": overlap_table}


def random_pattern(rng: random.Random, period_q: int, n_arcs: int, longest_q: int) -> Pattern:
    """``n_arcs`` disjoint arcs at random starts, 1..``longest_q`` quanta each (kept apart so none merge)."""
    while True:
        starts = sorted(rng.sample(range(period_q - longest_q), n_arcs))
        arcs = tuple((s, rng.randint(1, longest_q)) for s in starts)
        pattern = Pattern(period_q, arcs)
        if len(pattern.arcs) == n_arcs:
            return pattern


def median_us(fn, repeats: int) -> float:
    """Median µs of one call, over ``repeats`` blocks of calls each lasting at least 2 ms."""
    number = 1
    while True:
        t = time.perf_counter()
        for _ in range(number):
            fn()
        if time.perf_counter() - t >= 2e-3:
            break
        number *= 2
    blocks = []
    for _ in range(repeats):
        t = time.perf_counter()
        for _ in range(number):
            fn()
        blocks.append((time.perf_counter() - t) / number)
    return statistics.median(blocks) * 1e6


def numpy_sort_us(p1: Pattern, p2: Pattern, repeats: int) -> float:
    """Median µs of ``np.sort`` of the ``k1·k2`` interval starts alone (a plain-NumPy design's floor)."""
    g = math.gcd(p1.period_q, p2.period_q)
    s1 = np.array([a for a, _ in p1.arcs], np.int64) % g
    s2 = np.array([a + n for a, n in p2.arcs], np.int64)
    starts = ((s1[:, None] + (1 - s2)[None, :]) % g).ravel()
    return median_us(lambda: np.sort(starts), repeats)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="last line: one JSON object")
    parser.add_argument("--repeats", type=int, default=31, help="timed blocks per figure (median)")
    args = parser.parse_args()
    if args.repeats < 1:
        print("bench/arcs.py: --repeats must be at least 1", file=sys.stderr)
        return 2
    rng = random.Random(2026)
    pairs = {name: (random_pattern(rng, t1, k, longest), random_pattern(rng, t2, k, longest))
             for name, (t1, t2, k, longest) in CASES.items()}
    t = time.perf_counter()
    for fn in FUNCTIONS.values():
        fn(*pairs["g500_8arcs"])  # loads (or compiles) the kernels
    first_call_ms = (time.perf_counter() - t) * 1e3
    cases = {}
    for name, (p1, p2) in pairs.items():
        free = separating_arcs(p1, p2)
        case = {"g": math.gcd(p1.period_q, p2.period_q), "periods_q": [p1.period_q, p2.period_q],
                "arcs": [len(p1.arcs), len(p2.arcs)], "separable": bool(free), "free_arcs": len(free),
                "free_shifts": sum(n for _, n in free),
                "us": {fname: round(median_us(lambda fn=fn, p1=p1, p2=p2: fn(p1, p2), args.repeats), 1)
                       for fname, fn in FUNCTIONS.items()},
                "numpy_sort_us": round(numpy_sort_us(p1, p2, args.repeats), 1)}
        cases[name] = case
        print(f"{name}: g {case['g']}, arcs {case['arcs']}, separable {case['separable']} "
              f"({case['free_shifts']} shifts in {case['free_arcs']} arcs); "
              + ", ".join(f"{f} {us} µs" for f, us in case["us"].items())
              + f"; numpy sort alone {case['numpy_sort_us']} µs", file=sys.stderr)
    wide = [c["us"]["separable"] for c in cases.values() if min(c["arcs"]) >= 64]
    result = {
        "cases": cases,
        "goal_us": GOAL_US,
        "goal": "exact two-job feasibility (separable) for 64 arcs each",
        "goal_met": max(wide) <= GOAL_US,
        "worst_64_arc_separable_us": max(wide),
        "first_call_ms": round(first_call_ms, 1),
        "counting": "median µs of one call in one process, patterns built beforehand, warm-up excluded",
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "machine": f"{platform.system()} {platform.release()}, {platform.machine()}, Python "
                   f"{platform.python_version()}, NumPy {np.__version__}, {os.cpu_count()} CPUs",
    }
    if args.json:
        print(json.dumps(result))
    else:
        for k, v in result.items():
            print(f"{k}: {v}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
