"""`shiftbed plan`: the JSON contract, and exact shifts checked slot by slot."""

import json
import math
import random
import subprocess
from pathlib import Path

import pytest

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


def drift_scenario(period_a, period_b):
    return spec.parse(f"name: drift\nquantum_ms: 100\njobs:\n  - {{name: a, period_ms: {period_a}, comm_ms: 100}}\n"
                      f"  - {{name: b, period_ms: {period_b}, comm_ms: 150}}\n", "drift.yaml")


def test_the_model_runs_the_true_jobs_against_a_schedule_on_the_grid():
    """304/597 ms at a 100-ms quantum: the schedule sees 300/600 (bursts 100/200) and separates them,
    but the true jobs are coprime (gcd(304, 597) = 1): free running, their relative phase walks through
    every value over the lcm (181 488 ms, the horizon), exactly as the unshifted jobs' does, so the
    shift is worth what a start offset is worth in the long run: nothing (measured +0.1 %, +0.1 %)."""
    doc = plan.build_plan(drift_scenario(304, 597), policies=("none", "shift"))
    assert doc["horizon_ms"] == 304 * 597  # coprime: the lcm is the product, 304 periods of b (within 40..400)
    assert [(j["period_ms"], j["comm_ms"], j["grid_period_ms"], j["grid_comm_ms"]) for j in doc["jobs"]] == [
        (304, 100, 300, 100), (597, 150, 600, 200)]
    for job in ("a", "b"):
        assert abs(doc["policies"]["shift"][job]["change_vs_none"]) < 0.01, job


def test_on_the_grid_the_shift_keeps_its_full_gain():
    """300/600, bursts 100/150, by hand. none: both start at 0 and share the link; a's 100 ms take 200,
    b's 150 take 200 + 50 alone (250); a is ready at 400, sends alone to 500, is ready at 700 with b
    (250 + 450): a 700-ms cycle with two iterations of a (350) and one of b (700), both sharing [0, 200):
    overlap share 2/7. shift: b 100 ms after a, never meets a: 300 and 600, so +16.7 % (350/300 - 1 =
    1/6) for both, and no overlap."""
    doc = plan.build_plan(drift_scenario(300, 600), policies=("none", "shift"))
    none, shift = doc["policies"]["none"], doc["policies"]["shift"]
    assert (none["a"]["predicted_iteration_ms"], none["b"]["predicted_iteration_ms"]) == (350, 700)
    assert (shift["a"]["predicted_iteration_ms"], shift["b"]["predicted_iteration_ms"]) == (300, 600)
    assert shift["a"]["change_vs_none"] == shift["b"]["change_vs_none"] == round(1 / 6, 4)
    # the 24-s horizon is 34 cycles and 2/7 of one: the share is 2/7 within 200 ms / 24 s
    assert doc["overlap"]["none"] == pytest.approx(2 / 7, abs=200 / 24_000) and doc["overlap"]["shift"] == 0.0
    assert doc["horizon_ms"] == 40 * 600  # lcm(300, 600) = 600 is below 40 periods of b: 40 of them


def test_with_the_emulated_fabrics_sharing_the_twin_sorts_itself_apart_and_keeps_little_gain():
    """The same 300/600 pair with "leader" sharing (each burst's weight 1 + 0.25 x its share sent, as
    TCP shares the emulated fabric): started together, the burst further along keeps more of the link,
    so the jobs slide apart and `none` runs near its solo periods. The shift's gain falls from 1/6 to a
    few per cent, as on the wire; the schedule-using policies are unchanged (they never meet)."""
    fair = plan.build_plan(drift_scenario(300, 600), policies=("none", "shift"), random_draws=4)
    leader = plan.build_plan(drift_scenario(300, 600), policies=("none", "shift"), random_draws=4, sharing="leader")
    assert fair["tcp_sharing"] == "fair" and leader["tcp_sharing"] == "leader"
    for job, solo in (("a", 300), ("b", 600)):
        none_ms = leader["policies"]["none"][job]["predicted_iteration_ms"]
        assert solo < none_ms < fair["policies"]["none"][job]["predicted_iteration_ms"]
        assert leader["policies"]["shift"][job]["predicted_iteration_ms"] == solo
        assert 0 < leader["policies"]["shift"][job]["change_vs_none"] < 0.05 < 1 / 6
    assert leader["overlap"]["none"] < fair["overlap"]["none"] / 2


def test_both_baselines_are_reported_and_the_random_one_carries_an_interval():
    doc = plan.build_plan(drift_scenario(300, 600), policies=("none", "shift"), random_draws=12)
    assert doc["baselines"]["none"]["jobs"]["a"]["predicted_iteration_ms"] == 350
    rand = doc["baselines"]["random_offsets"]
    assert rand["draws"] == 12
    lo, hi = rand["ci95"]
    assert lo <= rand["normalised_throughput"] <= hi
    # random offsets land between the worst (both at 0: 0.857) and separated (1.0)
    assert 6 / 7 <= lo and hi <= 1.0
    for job, period in (("a", 300), ("b", 600)):
        mean = rand["jobs"][job]["predicted_iteration_ms"]
        assert rand["jobs"][job]["ci95"][0] <= mean <= rand["jobs"][job]["ci95"][1]
        assert doc["policies"]["shift"][job]["change_vs_random_offsets"] == pytest.approx(mean / period - 1, abs=1e-4)


def test_without_random_draws_the_policies_predict_the_same_and_the_random_baseline_is_absent():
    scenario = drift_scenario(300, 600)
    full = plan.build_plan(scenario, policies=("none", "shift", "gate"), sharing="leader")
    lean = plan.build_plan(scenario, policies=("none", "shift", "gate"), sharing="leader", random_draws=0)
    assert lean["baselines"]["random_offsets"] is None and full["baselines"]["random_offsets"]["draws"] == 20
    for policy, jobs in full["policies"].items():
        for job, figures in jobs.items():
            assert lean["policies"][policy][job]["predicted_iteration_ms"] == figures["predicted_iteration_ms"]
            assert lean["policies"][policy][job]["change_vs_random_offsets"] is None


def test_the_horizon_is_capped_at_400_periods_of_the_longest_job_and_iterations_still_work():
    coprime = spec.parse("name: c\njobs:\n  - {name: a, period_ms: 401, comm_ms: 150}\n"
                         "  - {name: b, period_ms: 600, comm_ms: 200}\n", "c.yaml")
    doc = plan.build_plan(coprime, policies=("none",), random_draws=2)
    assert doc["horizon_ms"] == 400 * 600  # lcm 240 600 > 240 000
    fixed = plan.build_plan(coprime, policies=("none",), iterations=40, random_draws=2)
    assert fixed["horizon_ms"] is None and fixed["iterations"] == 40
    shorter = plan.build_plan(coprime, policies=("none",), horizon_ms=30_000, random_draws=2)
    assert shorter["horizon_ms"] == 30_000


def test_plan_cli_horizon_and_iterations_exclude_each_other(tmp_path, capsys):
    from scenarios.cli import main

    path = tmp_path / "d.yaml"
    path.write_text("name: d\njobs:\n  - {name: a, period_ms: 300, comm_ms: 100}\n"
                    "  - {name: b, period_ms: 600, comm_ms: 150}\n")
    assert main(["plan", str(path), "--iterations", "10", "--horizon-s", "5"]) == 2
    assert "--horizon-s" in capsys.readouterr().err
    assert main(["plan", str(path), "--realign-s", "0"]) == 2
    assert main(["plan", str(path), "--sharing", "tcp"]) == 2
    assert "--sharing: must be one of fair, leader" in capsys.readouterr().err
    assert main(["plan", str(path), "--sharing", "leader", "--horizon-s", "6", "--random-draws", "2"]) == 0
    assert "bursts left to TCP share a link as 'leader'" in capsys.readouterr().out
    assert main(["plan", str(path), "--json", "--horizon-s", "6", "--random-draws", "3", "--realign-s", "2"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["horizon_ms"] == 6000 and doc["baselines"]["random_offsets"]["draws"] == 3


def test_align_pads_the_true_period_and_a_policy_that_cannot_schedule_is_reported_not_raised():
    """401/600 (gcd 1) cannot be separated. align's cheapest padding (a TDM frame of F = 401 >=
    150 + 200) rounds beta up to 2 × 401 = 802 and leaves alpha: windows never meet, so alpha
    iterates at 401 and beta at its true 600 plus 202 ms of padding; normalised to the true periods,
    (1 + 600/802) / 2."""
    coprime = spec.parse("name: c\njobs:\n  - {name: alpha, period_ms: 401, comm_ms: 150}\n"
                         "  - {name: beta, period_ms: 600, comm_ms: 200}\n", "c.yaml")
    doc = plan.build_plan(coprime, policies=("none", "align"), random_draws=2)
    align = doc["policies"]["align"]
    assert (align["alpha"]["padding_ms"], align["beta"]["padding_ms"]) == (0, 202)
    assert (align["alpha"]["predicted_iteration_ms"], align["beta"]["predicted_iteration_ms"]) == (401, 802)
    assert doc["normalised_throughput"]["align"] == round((1 + 600 / 802) / 2, 4)
    assert doc["overlap"]["align"] == 0.0 and doc["policies"]["none"]["beta"]["padding_ms"] == 0
    # three bursts of 90 in periods of 100: a frame holding all three (270) more than doubles every period
    crowded = spec.parse("name: x\nquantum_ms: 10\njobs:\n" + "".join(
        f"  - {{name: j{i}, period_ms: 100, comm_ms: 90}}\n" for i in range(3)), "x.yaml")
    doc = plan.build_plan(crowded, policies=("none", "shift", "align"), random_draws=2)
    assert set(doc["policies"]["align"]) == {"error"} and doc["normalised_throughput"]["align"] is None
    assert doc["normalised_throughput"]["shift"] > 0
    assert "align" in plan.render(doc) and "not applicable" in plan.render(doc)
