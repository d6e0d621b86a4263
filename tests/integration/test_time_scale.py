"""A scenario run K = 4 times slower on the wire gives the iteration times it gives at K = 1, in its own units.

Real Mininet + Open vSwitch + Ryu + iperf3 + tcpdump: ``shiftbed run`` of the
coprime pair (periods 401 and 600 ms, no static shift separates them) under
``none``, ``shift`` and ``gate``, once as written and once with
``--time-scale 4`` (every time four times longer, every link four times
slower, the same bytes per burst; ``scenarios/timescale.py``). Both runs cover
the same number of iterations (15 scenario seconds a policy: at least 10 of
gated beta's ~1 150-ms iterations, enough for a standard error; the K = 4 run
takes 60 s of wire a policy). Every job's mean iteration time under every
policy, in the scenario's units, must agree between the two within their
combined 95 % interval, from each run's own standard errors (batch means,
``analysis.job_means``).

Why the coprime pair and not the classroom one: there the jobs' bursts never
need to meet, and what differs between two runs is decided once per run, which
no interval within a run can see: under ``none`` the jobs part at a random
moment (docs/accuracy.md, "Together or apart"), and under ``shift`` each job
runs at the period its own calibration set, within a millisecond of the
target. Both show as well between two runs at K = 1 (docs/platform.md, "A
slower machine: the time scale"). The coprime pair's bursts keep meeting, so
each run's mean is over many meetings; even so two of its runs at K = 1
differed by a little more than their interval (docs/platform.md), and its
`gate` at K = 4 loses bursts to the closed windows' floor, whose police burst
is a quarter of a second at the floor's rate, less than one jumbo segment at
K = 4's rates: this test fails until that burst scales with K.
"""

import json
import math
import pathlib
import subprocess
import sys

import pytest

from scenarios import spec

pytestmark = pytest.mark.root

REPO = pathlib.Path(__file__).resolve().parents[2]
SHIFTBED = str(pathlib.Path(sys.executable).with_name("shiftbed"))
SCENARIO = REPO / "scenarios" / "two-jobs-coprime.yaml"
POLICIES = "none,shift,gate"
DURATION_S = 15  # per policy, scenario seconds: 10 or more of every job's iterations, gated beta's too
SCALES = (1, 4)
Z_95 = 1.96


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """``shiftbed run --json`` of the coprime pair at each K: K -> its ``--json`` object."""
    out = {}
    for k in SCALES:
        root = tmp_path_factory.mktemp(f"k{k}")
        result = subprocess.run([SHIFTBED, "run", str(SCENARIO), "--policy", POLICIES, "--duration", str(DURATION_S),
                                 "--time-scale", str(k), "--out", str(root), "--json"],
                                capture_output=True, text=True, timeout=1200, cwd=REPO)
        assert result.returncode in (0, 3, 4), result.stderr[-3000:]
        doc = json.loads(result.stdout)
        assert doc["fidelity_ok"], f"K = {k}: fidelity lost: {result.stderr[-2000:]}"
        out[k] = doc
    return out


def test_each_run_states_its_time_scale_and_keeps_the_scenarios_units(runs):
    periods = {job.name: job.period_ms for job in spec.load(SCENARIO).jobs}
    for k, doc in runs.items():
        assert doc["time_scale"] == k
        folder = pathlib.Path(doc["results_dir"])
        schedule = json.loads((folder / "schedule.json").read_text())
        assert {j["name"]: j["period_ms"] for j in schedule["jobs"]} == pytest.approx(periods)
        assert json.loads((folder / "environment.json").read_text())["time_scale"] == k
        assert f"K = {k:g}" in (folder / "report.md").read_text() or k == 1


def test_iteration_times_agree_at_k1_and_k4_within_their_intervals(runs):
    slow, fast = runs[4], runs[1]
    compared = 0
    for policy in POLICIES.split(","):
        for job, one in fast["policies"][policy]["jobs"].items():
            four = slow["policies"][policy]["jobs"][job]
            assert one["iteration_se_ms"] is not None and four["iteration_se_ms"] is not None, (policy, job)
            bound = Z_95 * math.hypot(one["iteration_se_ms"], four["iteration_se_ms"])
            gap = four["mean_iteration_ms"] - one["mean_iteration_ms"]
            print(f"{policy:<6} {job:<6} K=1 {one['mean_iteration_ms']:7.1f} ± {one['iteration_se_ms']:4.1f}  "
                  f"K=4 {four['mean_iteration_ms']:7.1f} ± {four['iteration_se_ms']:4.1f}  "
                  f"difference {gap:+6.1f} (95 % bound {bound:.1f}) ms")
            assert abs(gap) <= bound, (policy, job, one, four)
            compared += 1
    assert compared == 2 * len(POLICIES.split(","))
