"""Work cut into deterministic chunks, and the one place that sends them to processes.

A chunk is a task whose result depends only on its own arguments (a seed, a cell, a range of sample
indices), never on which worker runs it or when, and whose result is small (counters that merge). So the
sweep and the map give the same answer on one process, on many, or on another machine's, and
:func:`run_chunks` is the only function that needs to know where the work runs.
"""

from __future__ import annotations

import gc
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

from controller.theory import parallel

# samples per chunk: large enough that a chunk's compiled batch dwarfs its dispatch (~0.1 s of work), small
# enough that two workers stay busy to the end of a default sweep
CHUNK_SAMPLES = 250
# where stderr is a log, not a terminal: one progress line at most this often (not a bar redrawn with \r)
LOG_LINE_EVERY_S = 5.0


def sample_ranges(samples: int, size: int = CHUNK_SAMPLES) -> list[tuple[int, int]]:
    """``[start, stop)`` ranges covering ``0..samples``, ``size`` each (the last may be shorter)."""
    return [(a, min(a + size, samples)) for a in range(0, samples, size)]


@contextmanager
def without_cycle_collector():
    """A chunk's evaluation without Python's cyclic garbage collector: it allocates some hundred thousand
    small objects (jobs, grids, schedules, tuples), none of them in a cycle that outlives the chunk, and the
    collections they trigger took a quarter of a map chunk's time. Reference counting still frees them;
    the collector runs again after (if it was on)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def run_chunks(fn: Callable, tasks: Sequence, workers: int, label: str = "", progress: bool = False,
               sizes: Sequence[int] | None = None, scheduler_address: str | None = None) -> Iterator:
    """``fn(task)`` of every task, in task order, through :func:`parallel.run_tasks` (``workers``
    local processes, 1: here; or the dask cluster at ``scheduler_address``), with a progress bar on
    stderr (``label [###   ] done/total combinations``, ``sizes[k]`` combinations per task) when
    ``progress`` (in a log: a plain line every few seconds)."""
    sizes = list(sizes) if sizes is not None else [1] * len(tasks)
    total, done = sum(sizes), 0
    step = max(1, total // 100)
    terminal = sys.stderr.isatty()
    last_line_s = -LOG_LINE_EVERY_S
    for k, result in enumerate(parallel.run_tasks(fn, tasks, workers, scheduler_address)):
        yield result
        before, done = done, done + sizes[k]
        if not progress:
            continue
        if terminal and (done // step != before // step or done == total):
            bar = "#" * (30 * done // max(1, total))
            print(f"\r{label} [{bar:<30}] {done}/{total} combinations", end="", file=sys.stderr, flush=True)
        elif not terminal and (time.monotonic() - last_line_s >= LOG_LINE_EVERY_S or done == total):
            last_line_s = time.monotonic()
            print(f"{label}: {done}/{total} combinations", file=sys.stderr, flush=True)
    if progress and terminal:
        print(file=sys.stderr)
