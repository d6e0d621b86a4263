"""How much slower the lab VM's guest runs than this host, and the time scale K it needs for that.

The host ran the suite at K = 1 (``make test`` before ``make test-vm``), so its speed carries the
scenarios. A guest ``slowdown`` times slower has, at K = ``slowdown``, the host's own room for its
fixed costs (the agents' Python, an iperf3 start) against every period, which K makes K times
longer; K is the smallest of :data:`TIME_SCALES` at least that. With hardware virtualisation
(libvirt's domain type ``kvm``) the guest runs at the host's speed and K is 1.
"""

from __future__ import annotations

import math
import time

TIME_SCALES = (1, 2, 4, 8)



def probe_s(repeats: int = 5, loops: int = 300_000) -> float:
    """Seconds for a fixed pure-Python loop, the best of ``repeats`` timings: a neighbour's work only
    ever makes a timing longer. Run on the host and in the guest (``python3 tests/guest_speed.py``)."""
    best = math.inf
    for _ in range(repeats):
        started = time.perf_counter()
        total = 0
        for i in range(loops):
            total += i % 7
        best = min(best, time.perf_counter() - started)
    return best


def time_scale_for(slowdown: float) -> int | None:
    """The smallest K in :data:`TIME_SCALES` at least ``slowdown``; None for a guest slower than the largest."""
    if not math.isfinite(slowdown) or slowdown <= 0:
        raise ValueError(f"slowdown must be a positive number, not {slowdown}")
    return next((k for k in TIME_SCALES if k >= slowdown), None)


if __name__ == "__main__":
    print(f"{probe_s():.6f}")
