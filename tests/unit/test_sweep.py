"""The sweep against an independent Monte-Carlo of the same sampling model.

The reference below shares no code with shiftbed: its own random numbers, its
own rounding, feasibility from the gcd criterion (two jobs) or from occupancy
bitmasks (three jobs), and a time-stepped fluid model instead of the
event-driven one. Fractions must agree within sampling error (4 standard errors).
"""

import math
import random

import numpy as np
import pytest

from controller.theory.sweep import run_sweep, summarise

K = 300


def settings(n, period_range, quanta, samples=K, frac=(0.1, 0.5)):
    return {"seed": 7, "jobs": [n], "samples": samples, "period_range": period_range,
            "frac_range": frac, "quanta": quanta, "zoo": False, "zoo_link_mbps": 1e4, "iterations": 30}


def ref_sample(rng, n, lo, hi, q, frac_lo=0.1, frac_hi=0.5, true=False):
    """Each job on the grid (quanta), or with ``true`` also as it is: (t, c, period_ms, comm_ms)."""
    jobs = []
    for _ in range(n):
        period, frac = rng.randint(lo, hi), rng.uniform(frac_lo, frac_hi)
        t = max(1, math.floor(period / q + 0.5))
        c = min(max(1, math.ceil(round(frac * t, 9))), t - 1)
        jobs.append((t, c, period, frac * period) if true else (t, c))
    return jobs


def ref_feasible(jobs):
    if len(jobs) == 2:
        (t1, c1), (t2, c2) = jobs
        return c1 + c2 <= math.gcd(t1, t2)
    h = math.lcm(*(t for t, _ in jobs))

    def mask(t, c, s):
        return sum(1 << ((s + k) % h) for start in range(0, h, t) for k in range(start, start + c))

    (t1, c1), rest = jobs[0], jobs[1:]
    base = mask(t1, c1, 0)
    options = [[mask(t, c, s) for s in range(t)] for t, c in rest]

    def place(used, i):
        return i == len(options) or any(not used & m and place(used | m, i + 1) for m in options[i])

    return place(base, 0)


def ref_shift_helps(pairs, q, steps_per_ms=10, iterations=30):
    """Time-stepped fluid for many two-job combinations at once: none vs the best shift, the shift
    chosen on the grid (quanta), the jobs simulated as they are (true ms)."""
    t = np.array([[p[0][2], p[1][2]] for p in pairs], float)
    c = np.array([[p[0][3], p[1][3]] for p in pairs], float)
    best = []
    for (t1, c1, *_), (t2, c2, *_) in pairs:  # smallest relative shift with the least overlap per LCM
        gg = math.gcd(t1, t2)
        cost = [sum(max(0, min(c1, d + k * gg + c2) - max(0, d + k * gg)) for k in range(-(c2 // gg) - 2, c1 // gg + 2))
                for d in range(gg)]
        best.append(cost.index(min(cost)) * q)
    assert len(best) == len(pairs)

    def throughput(offset2):
        dt = 1 / steps_per_ms
        first = np.stack([np.zeros(len(pairs)), np.array(offset2, float)], 1)
        compute_left = first.copy()  # time until the first burst
        sending = np.zeros_like(t, bool)
        left = np.zeros_like(t)
        ends = np.zeros(t.shape + (iterations + 3,))
        count = np.zeros(t.shape, int)
        now = 0.0
        while count.min() < iterations + 3:
            start = ~sending & (compute_left <= 1e-9)
            sending |= start
            left[start] = c[start]
            share = 1 / np.maximum(1, sending.sum(1, keepdims=True))
            left = np.where(sending, left - dt * share, left)
            compute_left = np.where(sending, compute_left, compute_left - dt)
            now += dt
            done = sending & (left <= 1e-9)
            record = done & (count < iterations + 3)
            ends[record, count[record]] = now
            count += done
            sending &= ~done
            compute_left[done] = (t - c)[done]
        per_job = (ends[:, :, iterations + 2] - ends[:, :, 2]) / iterations
        return (t / per_job).mean(1)

    return throughput(best) / throughput([0] * len(pairs)) - 1 > 0.01


def close(a, b, n):
    p = (a + b) / 2
    return abs(a - b) <= 4 * math.sqrt(max(p * (1 - p), 1 / n) * 2 / n) + 1e-9


def test_two_job_fractions_match_an_independent_monte_carlo():
    rng = random.Random(2024)
    rows = run_sweep(settings(2, (20, 80), [1, 10]))
    by_q = summarise(rows)["by_quantum_ms"]
    for q in (1, 10):
        sample = [ref_sample(rng, 2, 20, 80, q, true=True) for _ in range(K)]
        feasible = sum(ref_feasible([job[:2] for job in jobs]) for jobs in sample) / K
        helps = float(np.mean(ref_shift_helps(sample, q)))
        got = by_q[f"{q:g}"]
        assert close(got["feasible_fraction"], feasible, K), (q, got, feasible)
        assert close(got["shift_helps_fraction"], helps, K), (q, got, helps)


def test_three_job_feasibility_matches_an_independent_monte_carlo():
    rng = random.Random(99)
    rows = run_sweep(settings(3, (6, 16), [1, 2], frac=(0.05, 0.3)))
    by_q = summarise(rows)["by_quantum_ms"]
    for q in (1, 2):
        feasible = sum(ref_feasible(ref_sample(rng, 3, 6, 16, q, 0.05, 0.3)) for _ in range(K)) / K
        assert close(by_q[f"{q:g}"]["feasible_fraction"], feasible, K), (q, by_q, feasible)


def test_sweep_does_not_depend_on_the_number_of_processes():
    s = settings(3, (50, 300), [1, 10], samples=12)
    assert run_sweep(s, workers=1) == run_sweep(s, workers=2)


def test_sweep_cli_writes_rows_only_when_asked_plots_and_one_json_object(tmp_path):
    import json
    import subprocess
    from pathlib import Path

    import pyarrow.parquet as pq

    repo = Path(__file__).resolve().parents[2]
    out = tmp_path / "sweep"
    argv = [str(repo / ".venv/bin/shiftbed"), "sweep", "--jobs", "2,3", "--samples", "4", "--quantum-ms", "1,10"]
    done = subprocess.run([*argv, "--out", str(out), "--rows", "--json"],
                          capture_output=True, text=True, timeout=120, cwd=repo)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["combinations"] == 16 and set(doc["by_jobs"]) == {"2", "3"}
    assert {p.name for p in out.iterdir()} == {"sweep.parquet", "summary.json", "feasible_fraction.png",
                                               "shift_helps_fraction.png"}
    table = pq.read_table(out / "sweep.parquet")
    assert table.num_rows == 16
    assert {"shift_helps", "shift_hurts", "sham_gain", "throughput_sham"} <= set(table.column_names)
    assert sum(table.column("shift_helps").to_pylist()) == round(doc["shift_helps_fraction"] * 16)
    summary_only = subprocess.run([*argv, "--out", str(tmp_path / "plain")], capture_output=True, text=True,
                                  timeout=120, cwd=repo)
    assert summary_only.returncode == 0, summary_only.stderr
    assert not (tmp_path / "plain" / "sweep.parquet").exists() and (tmp_path / "plain" / "summary.json").exists()
    no_folder = subprocess.run([*argv, "--rows"], capture_output=True, text=True, timeout=60, cwd=repo)
    assert no_folder.returncode == 2 and "--rows" in no_folder.stderr
    assert set(doc["policies"]["shift"]) == {"helps_fraction", "neutral_fraction", "hurts_fraction", "ci95"}
    assert doc["noise_floor"]["ci95"]["hurts"][0] <= doc["noise_floor"]["hurts_fraction"]
    bad_threshold = subprocess.run([str(repo / ".venv/bin/shiftbed"), "sweep", "--threshold-pct", "-1"],
                                   capture_output=True, text=True, timeout=60, cwd=repo)
    assert bad_threshold.returncode == 2 and "--threshold-pct" in bad_threshold.stderr
    bad = subprocess.run([str(repo / ".venv/bin/shiftbed"), "sweep", "--period-ms", "10:5"],
                         capture_output=True, text=True, timeout=60, cwd=repo)
    assert bad.returncode == 2 and "--period-ms" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("args, message", [
    (["--mix", "-0.1"], "--mix: a share from 0 to 1"),
    (["--mix", "nan"], "--mix: a share from 0 to 1"),
    (["--mix", "0", "--zoo"], "--mix: applies to uniform periods"),
    (["--mix", "0.5", "--period-ms", "600:1000"], "--mix: --period-ms 600:1000 has no room"),
])
def test_a_mix_the_draws_cannot_make_is_one_line_and_exit_2(args, message):
    import subprocess
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    result = subprocess.run([str(repo / ".venv/bin/shiftbed"), "sweep", *args], capture_output=True, text=True,
                            timeout=60, cwd=repo)
    assert result.returncode == 2 and result.stderr.strip().splitlines() == [result.stderr.strip()], result.stderr
    assert message in result.stderr


# ---------------------------------------------------------------- two-sided fractions and the noise floor


def test_wilson_interval_against_a_hand_computed_value():
    from controller.theory.sweep import wilson_interval

    # 27 of 100, z = 1.96: centre (0.27 + 0.019207) / 1.038415 = 0.278510,
    # half-width 1.96 * sqrt(0.001971 + 0.00009604) / 1.038415 = 0.085815
    lo, hi = wilson_interval(27, 100)
    assert math.isclose(lo, 0.19270, abs_tol=5e-5) and math.isclose(hi, 0.36432, abs_tol=5e-5)
    assert wilson_interval(0, 10)[0] == 0.0 and 0.27 < wilson_interval(0, 10)[1] < 0.28  # never below 0
    assert wilson_interval(10, 10)[1] == pytest.approx(1.0) and math.isnan(wilson_interval(0, 0)[0])


def test_two_sided_fractions_split_by_the_threshold():
    from controller.theory.sweep import two_sided

    got = two_sided([0.05, 0.011, 0.01, 0.0, -0.01, -0.02, -0.5, 0.2], 0.01)
    assert (got["helps_fraction"], got["neutral_fraction"], got["hurts_fraction"]) == (3 / 8, 3 / 8, 2 / 8)
    for k in ("helps", "neutral", "hurts"):
        lo, hi = got["ci95"][k]
        assert lo <= got[f"{k}_fraction"] <= hi
    assert two_sided([0.05, 0.011], 0.02)["helps_fraction"] == 0.5


def test_summary_reports_every_policy_two_sided_and_a_noise_floor():
    s = {**settings(2, (50, 300), [1, 10], samples=10), "policy": "gate", "threshold": 0.01}
    rows = run_sweep(s)
    summary = summarise(rows, 0.01)
    for cell in (summary, summary["by_jobs_and_quantum"][0]):
        assert set(cell["policies"]) == {"shift", "gate"}
        for fractions in (*cell["policies"].values(), cell["noise_floor"]):
            assert math.isclose(fractions["helps_fraction"] + fractions["neutral_fraction"]
                                + fractions["hurts_fraction"], 1.0)
            assert set(fractions["ci95"]) == {"helps", "neutral", "hurts"}
    shift = summary["policies"]["shift"]
    assert shift["helps_fraction"] == summary["shift_helps_fraction"]
    assert shift["hurts_fraction"] == sum(r.shift_gain < -0.01 for r in rows) / len(rows)
    assert summary["policies"]["gate"]["hurts_fraction"] == sum(r.policy_hurts for r in rows) / len(rows)
    # the sham compares two independent draws of random offsets: its gains are not all zero
    assert all(math.isfinite(r.sham_gain) for r in rows) and any(r.sham_gain != 0 for r in rows)
    assert summary["noise_floor"]["hurts_fraction"] == sum(r.sham_gain < -0.01 for r in rows) / len(rows)


def test_threshold_moves_the_classification():
    rows = run_sweep(settings(2, (50, 300), [10], samples=10))
    wide = summarise(rows, 0.5)["policies"]["shift"]
    narrow = summarise(rows, 0.0)["policies"]["shift"]
    assert wide["neutral_fraction"] >= narrow["neutral_fraction"]
    assert narrow["helps_fraction"] == sum(r.shift_gain > 0 for r in rows) / len(rows)


def test_the_sweep_simulates_the_true_jobs_against_the_grid_schedule():
    """The plan's pair (tests/unit/test_plan.py): true 304/597 ms at a 100-ms quantum is separable on
    the grid but drifts, so the shift gains nothing; true 300/600 keeps the hand-derived 1/6."""
    from controller.theory.sweep import evaluate

    drift = evaluate([(304.0, 100 / 304), (597.0, 150 / 597)], 100, ("shift", "gate"))
    assert drift["periods_ms"] == "300;600" and drift["comms_ms"] == "100;200" and drift["feasible"]
    assert abs(drift["shift_gain"]) < 0.01
    assert set(drift["per_policy"]) == {"throughput_shift", "gain_shift", "throughput_gate", "gain_gate"}
    on_grid = evaluate([(300.0, 100 / 300), (600.0, 150 / 600)], 100, ("shift",))
    assert on_grid["shift_gain"] == pytest.approx(1 / 6)


def test_several_policies_each_get_two_sided_fractions_and_csv_columns(tmp_path):
    from scenarios.commands.sweep import write_out

    s = {**settings(2, (50, 300), [10], samples=6), "iterations": None, "horizon_ms": 6000.0,
         "policies": ["shift", "gate", "priority"], "policy": "shift"}
    rows = run_sweep(s)
    summary = summarise(rows)
    assert list(summary["policies"]) == ["shift", "gate", "priority"]
    assert summary["policies"]["priority"]["helps_fraction"] == sum(
        r.per_policy["gain_priority"] > 0.01 for r in rows) / len(rows)
    write_out(str(tmp_path / "out"), rows, summary)
    import pyarrow.parquet as pq

    header = pq.read_schema(tmp_path / "out" / "sweep.parquet").names
    assert {"throughput_gate", "gain_gate", "throughput_priority", "gain_priority", "shift_gain",
            "throughput_policy"} <= set(header) and "per_policy" not in header
