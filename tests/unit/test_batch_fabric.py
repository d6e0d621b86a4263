"""The batch's prediction before the run from the fabric (``scenarios/batch/fabricfit.py``,
``predict.from_the_fabric``): the fabric's figures from earlier scenarios' solo runs only, and the jobs
as that fabric runs them."""

import json
import statistics

import pytest

from scenarios import spec
from scenarios.batch import draw as drawing
from scenarios.batch import fabricfit
from scenarios.batch.folder import BatchFolder
from scenarios.batch.predict import FABRIC, before_the_run, fabric_prediction, from_the_fabric
from scenarios.planning import planned_jobs

FABRIC_SPEC = spec.FabricSpec(spines=1, leaves=2, hosts_per_leaf=2, host_link_mbps=50.0, fabric_link_mbps=50.0)
SAMPLING = drawing.Sampling(seed=0, jobs=(2,), period_range_ms=(100, 1000), frac_range=(0.15, 0.3), quantum_ms=1.0)
POLICIES = ("none", "shift", "gate", "priority")


def solo(job, period_share=0.96, burst_share=0.7, startup_ms=10.0, mbps=47.5, **extra) -> dict:
    burst_ms = burst_share * job.comm_ms
    return {"iteration_ms": period_share * job.period_ms, "comm_ms": burst_ms, "data_ms": burst_ms - startup_ms,
            "burst_mbps": mbps, **extra}


def batch(tmp_path, count=4) -> BatchFolder:
    texts = {}
    for d in drawing.draw(SAMPLING, count):
        texts[d.name], _ = drawing.render(d, SAMPLING, FABRIC_SPEC, POLICIES, 12.0, None, f"{d.name}.yaml")
    return BatchFolder.create(tmp_path / "b", {"settings": {"policies": list(POLICIES)}}, texts)


def finish(folder: BatchFolder, name: str, fidelity_ok=True, **figures) -> None:
    """``name`` done, its kept run holding only what the fabric's figures are read from."""
    scenario = spec.load(folder.scenario_file(name))
    run = folder.begin(name) / "run"
    run.mkdir()
    solos = {j.name: solo(j, **figures) for j in scenario.jobs}
    (run / "summary.json").write_text(json.dumps({"fidelity_ok": fidelity_ok, "fidelity": {"solo": solos}}))
    folder.finish(name, {"scenario": name, "attempts": [], "kept": "run", "exit_code": 0})


def test_the_first_scenario_has_no_fabric_to_go_by(tmp_path):
    folder = batch(tmp_path)
    scenario = spec.load(folder.scenario_file("s000"))
    found = from_the_fabric(folder, "s000", scenario, POLICIES)
    assert found["kind"] == FABRIC and "fewer than 2 jobs" in found["unavailable"]


def test_the_fabrics_figures_are_the_medians_of_earlier_scenarios_only(tmp_path):
    folder = batch(tmp_path)
    finish(folder, "s000", startup_ms=8.0, mbps=45.0)
    finish(folder, "s001", startup_ms=12.0, mbps=48.0, period_share=0.95)
    scenario = spec.load(folder.scenario_file("s002"))
    found = from_the_fabric(folder, "s002", scenario, POLICIES)
    fabric = found["fabric"]
    assert fabric["scenarios"] == ["s000", "s001"] and fabric["jobs"] == 4
    assert fabric["startup_ms"] == pytest.approx(10.0) and fabric["burst_share"] == pytest.approx(0.7)
    assert fabric["period_share"] == pytest.approx(statistics.median([0.96, 0.96, 0.95, 0.95]))
    assert fabric["rate_share"] == pytest.approx((45.0 + 48.0) / 2 / 50.0)
    finish(folder, "s003", startup_ms=50.0, mbps=10.0)  # a later scenario changes nothing before it
    assert from_the_fabric(folder, "s002", scenario, POLICIES)["fabric"] == fabric
    assert set(found["policies"]) == set(POLICIES)


def test_a_run_without_fidelity_and_a_reused_calibration_are_not_counted(tmp_path):
    folder = batch(tmp_path)
    finish(folder, "s000", fidelity_ok=False)
    finish(folder, "s001", reused_from="s000")
    scenario = spec.load(folder.scenario_file("s002"))
    assert "unavailable" in from_the_fabric(folder, "s002", scenario, POLICIES)


def test_a_folder_the_figures_cannot_be_read_from_is_said_not_raised(tmp_path):
    folder = batch(tmp_path)
    finish(folder, "s000")
    (folder.done_dir("s000") / "run" / "summary.json").write_text("{not json")
    scenario = spec.load(folder.scenario_file("s001"))
    assert from_the_fabric(folder, "s001", scenario, POLICIES)["unavailable"].startswith("JSONDecodeError")


def test_the_jobs_run_as_the_fabric_makes_them():
    _, scenario = drawing.render(drawing.draw(SAMPLING, 1)[0], SAMPLING, FABRIC_SPEC, POLICIES, 12.0, None,
                                 "s000.yaml")
    fabric = fabricfit.FabricProfile(period_share=0.96, burst_share=0.7, startup_ms=10.0, rate_share=0.95,
                                     jobs=4, scenarios=("a",))
    for declared, ran in zip(scenario.jobs, fabricfit.jobs_as_run(planned_jobs(scenario), fabric), strict=True):
        assert ran.period_ms == pytest.approx(0.96 * declared.period_ms)
        assert ran.comm_ms == pytest.approx(0.7 * declared.comm_ms - 10.0)
        assert ran.link_headroom == pytest.approx(1 / 0.95)


def test_a_fabric_that_runs_jobs_as_declared_predicts_what_the_file_does():
    _, scenario = drawing.render(drawing.draw(SAMPLING, 1)[0], SAMPLING, FABRIC_SPEC, POLICIES, 12.0, None,
                                 "s000.yaml")
    exact = fabricfit.FabricProfile(period_share=1.0, burst_share=1.0, startup_ms=0.0, rate_share=1.0, jobs=2,
                                    scenarios=("a",))
    jobs = [j.__class__(j.name, j.period_ms, j.comm_ms, j.link_headroom)
            for j in fabricfit.jobs_as_run(planned_jobs(scenario), exact)]  # no busy-start charge
    assert before_the_run(scenario, POLICIES, jobs=jobs)["policies"] == before_the_run(scenario, POLICIES)["policies"]


def test_prediction_json_holds_it_else_it_is_made_from_the_same_earlier_scenarios(tmp_path):
    folder = batch(tmp_path)
    finish(folder, "s000")
    scenario = spec.load(folder.scenario_file("s001"))
    made = fabric_prediction(folder, "s001", scenario, {"policies": {}})
    assert made["fabric"]["scenarios"] == ["s000"]
    kept = {"kind": FABRIC, "policies": {"none": {}}}
    assert fabric_prediction(folder, "s001", scenario, {"from_the_fabric": kept}) == kept
    alone = {"kind": FABRIC, "unavailable": "fewer than 2 jobs measured alone"}  # a fleet worker's
    assert fabric_prediction(folder, "s001", scenario, {"from_the_fabric": alone})["fabric"] == made["fabric"]
