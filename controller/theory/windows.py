"""A job's periodic windows: window ``k`` is ``[shift + k·period, shift + k·period + length)``.

The gate fires their edges (``controller/gate.py``), the fluid model holds
bursts to them (``controller/theory/fluid.py``), the job driver waits for their
starts (``apps/dltjob.py``) and the analysis checks captured packets against
them (``scenarios/analysis/gatecheck.py``). All of them compute a window's
start here, as ``shift_ms + k * period_ms`` in ms after the epoch, so the
controller, the drivers and the analysis agree on every edge to the bit.
"""

from __future__ import annotations

import math


def window_start_ms(shift_ms: float, period_ms: float, k: int) -> float:
    """Start of window ``k`` (ms after the epoch)."""
    return shift_ms + k * period_ms


def next_window_index(shift_ms: float, period_ms: float, t_ms: float, slack: float = 0.0) -> int:
    """Index of the first window that starts at or after ``t_ms`` (negative before the shift).

    ``slack`` (a fraction of a period) absorbs rounding: a start that little
    before ``t_ms`` still counts as at it.
    """
    return math.ceil((t_ms - shift_ms) / period_ms - slack)


def last_window_index(shift_ms: float, period_ms: float, t_ms: float, slack: float = 0.0) -> int:
    """Index of the last window that starts at or before ``t_ms`` (``slack`` as in :func:`next_window_index`)."""
    return math.floor((t_ms - shift_ms) / period_ms + slack)


def windows_between(shift_ms: float, period_ms: float, length_ms: float,
                    start_ms: float, end_ms: float) -> list[tuple[float, float]]:
    """``(open_ms, close_ms)`` of every window ``k >= 0`` that opens before ``end_ms`` and closes at or
    after ``start_ms``, in order. Nothing opens before the epoch (``k < 0``)."""
    out = []
    k = max(0, last_window_index(shift_ms, period_ms, start_ms) - 1)  # one early: rounding cannot skip one
    while True:
        open_ms = window_start_ms(shift_ms, period_ms, k)
        if open_ms >= end_ms:
            return out
        close_ms = open_ms + length_ms
        if close_ms >= start_ms:
            out.append((open_ms, close_ms))
        k += 1
