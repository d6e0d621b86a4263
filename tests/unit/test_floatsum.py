"""The fluid model's float totals are added left to right, as the compiled model adds them, on every
Python: ``sum()`` of floats compensates for rounding on Python 3.12 and later, and a total one bit off
becomes another mltcp share."""

import functools
import math
import operator

from controller.theory import policies
from controller.theory.floatsum import left_to_right_sum
from controller.theory.fluid import FluidJob


def in_order(values):
    return functools.reduce(operator.add, values, 0.0)


def test_the_sum_rounds_at_each_step():
    values = [1.0, 1e-16, 1e-16]  # each 1e-16 is lost added to 1.0 alone; together they make the next float
    assert math.fsum(values) == 1.0000000000000002
    assert left_to_right_sum(values) == 1.0
    assert left_to_right_sum(iter(values)) == 1.0
    assert left_to_right_sum([]) == 0.0


def test_mltcp_shares_divide_by_the_total_added_left_to_right():
    """Four bursts of 3 ms, 0.5, 0.5, 1 and 2 ms sent: weights 7/6, 7/6, 4/3 and 5/3, 16/3 in all.
    Added left to right the total is one bit above the nearest float to 16/3, which a compensated sum
    gives; the last burst (the largest weight, the first served, not capped on a link of one burst's
    rate) gets its weight over the left-to-right total: 0.31249999999999994, not 5/16."""
    jobs = [FluidJob(f"j{i}", 300.0, 3.0) for i in range(4)]
    sending, sent = [0, 1, 2, 3], [0.5, 0.5, 1.0, 2.0]
    remaining = [3.0 - s for s in sent]
    weights = list(policies.progress_weights(sending, "mltcp", sent, remaining).values())
    assert in_order(weights) != math.fsum(weights)  # inputs on which the two sums differ
    shares = policies.link_shares(jobs, sending, "mltcp", [0, 1, 2, 3], sent, remaining)
    assert shares[3] == weights[3] / in_order(weights) == 0.31249999999999994
    assert weights[3] / math.fsum(weights) == 0.3125
