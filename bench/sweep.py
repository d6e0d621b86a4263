"""Benchmark: how many combinations a minute the sweep evaluates, against the pure-Python reference.

The default sweep's model (periods uniform over 100..1000 ms, bursts 10-50 % of the period, quanta 1, 10
and 50 ms, the steady-state horizon, ``none``, ``shift`` and the two-arm noise floor of ``random``
offsets), counted into per-cell tallies (``controller/theory/sweepstream.py``) on ``--workers``
processes. Each figure is combinations per minute of wall-clock time, all ``--workers`` processes counted
together (the default 2: both cores of a 2-core machine), in one timed run after a warm-up that loads the
compiled model in this process, whose forked workers start with it loaded. The compiling is not in the
figures; it is timed apart, in a fresh process that imports the model and runs one simulation and one map
chunk of every map policy: ``compile_cold_s`` with an empty numba cache, ``compile_warm_s`` from the cache. The reference is ``controller.theory.sweep.run_sweep`` (the pure-Python fluid model) on
a smaller sample of the same 2-job combinations with as many workers, timed in the same run.
``peak_rss_mb``: the largest resident memory of this process and of its workers.

The map (``controller/theory/mapstream.py``) by policy and number of jobs: one point of ``shiftbed map``
(its default point, quantum 1 ms, exact periods, medium comm share, uniform periods) with one policy,
``--map-samples`` combinations, each of them ``none``, random offsets, the policy and the noise floor's
second arm, as ``make map`` runs them; every map policy at 2 jobs, ``shift`` at 3 and 4.

    .venv/bin/python bench/sweep.py [--json] [--workers 2] [--samples-2 20000] [--map-samples 12000]

With ``--json`` the last line is one JSON object: ``combos_per_min`` (2 jobs), ``by_jobs`` (combinations
a minute for 3, 4 and 8 jobs), ``map_by_jobs_and_policy`` (the map's combinations a minute, by number of
jobs, then policy), ``speedup_vs_reference``, the compile times and the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from controller.theory.mapping import MAP_POLICIES, default_settings  # noqa: E402
from controller.theory.mapstream import run_map_cells  # noqa: E402
from controller.theory.sweep import run_sweep  # noqa: E402
from controller.theory.sweepstream import run_sweep_cells  # noqa: E402

QUANTA = [1.0, 10.0, 50.0]
COMPILE_PROBE = ("import time; t = time.perf_counter(); from controller.theory import fastfluid, fluid, mapping, "
                 "mapstream, sweep; raw = sweep.sample_raw(0, 2, 0, (100, 1000), (0.1, 0.5), False, 1e4); "
                 "fastfluid.predict_throughput('gate', sweep.on_grid(raw, 1.0), sweep.true_jobs(raw), 1.0, "
                 "horizon_ms=2000.0); mapstream.map_chunk((mapping.default_settings(2), (mapping.DEFAULT_POINT,), 0, 2)); "
                 "print(time.perf_counter() - t)")


def settings(n_jobs: int, samples: int) -> dict:
    return {"seed": 0, "jobs": [n_jobs], "samples": samples, "period_range": (100, 1000),
            "frac_range": (0.1, 0.5), "quanta": QUANTA, "zoo": False, "zoo_link_mbps": 10_000.0,
            "iterations": None, "horizon_ms": None, "realign_s": None, "threshold": 0.01,
            "policies": ["shift"], "policy": "shift"}


def map_settings(n_jobs: int, policy: str, samples: int) -> dict:
    """One point of the map (its default, at ``n_jobs``) with one policy."""
    return {**default_settings(samples), "panels": {"n_jobs": (n_jobs,)}, "policies": (policy,)}


MAP_CASES = [(2, p) for p in MAP_POLICIES] + [(3, "shift"), (4, "shift")]


def per_minute(run, combinations: int) -> float:
    started = time.perf_counter()
    run()
    return 60.0 * combinations / (time.perf_counter() - started)


def compile_seconds(cold: bool) -> float:
    """Import and first compiled simulation in a fresh process (``cold``: with an empty numba cache)."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    with tempfile.TemporaryDirectory() as cache:
        if cold:
            env["NUMBA_CACHE_DIR"] = cache
        out = subprocess.run([sys.executable, "-c", COMPILE_PROBE], env=env, capture_output=True, text=True,
                             check=True, cwd=REPO)
    return float(out.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="last line: one JSON object")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--samples-2", type=int, default=20_000, help="2-job samples (× 3 quanta)")
    parser.add_argument("--reference-samples", type=int, default=100, help="2-job samples for the reference")
    parser.add_argument("--map-samples", type=int, default=12_000, help="map combinations per policy and N")
    args = parser.parse_args()
    if min(args.workers, args.samples_2, args.reference_samples, args.map_samples) < 1:
        print("bench/sweep.py: --workers, --samples-2, --reference-samples and --map-samples must be at least 1",
              file=sys.stderr)
        return 2

    cold = compile_seconds(cold=True)
    compile_seconds(cold=False)  # fills the cache where it is empty (a fresh clone)
    warm = compile_seconds(cold=False)
    print(f"compile: cold {cold:.1f} s, warm (cached) {warm:.2f} s", file=sys.stderr)
    run_sweep_cells(settings(2, 4 * args.workers), args.workers, chunk_samples=4)  # warm the cache
    # and this process, whose forked workers then start with the compiled model loaded (each run forks anew)
    run_sweep_cells(settings(2, 4), 1)
    for n, policy in MAP_CASES:
        run_map_cells(map_settings(n, policy, 2), 1)
    samples = {2: args.samples_2, 3: max(1, args.samples_2 // 10), 4: max(1, args.samples_2 // 20),
               8: max(1, args.samples_2 // 100)}
    rates = {}
    for n, k in samples.items():
        rates[n] = per_minute(lambda n=n, k=k: run_sweep_cells(settings(n, k), args.workers), k * len(QUANTA))
        print(f"{n} jobs: {k * len(QUANTA)} combinations, {rates[n]:,.0f} a minute", file=sys.stderr)
    map_rates: dict[str, dict[str, int]] = {}
    for n, policy in MAP_CASES:
        run_map_cells(map_settings(n, policy, 2 * args.workers), args.workers, chunk_samples=2)  # warm
        rate = per_minute(lambda n=n, p=policy: run_map_cells(map_settings(n, p, args.map_samples), args.workers),
                          args.map_samples)
        map_rates.setdefault(str(n), {})[policy] = round(rate)
        print(f"map, {n} jobs, {policy}: {args.map_samples} combinations, {rate:,.0f} a minute", file=sys.stderr)
    reference = per_minute(lambda: run_sweep(settings(2, args.reference_samples), args.workers),
                           args.reference_samples * len(QUANTA))
    print(f"reference (pure Python), 2 jobs: {reference:,.0f} a minute", file=sys.stderr)
    rss_mb = max(resource.getrusage(who).ru_maxrss for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)) / 1024
    result = {
        "combos_per_min": round(rates[2]),
        "by_jobs": {str(n): round(r) for n, r in rates.items() if n != 2},
        "map_by_jobs_and_policy": map_rates,
        "map_samples": args.map_samples,
        "speedup_vs_reference": round(rates[2] / reference, 1),
        "reference_combos_per_min": round(reference),
        "samples": {str(n): k * len(QUANTA) for n, k in samples.items()},
        "reference_samples": args.reference_samples * len(QUANTA),
        "workers": args.workers,
        "counting": f"combinations per wall-clock minute, {args.workers} worker processes together, compiling "
                    "excluded (compile_cold_s, compile_warm_s)",
        "compile_cold_s": round(cold, 2),
        "compile_warm_s": round(warm, 2),
        "peak_rss_mb": round(rss_mb),
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "machine": f"{platform.system()} {platform.release()}, Python {platform.python_version()}, "
                   f"{os.cpu_count()} CPUs",
    }
    if args.json:
        print(json.dumps(result))
    else:
        for k, v in result.items():
            print(f"{k}: {v}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
