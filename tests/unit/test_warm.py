"""Every compiled loop of the model is made by the warm-up that ``make install`` runs
(``controller/theory/warm.py``): after it, the commands that use the model (``plan``, ``sweep``,
``map``) and a controller's schedules of three and more jobs compile nothing; each loop comes from
numba's cache on disk."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from controller.theory import warm

SHIFTBED = str(Path(sys.executable).with_name("shiftbed"))
REPO = Path(__file__).resolve().parents[2]
SCHEDULES = """
from controller.theory.schedule import compute_schedule, quantize_job
for n in (3, 4, 6):
    jobs = [quantize_job(f"j{i}", 300 + 37 * i, 40 + i, 1.0) for i in range(n)]
    compute_schedule(jobs, 1.0)
    compute_schedule(jobs, 0.5, pair_weights={frozenset(("j0", "j1")): 3})
    compute_schedule(jobs, 1.0, method="heuristic")
"""
# one worker runs the module, so its warm-up of an empty cache (~40 s of compiling) is paid once (make test)
pytestmark = pytest.mark.xdist_group("warm-up")
SAVED = re.compile(r"^\[cache\] data saved to '.*/([^/]+)\.nbc'$", re.M)  # NUMBA_DEBUG_CACHE's line per compile


@pytest.fixture(scope="module")
def warmed(tmp_path_factory):
    """An empty numba cache, warmed as ``make install`` does: the environment that uses it."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path_factory.mktemp("numba")), "NUMBA_DEBUG_CACHE": "1"}
    done = subprocess.run([sys.executable, "-m", "controller.theory.warm"], env=env, capture_output=True, text=True,
                          timeout=900, cwd=REPO)
    assert done.returncode == 0, done.stderr[-3000:]
    return env, done.stdout


def test_the_warm_up_leaves_no_cached_loop_to_compile(warmed):
    _, out = warmed
    assert "compiled model ready in" in out
    assert "not compiled by the warm-up" not in out, out[-2000:]
    assert len(SAVED.findall(out)) >= 20  # each loop compiled here, once


def test_the_check_sees_a_loop_that_is_not_on_disk(tmp_path):
    check = "from controller.theory import warm; print(len(warm.loops_not_on_disk()))"
    out = subprocess.run([sys.executable, "-c", check], env={**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)},
                         capture_output=True, text=True, check=True, cwd=REPO).stdout
    assert int(out) == len([n for n, loop in warm.cached_loops().items()
                            if loop.targetoptions.get("inline") != "always"]) >= 20


@pytest.mark.parametrize("command", [
    [sys.executable, "-c", SCHEDULES],
    [SHIFTBED, "plan", "scenarios/three-jobs.yaml", "--json"],
    [SHIFTBED, "plan", "scenarios/two-jobs-coprime.yaml", "--json"],
    [SHIFTBED, "sweep", "--samples", "6", "--jobs", "2,3,4", "--workers", "1", "--json"],
    [SHIFTBED, "map", "--samples", "4", "--workers", "1", "--only", "n_jobs", "--json"],
    [SHIFTBED, "sweep", "--profiles", "all", "--samples", "4", "--jobs", "2,3", "--workers", "1", "--json"],
], ids=["schedules", "plan-three-jobs", "plan-coprime", "sweep", "map", "sweep-profiles"])
def test_after_the_warm_up_nothing_compiles(warmed, command, tmp_path):
    env, _ = warmed
    if command[1] in ("sweep", "map"):
        command = [*command, "--out", str(tmp_path / command[1])]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900, cwd=REPO)
    assert done.returncode == 0, done.stderr[-3000:]
    compiled = SAVED.findall(done.stdout + done.stderr)
    assert not compiled, f"compiled anew, not taken from the warmed cache: {compiled}"
