"""The map: job-mix sampling, the scheduler's erroneous view, a tiny map end to end, the command line."""

import json
import math

import numpy as np
import pytest

from controller.theory import draws, mapping, sweep
from controller.theory.mapping import MapPoint
from scenarios import cli


@pytest.mark.parametrize("n_jobs", [2, 3, 4])
@pytest.mark.parametrize("share", [0.0, 0.25, 0.5, 1.0])
def test_job_mix_sampler_holds_the_requested_share(n_jobs, share):
    samples = 40
    harmonic = 0
    for k in range(samples):
        raw = mapping.sample_point(3, MapPoint(n_jobs=n_jobs, mix=share), k)
        periods = [p for p, _ in raw]
        assert len(raw) == n_jobs and all(100 <= p <= 1000 and p == int(p) for p in periods)
        harmonic += sum(mapping.harmonic_jobs(periods))
    assert harmonic == math.floor(samples * share * n_jobs)


def test_harmonic_jobs_by_hand():
    assert mapping.harmonic_jobs([300, 600, 700]) == [False, True, False]  # 600 = 2 × 300; 300 is not a multiple
    assert mapping.harmonic_jobs([300, 900, 450]) == [False, True, False]  # 900 = 2 × 450; 450 = 1.5 × 300
    assert mapping.harmonic_jobs([400, 400]) == [True, True]
    assert mapping.harmonic_jobs([400, 1600]) == [False, False]  # ×4 is not a small multiple


def test_mixed_periods_refuse_an_impossible_count():
    with pytest.raises(ValueError, match="harmonic"):
        draws.mixed_periods(np.random.default_rng(0), np.array([3]), 2, 100, 1000)


def test_measurement_error_changes_only_the_schedulers_view():
    raw = [(437.0, 0.2), (611.0, 0.25)]
    normals = [1.0, -2.0]
    view = mapping.scheduler_view(raw, 0.02, normals)
    assert view[0][0] == pytest.approx(437.0 * 1.02) and view[1][0] == pytest.approx(611.0 * 0.96)
    for (p, f), (seen, seen_f) in zip(raw, view, strict=True):  # the burst it sees is the true burst
        assert seen * seen_f == pytest.approx(p * f)
    grid = sweep.on_grid(view, 1.0)
    assert [t.period_ms for t in grid] == [446.0, 587.0]  # the schedule sees the erroneous periods ...
    assert [j.period_ms for j in sweep.true_jobs(raw)] == [437.0, 611.0]  # ... the model runs the true jobs
    assert mapping.scheduler_view(raw, 0.0, normals) == [(437.0, 0.2), (611.0, 0.25)]


def test_measurement_error_moves_the_schedule_policies_not_the_free_running_ones():
    raw = [(400.0, 0.25), (800.0, 0.2)]  # harmonic: a zero-overlap schedule exists for the exact periods
    exact = mapping.evaluate_point(raw, raw, 1.0, ("shift", "gate", "mltcp"))
    wrong = mapping.evaluate_point(raw, mapping.scheduler_view(raw, 0.02, [1.0, -1.0]), 1.0, ("shift", "gate", "mltcp"))
    assert exact["feasible"] and exact["gain"]["gate"] > 0.05
    assert wrong["gain"]["gate"] < exact["gain"]["gate"] - 0.05  # gated on 408/784 ms windows, jobs at 400/800
    assert wrong["throughput_none"] == exact["throughput_none"]
    assert wrong["throughput"]["mltcp"] == exact["throughput"]["mltcp"]


def test_without_error_a_point_is_evaluated_as_the_sweep_does():
    raw = mapping.sample_point(0, mapping.DEFAULT_POINT, 5)
    uniforms = mapping.point_block(0, mapping.DEFAULT_POINT, 5, 6).uniforms(5)
    mine = mapping.evaluate_point(raw, raw, 10.0, ("shift", "gate"), uniforms=uniforms)
    theirs = sweep.evaluate(raw, 10.0, ("shift", "gate"), uniforms=uniforms)
    assert mine["throughput"]["shift"] == theirs["throughput_shift"]
    assert mine["gain"]["gate"] == theirs["per_policy"]["gain_gate"]
    assert mine["sham_gain"] == theirs["sham_gain"]


def test_harmonic_count_spreads_a_fractional_share():
    counts = [int(draws.harmonic_count(3, 0.5, k)) for k in range(10)]
    assert set(counts) == {1, 2} and sum(counts) == 15


@pytest.fixture(scope="module")
def tiny_map():
    settings = mapping.default_settings(samples=3, seed=1)
    settings["panels"] = {**settings["panels"], "n_jobs": (2, 3), "workload": ("uniform",)}  # keep it fast
    return settings, mapping.map_cells(settings, mapping.run_map(settings, workers=1))


def test_a_tiny_map_has_every_panel_and_policy_with_sound_fractions(tiny_map):
    settings, cells = tiny_map
    seen = {(c["factor"], c["value"], c["policy"]) for c in cells}
    expected = {(f, mapping.format_value(f, v), p) for f, vs in settings["panels"].items() for v in vs
                for p in mapping.MAP_POLICIES}
    assert seen == expected and len(cells) == len(expected)
    for c in cells:
        for base in ("vs_none", "vs_random"):
            s = c[base]
            if not s["n"]:  # align may schedule none of a cell's combinations
                continue
            assert s["helps"] + s["neutral"] + s["hurts"] == pytest.approx(1.0)
            for k in ("helps", "neutral", "hurts"):
                lo, hi = s["ci95"][k]
                assert lo - 1e-4 <= s[k] <= hi + 1e-4
            assert s["mean_gain_ci95"][0] <= s["mean_gain"] + 1e-12 <= s["mean_gain_ci95"][1] + 2e-12
    # paired: the quantum panel's 1 ms point is the default point, the same as the other panels' defaults
    shift = {(c["factor"], c["value"]): c["vs_none"]["mean_gain"] for c in cells if c["policy"] == "shift"}
    assert shift[("quantum_ms", "1")] == shift[("mix", "0")] == shift[("error", "0%")]


def test_the_random_policy_against_random_offsets_is_the_noise_floor(tiny_map):
    _, cells = tiny_map
    for c in cells:
        if c["policy"] == "random":
            assert c["vs_random"]["helps"] == c["noise_helps"] and c["vs_random"]["hurts"] == c["noise_hurts"]


def test_nearest_to_published_ranks_shift_cells_by_distance_to_27_percent(tiny_map):
    _, cells = tiny_map
    ranked = mapping.nearest_to_published(cells)
    gaps = [abs(r["helps"] - 0.27) for r in ranked]
    assert gaps == sorted(gaps) and len(ranked) == sum(c["policy"] == "shift" for c in cells)


def test_parse_value_reads_what_format_value_writes():
    for factor, values in mapping.FACTORS.items():
        for v in values:
            assert mapping.parse_value(factor, mapping.format_value(factor, v)) == v
    with pytest.raises(ValueError, match="n_jobs"):
        mapping.parse_value("n_jobs", "1")
    with pytest.raises(ValueError, match="mix"):
        mapping.parse_value("mix", "1.5")


@pytest.mark.parametrize("argv, field", [
    (["--samples", "0"], "--samples"),
    (["--workers", "0"], "--workers"),
    (["--panel", "speed=1,2"], "--panel"),
    (["--panel", "quantum_ms=0"], "quantum_ms"),
    (["--panel", "comm=huge"], "comm"),
    (["--at", "mix"], "--at"),
    (["--at", "n_jobs=two"], "n_jobs"),
    (["--only", "nothing"], "--only"),
    (["--threshold-pct", "-1"], "--threshold-pct"),
])
def test_cli_bad_input_is_one_line_and_exit_2(capsys, argv, field):
    assert cli.main(["map", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and field in err and err.startswith("shiftbed map:")


def test_cli_writes_csv_png_summary_and_one_json_object(tmp_path, capsys):
    out = tmp_path / "map"
    argv = ["map", "--out", str(out), "--samples", "2", "--only", "comm,mix", "--panel", "mix=0,1", "--json"]
    assert cli.main(argv) == 0
    summary = json.loads(capsys.readouterr().out)
    assert {p.name for p in out.iterdir()} == {"map.csv", "map.png", "summary.json"}
    lines = (out / "map.csv").read_text().splitlines()
    assert len(lines) == 1 + (3 + 2) * len(mapping.MAP_POLICIES)
    assert lines[0].startswith("factor,value,policy,n,helps,helps_lo,helps_hi")
    assert summary["combinations"] == 2 * 4  # light, medium (= mix 0), heavy, mix 1
    assert {c["factor"] for c in summary["cells"]} == {"comm", "mix"}
