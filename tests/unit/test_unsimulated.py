"""A combination the fluid model cannot simulate is counted and said, never a crash or a silent drop:
``plan``, ``sweep`` and ``map`` with ``unmodelled`` (tests/policies/unmodelled.py), a policy whose
bursts share a link by a rule the model has not got."""

import math
from pathlib import Path

import pytest

from controller.theory import fluid, mapping, mapstream, sweep, sweepstream
from scenarios import spec
from scenarios.commands import plan

REPO = Path(__file__).resolve().parents[2]
UNMODELLED = REPO / "tests" / "policies" / "unmodelled.py"


@pytest.fixture
def unmodelled(policy_registry):
    """The policy the model cannot simulate (tests/policies/unmodelled.py), registered for one test."""
    from controller.theory.policies import load_policy_file

    return load_policy_file(UNMODELLED)[0]


def test_the_model_says_in_one_line_what_it_could_not_simulate(unmodelled):
    grid, jobs = sweep.on_grid([(400.0, 0.2), (601.0, 0.3)], 10.0), sweep.true_jobs([(400.0, 0.2), (601.0, 0.3)])
    with pytest.raises(fluid.Unsimulated) as info:
        fluid.predict_policy(unmodelled, grid, jobs, 10.0, iterations=5)
    assert str(info.value).startswith("unmodelled: the fluid model could not simulate it (ValueError: sharing must")
    assert info.value.why.startswith("ValueError: sharing must be one of") and "\n" not in str(info.value)
    # a policy that cannot schedule the jobs is still a ValueError (not applicable), not unsimulated
    with pytest.raises(ValueError):
        fluid.predict_policy("guard", sweep.on_grid([(400.0, 0.98), (600.0, 0.3)], 10.0),
                             sweep.true_jobs([(400.0, 0.98), (600.0, 0.3)]), 10.0, iterations=5)


def test_arm_throughputs_name_the_unsimulated_arms_and_leave_the_not_applicable_ones_nan():
    def throughput(policy):
        if policy == "broken":
            raise fluid.Unsimulated(policy, "no progress")
        if policy == "unfit":
            raise ValueError("cannot schedule")
        return 0.9

    thr, unsimulated = sweep.arm_throughputs([("a", "fine"), ("b", "broken"), ("c", "unfit")], throughput)
    assert thr["a"] == 0.9 and math.isnan(thr["b"]) and math.isnan(thr["c"])
    assert unsimulated == ["b"]


def test_plan_predicts_the_others_and_counts_the_unsimulated_policy(unmodelled):
    scenario = spec.load(REPO / "scenarios" / "classroom.yaml")
    out = plan.build_plan(scenario, policies=(unmodelled, "gate"), iterations=12, random_draws=2)
    assert out["policies"][unmodelled]["unsimulated"].startswith("ValueError: sharing must be one of")
    assert out["unsimulated"] == {unmodelled: out["policies"][unmodelled]["unsimulated"]}
    assert out["normalised_throughput"][unmodelled] is None
    assert out["normalised_throughput"]["gate"] == pytest.approx(1.0)  # feasible: every window made
    text = plan.render(out)
    assert f"{unmodelled:<9} unsimulated: the fluid model could not simulate it (ValueError" in text
    assert "unsimulated: 1 of 3 policies (unmodelled)" in text


def test_sweep_counts_the_unsimulated_combinations_and_tallies_the_rest(unmodelled):
    settings = {"seed": 3, "jobs": [2], "samples": 4, "period_range": (100, 1000), "frac_range": (0.1, 0.5),
                "quanta": [10.0], "zoo": False, "zoo_link_mbps": 1e4, "iterations": 8, "horizon_ms": None,
                "realign_s": None, "threshold": 0.01, "policies": ["gate", unmodelled], "policy": "gate"}
    summary = sweepstream.summarise_cells(sweepstream.run_sweep_cells(settings))
    assert summary["combinations"] == 4 and summary["unsimulated"] == {unmodelled: 4}
    gate = summary["policies"]["gate"]
    assert gate["helps_fraction"] + gate["neutral_fraction"] + gate["hurts_fraction"] == pytest.approx(1.0)
    assert math.isnan(summary["policies"][unmodelled]["helps_fraction"])  # nothing counted for it
    rows = sweep.run_sweep(settings)
    assert [r.unsimulated for r in rows] == [unmodelled] * 4
    assert sweep.summarise(rows)["unsimulated"] == {unmodelled: 4}
    assert sweep.unsimulated_line(summary["unsimulated"], 4).endswith("unmodelled in 4 of 4 combinations")


def test_map_counts_the_unsimulated_combinations_per_cell(unmodelled):
    settings = mapping.default_settings(samples=3, seed=1)
    settings["policies"] = ("shift", unmodelled)
    settings["panels"] = {"n_jobs": (2,)}
    cells = mapstream.map_cells(settings, mapstream.run_map_cells(settings))
    mine = [c for c in cells if c["policy"] == unmodelled]
    assert [c["unsimulated"] for c in mine] == [3] and mine[0]["vs_none"]["n"] == 0
    assert [c["unsimulated"] for c in cells if c["policy"] == "shift"] == [0]
    reference = mapping.map_cells(settings, mapping.run_map(settings, workers=1))
    assert [c["unsimulated"] for c in reference] == [c["unsimulated"] for c in cells]
