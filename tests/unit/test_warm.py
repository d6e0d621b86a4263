"""The schedule search's compiled loops are made ahead of a controller's first request
(``controller/theory/warm.py``): after the warm-up, a fresh process's schedules of three and
more jobs, weighted or not, compile nothing (each loop comes from numba's cache on disk)."""

import os
import subprocess
import sys

CHECK = """
import numba
from controller.theory import fastschedule
from controller.theory.schedule import compute_schedule, quantize_job
for n in (3, 4, 6):
    jobs = [quantize_job(f"j{i}", 300 + 37 * i, 40 + i, 1.0) for i in range(n)]
    compute_schedule(jobs, 1.0)
    compute_schedule(jobs, 0.5, pair_weights={frozenset(("j0", "j1")): 3})
    compute_schedule(jobs, 1.0, method="heuristic")
loops = [f for f in vars(fastschedule).values() if isinstance(f, numba.core.registry.CPUDispatcher)]
print(len(loops), sum(sum(f.stats.cache_misses.values()) for f in loops),
      sum(sum(f.stats.cache_hits.values()) for f in loops))
"""


def test_after_the_warm_up_a_controllers_schedules_compile_nothing(tmp_path):
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}
    warm = subprocess.run([sys.executable, "-m", "controller.theory.warm"], env=env, capture_output=True, text=True,
                          timeout=600)
    assert warm.returncode == 0 and warm.stdout.startswith("schedule search compiled in"), warm.stderr
    check = subprocess.run([sys.executable, "-c", CHECK], env=env, capture_output=True, text=True, timeout=600)
    assert check.returncode == 0, check.stderr
    loops, misses, hits = map(int, check.stdout.split())
    assert loops >= 5 and hits >= 1
    assert misses == 0, f"{misses} of the search's compiled loops were compiled again, not taken from the cache"
