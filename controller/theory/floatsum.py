"""Float sums added left to right, the way the compiled model (``fastfluid.py``) adds them.

Python 3.12's ``sum()`` of floats compensates for rounding (Neumaier's summation); Python 3.11's, and the
compiled model's loops, add left to right, rounding at each step. The two totals can differ in the last
bit, and the fluid model decides on such totals (mltcp's weighted shares, then whether a burst ends
within a step), so a last bit can become a different prediction. The model adds its floats here: its
numbers do not depend on the Python version, and stay the compiled model's.
"""

from __future__ import annotations

from collections.abc import Iterable


def left_to_right_sum(values: Iterable[float]) -> float:
    """``values`` added in order, rounded at each step (``sum()`` compensates on Python 3.12 and later)."""
    total = 0.0
    for x in values:
        total += x
    return total
