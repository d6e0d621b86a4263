"""Compile every cached loop of the model (numba) ahead of the first process that needs it.

numba compiles a loop the first time it runs and keeps the machine code on disk
(``cache=True``); until then, each loop costs 2-37 s in the first process that
calls it: the first schedule of three or more jobs takes about 12 s on a 2-core
machine, longer than a client waits for the controller's answer (5 s), and every
test process, sweep, map and benchmark would pay the rest. ``make install`` runs
this module, so each loop is compiled once, where nothing waits on it; with the
code on disk it takes a few seconds. The controller's launcher
(``controller/process.py``) calls :func:`compile_schedule_loops` before it starts
a scheduler, in case the sources changed since (``numbacache.py`` then drops the
cache).

    python -m controller.theory.warm
"""

from __future__ import annotations

import importlib
import pkgutil
import time
from pathlib import Path

import controller.theory
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


def _sweep_settings(n_jobs: int) -> dict:
    """A few combinations of the default sweep (``shiftbed sweep``'s model, ``shift`` and ``random``)."""
    return {"seed": 0, "jobs": [n_jobs], "samples": 4, "period_range": (100, 1000), "frac_range": (0.1, 0.5),
            "quanta": [1.0, 10.0], "zoo": False, "zoo_link_mbps": 10_000.0, "iterations": None,
            "horizon_ms": None, "realign_s": None, "threshold": 0.01, "policies": ["shift"], "policy": "shift"}


def compile_model_loops() -> float:
    """Run the compiled fluid model as ``sweep``, ``map``, ``plan`` and ``explore`` do: a few combinations
    of the sweep at 2, 3 and 4 jobs and of the map's default point with every map policy at 2 jobs and
    with ``shift`` at 3 and 4 (the map's own cases); the seconds it took."""
    from controller.theory.mapping import MAP_POLICIES, default_settings
    from controller.theory.mapstream import run_map_cells
    from controller.theory.sweepstream import run_sweep_cells

    started_s = time.monotonic()
    for n_jobs in (2, 3, 4):
        run_sweep_cells(_sweep_settings(n_jobs), 1)
    cases = [(2, p) for p in MAP_POLICIES] + [(n, p) for n in (3, 4) for p in MAP_POLICIES]
    for n_jobs, policy in cases:
        settings = {**default_settings(4), "panels": {"n_jobs": (n_jobs,)}, "policies": (policy,)}
        run_map_cells(settings, 1, chunk_samples=2)
    return time.monotonic() - started_s


def compile_pattern_loops() -> float:
    """Run the loops of the two-job pattern theory (``arcs.py``) and of the pattern fluid model
    (``fastpatterns.py``) once; the seconds it took."""
    from controller.theory.arcs import (
        Pattern,
        overlap_table,
        projected_counts,
        separable,
        separating_arcs,
    )

    started_s = time.monotonic()
    first, second = Pattern(12, ((0, 2), (6, 2))), Pattern(18, ((2, 2), (8, 2), (14, 2)))
    separable(first, second)
    separating_arcs(first, second)
    overlap_table(first, second)
    projected_counts(first, 6)
    # the compiled fluid model of pattern jobs (fastpatterns), free, gated and by priority, as sweep --profiles runs it
    from controller.theory import profilesweep

    profilesweep.evaluate(profilesweep.ProfileSweep(models=("resnet50", "bert-base"), horizon_periods=4), 2, 0)
    return time.monotonic() - started_s


def cached_loops() -> dict[str, object]:
    """Every numba loop of ``controller.theory`` that keeps its code on disk, by ``module.name``."""
    from numba.core.caching import FunctionCache
    from numba.core.registry import CPUDispatcher

    loops = {}
    for info in pkgutil.iter_modules(controller.theory.__path__):
        module = importlib.import_module(f"controller.theory.{info.name}")
        for name, value in vars(module).items():
            if isinstance(value, CPUDispatcher) and value.py_func.__module__ == module.__name__ \
                    and isinstance(value._cache, FunctionCache):
                loops[f"{module.__name__}.{name}"] = value
    return loops


def loops_not_on_disk() -> list[str]:
    """The cached loops whose machine code is not on disk: each would be compiled in the first process
    that runs it. A loop inlined into its callers (``inline="always"``) is compiled with them, never alone."""
    return sorted(name for name, loop in cached_loops().items() if loop.targetoptions.get("inline") != "always"
                  and not Path(loop._cache._cache_file._index_path).exists())


if __name__ == "__main__":
    schedule_s = compile_schedule_loops() + compile_pattern_loops()
    model_s = compile_model_loops()
    left = loops_not_on_disk()
    print(f"compiled model ready in {schedule_s + model_s:.1f} s (schedule search and patterns {schedule_s:.1f} s, fluid "
          f"model {model_s:.1f} s)")
    if left:
        print("not compiled by the warm-up (each compiles where first used): " + ", ".join(left))
