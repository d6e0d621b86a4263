"""`shiftbed plan`: the JSON contract, and exact shifts checked slot by slot."""

import json
import math
import random
import subprocess
from pathlib import Path

from scenarios import spec
from scenarios.commands import plan

REPO = Path(__file__).resolve().parents[2]
SHIFTBED = REPO / ".venv" / "bin" / "shiftbed"


def collisions(periods, comms, shifts_ms, quantum_ms):
    """Busy-slot pairs over the hyper-period, slot by slot: the jobs' periods and bursts as given to
    the planner, the shifts as it chose them."""
    t = [round(p / quantum_ms) for p in periods]
    c = [round(x / quantum_ms) for x in comms]
    s = [round(x / quantum_ms) for x in shifts_ms]
    total = 0
    for slot in range(math.lcm(*t)):
        busy = sum((slot - s[i]) % t[i] < c[i] for i in range(len(t)))
        total += busy * (busy - 1) // 2
    return total


def test_plan_json_contract_on_the_feasible_example():
    done = subprocess.run([str(SHIFTBED), "plan", "scenarios/two-jobs-feasible.yaml", "--json"],
                          capture_output=True, text=True, timeout=60, cwd=REPO)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    # the scenario file: alpha T = 400, c = 150; beta T = 800, c = 200
    periods, comms = {"alpha": 400, "beta": 800}, {"alpha": 150, "beta": 200}
    assert doc["feasible"] is True and isinstance(doc["hyperperiod_ms"], int)
    assert doc["hyperperiod_ms"] == math.lcm(400, 800) == 800
    shifts = [j["shift_ms"] for j in doc["jobs"]]
    assert [j["name"] for j in doc["jobs"]] == ["alpha", "beta"]
    assert collisions(periods.values(), comms.values(), shifts, doc["quantum_ms"]) == 0
    assert set(doc["policies"]) == {"none", "shift", "gate", "random"}
    # kept apart, no burst is ever stretched: each job iterates at its own period
    for policy in ("shift", "gate"):
        assert {j: v["predicted_iteration_ms"] for j, v in doc["policies"][policy].items()} == periods, policy


def test_plan_is_exact_on_random_small_scenarios():
    rng = random.Random(42)
    for _ in range(40):
        n = rng.randint(2, 3)
        q = rng.choice([1, 5])
        periods = [q * rng.randint(2, 9) for _ in range(n)]
        comms = [rng.randint(1, p // q - 1) * q for p in periods]
        jobs = "".join(f"  - {{name: j{i}, period_ms: {p}, comm_ms: {c}}}\n"
                       for i, (p, c) in enumerate(zip(periods, comms, strict=True)))
        scenario = spec.parse(f"name: r\nquantum_ms: {q}\njobs:\n{jobs}", "r.yaml")
        doc = plan.build_plan(scenario, iterations=4)
        t = [p // q for p in periods]
        brute = math.inf  # every relative shift on the grid (job 0 fixed at 0)
        for s2 in range(t[1]):
            for s3 in range(t[2]) if n == 3 else [0]:
                brute = min(brute, collisions(periods, comms, [0, s2 * q, s3 * q][:n], q))
        assert doc["feasible"] == (brute == 0)
        chosen = collisions(periods, comms, [j["shift_ms"] for j in doc["jobs"]], q)
        assert chosen == brute == doc["overlap_ms"] / q


FAT_FABRIC = """\
name: fat
fabric: {spines: 1, leaves: 2, hosts_per_leaf: 2, host_link_mbps: 40, fabric_link_mbps: 80}
jobs:
  - {name: a, period_ms: 300, comm_ms: 100, workers: [h1, h3]}
  - {name: b, period_ms: 450, comm_ms: 150, workers: [h2, h4]}
"""


def test_a_fabric_twice_the_hosts_rate_carries_two_bursts_without_stretching_them():
    """By hand: a burst runs at the 40-Mbit/s host link's rate, and the 80-Mbit/s shared link carries
    two such bursts at full rate (headroom 80 / 40 = 2), so no policy stretches one: each job keeps
    its period. With a 40-Mbit/s shared link (headroom 1), the bursts that meet under `none` share it."""
    fat = plan.build_plan(spec.parse(FAT_FABRIC, "fat.yaml"))
    assert not fat["feasible"]  # the schedule still asks for exclusive use of the link
    assert [j["link_headroom"] for j in fat["jobs"]] == [2.0, 2.0]
    assert {p: {j: v["predicted_iteration_ms"] for j, v in jobs.items()} for p, jobs in fat["policies"].items()} == {
        p: {"a": 300.0, "b": 450.0} for p in fat["policies"]}
    slow = plan.build_plan(spec.parse(FAT_FABRIC.replace("fabric_link_mbps: 80", "fabric_link_mbps: 40"), "s.yaml"))
    assert [j["link_headroom"] for j in slow["jobs"]] == [1.0, 1.0]
    assert slow["policies"]["none"]["a"]["predicted_iteration_ms"] > 310  # they meet and stretch


def test_a_quantum_override_gets_the_schemas_bound_on_the_schedules_size(tmp_path, capsys):
    """A 300-ms period at 1e-6 ms is 3e8 quanta: refused in one line before any array is made."""
    from scenarios.cli import main

    path = tmp_path / "two.yaml"
    path.write_text("name: two\nfabric: {spines: 1, leaves: 2, hosts_per_leaf: 1, host_link_mbps: 50, "
                    "fabric_link_mbps: 50}\njobs:\n  - {name: a, period_ms: 300, comm_ms: 100, workers: [h1, h2]}\n"
                    "  - {name: b, period_ms: 600, comm_ms: 150, workers: [h1, h2]}\n")
    assert main(["plan", str(path), "--quantum-ms", "1e-6"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("shiftbed plan: --quantum-ms:") and "\n" not in err and "quanta" in err
