"""Compile the schedule search's loops (numba) ahead of the first request that needs them.

numba compiles a loop the first time it runs and keeps the machine code on disk
(``cache=True``); until then, the first schedule of three or more jobs takes
about 12 s on a 2-core machine, longer than a client waits for the controller's
answer (5 s). ``make install`` runs this module, and the controller's launcher
(``controller/process.py``) calls :func:`compile_schedule_loops` before it starts
a scheduler, so the compiling is done where nothing waits on it; with the code
on disk it takes a fraction of a second.

    python -m controller.theory.warm
"""

from __future__ import annotations

import time

from controller.theory.schedule import compute_schedule, quantize_job


def compile_schedule_loops() -> float:
    """Run every compiled loop of the schedule search once, on a small instance that no shift
    separates (so the exact search branches); the seconds it took."""
    started_s = time.monotonic()
    jobs = [quantize_job("a", 300, 41, 1.0), quantize_job("b", 337, 42, 1.0), quantize_job("c", 374, 43, 1.0)]
    weights = {frozenset(("a", "b")): 2, frozenset(("a", "c")): 1, frozenset(("b", "c")): 1}
    for method in ("auto", "heuristic"):
        compute_schedule(jobs, 1.0, method=method)
        compute_schedule(jobs, 1.0, method=method, pair_weights=weights)
    return time.monotonic() - started_s


if __name__ == "__main__":
    print(f"schedule search compiled in {compile_schedule_loops():.1f} s")
