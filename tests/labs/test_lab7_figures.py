"""Lab 7's model figures, derived here without shiftbed's theory code.

The sheet promises what `shiftbed plan` prints for ResNet-50's pattern beside a job of one burst
(test_lab_sheets.py runs those commands). Here the same verdicts come from first principles:

- ResNet-50's link time per iteration from its published parameter count alone (fp32 gradients, a
  ring all-reduce between two workers sends each worker's whole message once, at 10 Gbit/s);
- the pair's collisions by brute force: for every relative shift, the ms of the hyper-period in which
  both jobs are busy, walked ms by ms from the busy arcs the sheet shows (no projection, no CRT);
- the rectangle rule and its separating interval ``[c1, g - c2]`` with :func:`math.gcd`.
"""

from __future__ import annotations

import math
import re

import labsheet
import numpy as np

LAB7 = labsheet.LABS / "lab7-patterns.md"
RESNET50_PARAMETERS = 25_557_032  # torchvision's resnet50, the published total
FP32_BYTES = 4
MODEL_LINK_MBPS = 10_000
BETA = (458, 120)  # scenarios/pattern-resnet50.yaml: beta's period and burst, ms


def promises() -> dict[str, labsheet.Expectation]:
    return {e.key: e for e in labsheet.parse(LAB7).expectations if e.key is not None}


def holds(expectation: labsheet.Expectation, value) -> None:
    text = value if isinstance(value, str) else f"{float(value):.7f}".rstrip("0").rstrip(".")
    problem = expectation.check({expectation.key: text}, "")
    assert problem is None, f"{problem} (derived independently: {value})"


def resnet_arcs() -> list[tuple[int, int]]:
    """ResNet-50's busy arcs ``(start, length)`` ms, from the literal the sheet promises `plan` prints."""
    literals = [e.expected.strip("`") for e in labsheet.parse(LAB7).expectations if e.key is None]
    (line,) = [lit for lit in literals if lit.startswith("resnet arcs")]
    return [(int(a), int(b)) for a, b in re.findall(r"(\d+)\+(\d+)", line.split(":", 1)[1])]


def busy(arcs: list[tuple[int, int]], period_ms: int) -> np.ndarray:
    out = np.zeros(period_ms, dtype=bool)
    for start, length in arcs:
        out[start:start + length] = True
    return out


def collisions_ms(a: np.ndarray, b: np.ndarray) -> list[int]:
    """For each delay ``d`` of b in [0, lcm): the ms of one hyper-period in which both are busy."""
    h = math.lcm(len(a), len(b))
    t = np.arange(h)
    on_a = a[t % len(a)]
    return [int((on_a & b[(t - d) % len(b)]).sum()) for d in range(h)]


def longest_idle_ms(pattern: np.ndarray) -> int:
    idle = np.concatenate([~pattern, ~pattern])  # twice round: a gap across the end is counted whole
    best = run = 0
    for free in idle:
        run = run + 1 if free else 0
        best = max(best, run)
    return min(best, len(pattern))


def test_resnet50s_link_time_is_its_parameters_at_10_gbits():
    ms = RESNET50_PARAMETERS * FP32_BYTES * 8 / (MODEL_LINK_MBPS * 1e6) * 1000
    holds(promises()["pattern.jobs.0.comm_ms"], ms)


def test_the_arcs_the_sheet_shows_are_resnet50s_busy_quanta():
    arcs, p = resnet_arcs(), promises()
    holds(p["pattern.jobs.0.grid_comm_ms"], sum(n for _, n in arcs))
    holds(p["pattern.jobs.0.busy_ms.0.0"], arcs[0][0])
    holds(p["pattern.jobs.0.busy_ms.3.0"], arcs[-1][0])
    holds(p["pattern.jobs.0.busy_ms.3.1"], arcs[-1][1])


def test_no_shift_keeps_the_pattern_apart_though_the_rectangle_rule_says_one_does():
    p = promises()
    period_ms = int(float(p["pattern.pairs.0.gcd_ms"].expected))  # ResNet-50 on the grid: 229 ms, beta twice that
    resnet, beta = busy(resnet_arcs(), period_ms), busy([(0, BETA[1])], BETA[0])
    g = math.gcd(len(resnet), len(beta))
    holds(p["pattern.pairs.0.gcd_ms"], g)
    table = collisions_ms(resnet, beta)
    holds(p["pattern.pairs.0.separable"], "true" if min(table) == 0 else "false")
    holds(p["pattern.overlap_ms"], min(table))
    holds(p["pattern.pairs.0.rectangle_rule_separable"], "true" if resnet.sum() + BETA[1] <= g else "false")
    holds(p["pattern.resnet.longest_gap_ms"], longest_idle_ms(resnet))
    holds(p["pattern.beta.longest_arc_ms"], BETA[1])


def test_the_same_bytes_in_one_burst_separate_at_the_rectangle_rules_shifts():
    p = promises()
    comm_ms = math.ceil(float(p["pattern.jobs.0.comm_ms"].expected))  # one arc of its whole quanta
    rectangle, beta = busy([(0, comm_ms)], 229), busy([(0, BETA[1])], BETA[0])
    g = math.gcd(len(rectangle), len(beta))
    table = collisions_ms(rectangle, beta)
    apart = [d % g for d in range(len(table)) if table[d] == 0]
    holds(p["rectangle.feasible"], "true" if apart else "false")
    holds(p["rectangle.pairs.0.separating_shift_ms.0"], min(apart))
    holds(p["rectangle.pairs.0.separating_shift_ms.1"], max(apart))
    assert (min(apart), max(apart)) == (comm_ms, g - BETA[1])  # lab 3's interval [c1, g - c2]
