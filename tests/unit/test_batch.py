"""`shiftbed batch` without a fabric: the draws, their placement and files, the folder's bookkeeping,
the table and report from a synthetic scenario, and bad arguments (each refused before anything is built).

Every command-line case here is one the batch refuses: a valid one would build a fabric.
"""

import json
import math
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import results_example as example

from controller.theory.sweep import sample_raw
from scenarios import spec
from scenarios.batch import draw as drawing
from scenarios.batch.folder import PREDICTION_FILE, BatchFolder
from scenarios.batch.predict import before_the_run, model_verdict
from scenarios.batch.report import write_report
from scenarios.batch.settings import plan_batch
from scenarios.batch.summary import summarise
from scenarios.batch.table import batch_table
from scenarios.commands.batch import DEFAULTS
from scenarios.exitcodes import FIDELITY_LOST, OK
from scenarios.runnable import require_runnable_here

REPO = Path(__file__).resolve().parents[2]
FABRIC = spec.load(REPO / "scenarios" / "classroom.yaml").fabric
SAMPLING = drawing.Sampling(seed=3, jobs=(2, 3), period_range_ms=(100, 1000), frac_range=(0.1, 0.5), quantum_ms=1.0)


def test_the_draws_are_the_sweeps_jobs_taking_turns():
    drawn = drawing.draw(SAMPLING, 5)
    assert [(d.n_jobs, d.sample) for d in drawn] == [(2, 0), (3, 0), (2, 1), (3, 1), (2, 2)]
    for d in drawn:  # the very draws `shiftbed sweep --seed 3` evaluates
        assert list(d.raw) == sample_raw(3, d.n_jobs, d.sample, (100, 1000), (0.1, 0.5), False, 10_000.0)
    assert drawing.draw(SAMPLING, 5) == drawn  # reproducible
    assert [d.name for d in drawn] == ["s000", "s001", "s002", "s003", "s004"]
    assert drawing.scenario_name(7, 1500) == "s0007"


def test_with_a_mix_the_draws_are_the_maps_at_that_mix():
    from controller.theory.draws import harmonic_counts
    from controller.theory.mapping import COMM_SHARES, MapPoint, sample_point

    for mix in (0.0, 0.5, 1.0):
        sampling = drawing.Sampling(seed=3, jobs=(2, 3), period_range_ms=(100, 1000),
                                    frac_range=COMM_SHARES["medium"], quantum_ms=1.0, mix=mix)
        drawn = drawing.draw(sampling, 24)
        for d in drawn:  # `shiftbed map`'s combinations at its default point, but for the mix
            assert list(d.raw) == sample_point(3, MapPoint(n_jobs=d.n_jobs, mix=mix), d.sample)
        harmonic = sum(int(harmonic_counts(np.array([[p for p, _ in d.raw]]))[0]) for d in drawn)
        assert harmonic == sum(math.floor(12 * mix * n) for n in (2, 3))  # the share holds over the sample
    assert drawing.draw(sampling, 4) != drawing.draw(SAMPLING, 4)


def test_workers_cross_the_two_leaves_each_pair_once_as_the_shipped_scenarios_do():
    placed = [drawing.workers(k, FABRIC) for k in range(4)]
    assert placed == [["h1", "h3"], ["h2", "h4"], ["h1", "h4"], ["h2", "h3"]]  # classroom, three-jobs
    hosts = set(FABRIC.hosts[:FABRIC.hosts_per_leaf])
    assert all(first in hosts and second not in hosts for first, second in placed)


def test_a_drawn_scenario_file_reads_back_as_run_reads_it(tmp_path):
    drawn = drawing.draw(SAMPLING, 2)[1]  # three jobs
    path = tmp_path / "s001.yaml"
    text, scenario = drawing.render(drawn, SAMPLING, FABRIC, ("none", "shift"), 6.0, "persistent", str(path))
    path.write_text(text)
    again = spec.load(path)
    assert again == scenario
    assert again.policies == ("none", "shift") and again.duration_s == 6.0 and again.transport == "persistent"
    assert again.fabric == FABRIC
    for job, (period_ms, frac) in zip(again.jobs, drawn.raw, strict=True):
        assert job.period_ms == period_ms and job.comm_ms == frac * period_ms  # true timings, not rounded
        assert job.pin_spine == 1
    again.require_runnable()
    require_runnable_here(again, str(path), again.policies)  # run's own checks: captured, faithful load


def test_every_job_crosses_leaf1s_uplink_to_spine1_where_the_run_captures():
    from scenarios.runlinks import run_links
    from scenarios.sharedlink import fabric_params
    from topo.wiring import fabric_wiring

    _, scenario = drawing.render(drawing.draw(SAMPLING, 2)[1], SAMPLING, FABRIC, ("none",), 6.0, None, "x.yaml")
    links = run_links(scenario, fabric_wiring(fabric_params(scenario)))
    assert links.meetings[("up", 1, 1)] == ("j0", "j1", "j2")  # leaf 1 -> spine 1: all three jobs meet
    assert [(p.leaf, p.spine) for p in links.ports] == [(1, 1)]


def _values(**given):
    return {**DEFAULTS, "scenarios": 3, **given}


def test_plan_batch_writes_nothing_and_records_the_draws(tmp_path):
    out = tmp_path / "b"
    record, texts = plan_batch(_values(jobs="2,3", transport="persistent"), str(out))
    assert not out.exists()
    assert list(texts) == ["s000", "s001", "s002"]
    assert record["draws"]["s001"] == {"n_jobs": 3, "sample": 0}
    assert record["settings"]["policies"] == ["none", "shift", "gate", "priority"]
    assert all("transport: persistent" in t for t in texts.values())
    assert record["settings"]["target_se_pct"] is None and record["settings"]["reuse_calibration"]
    cheap, _ = plan_batch(_values(target_se_pct="2.5", calibrate_each=True), str(out))
    assert cheap["settings"]["target_se_pct"] == 2.5 and not cheap["settings"]["reuse_calibration"]


def _synthetic_batch(tmp_path, fidelity_ok=True) -> BatchFolder:
    """A batch of one done scenario: the synthetic results folder (results_example) as its run, and a
    prediction before the run with known figures."""
    text = spec_text()
    folder = BatchFolder.create(tmp_path / "batch", {"settings": {"policies": ["none", "shift", "gate"]},
                                                     "draws": {"s000": {"n_jobs": 2, "sample": 0}}},
                                {"s000": text})
    work = folder.begin("s000")
    run = example.write_example(tmp_path / "runs", fidelity_ok=fidelity_ok)
    shutil.move(str(run), work / run.name)
    before = {"none": {"jobs": {"a": 120.0, "b": 240.0}, "change_pct": 0.0, "verdict": None},
              "shift": {"jobs": {"a": 120.0, "b": 240.0}, "change_pct": 0.0, "verdict": "neutral"},
              "gate": {"jobs": {"a": 100.0, "b": 200.0}, "change_pct": 20.0, "verdict": "helps"}}
    (work / PREDICTION_FILE).write_text(json.dumps({"policies": before}))
    folder.finish("s000", {"scenario": "s000", "attempts": [{"results_dir": run.name, "exit_code": 0,
                                                             "fidelity_ok": fidelity_ok}],
                           "kept": run.name, "exit_code": 0})
    return folder


def spec_text() -> str:
    jobs = "\n".join(f"  - {{name: {j}, period_ms: {v['period_ms']}, comm_ms: {v['comm_ms']}, workers: [h1, h3]}}"
                     for j, v in example.JOBS.items())
    return ("name: s000\npolicies: [none, shift, gate]\nduration_s: 3\nfabric: {spines: 1, leaves: 2, "
            f"hosts_per_leaf: 2, host_link_mbps: 20, fabric_link_mbps: 20}}\njobs:\n{jobs}\n")


def test_the_table_holds_every_kind_of_prediction_per_job_and_policy(tmp_path):
    folder = _synthetic_batch(tmp_path)
    table = batch_table(folder)
    assert len(table) == 3 * 2  # policies × jobs
    row = table[(table.policy == "gate") & (table.job == "b")].iloc[0]
    assert row.measured_iteration_ms == example.MEASURED_MS["gate"]["b"]
    assert row.calibration_ms == example.PREDICTED_MS["gate"]["b"]  # the run's prediction, from calibration
    assert math.isnan(row.afterwards_ms)  # no apart_share: not explained afterwards
    assert row.before_ms == 200.0 and row.model_verdict == "helps" and row.model_change_pct == 20.0
    assert row.knife_edge  # the example marks gate's b
    shift = table[table.policy == "shift"].iloc[0]
    assert shift.wire_change_pct == pytest.approx(example.SHIFT_CHANGE_PCT, abs=2)


def test_the_table_says_what_stopped_each_policy_and_whose_calibration_a_job_reused(tmp_path):
    folder = _synthetic_batch(tmp_path)
    table = batch_table(folder)
    assert table["stopped_by"].isna().all() and table["calibration_reused_from"].isna().all()  # neither asked
    kept = folder.done_dir("s000") / folder.outcome("s000")["kept"] / "summary.json"
    summary = json.loads(kept.read_text())
    summary["policies"]["gate"]["stopped"] = {"by": "target", "after_ms": 7400.0, "target_se_pct": 2.0,
                                              "se_pct": {"a": 1.2, "b": 1.9}}
    summary["policies"]["none"]["stopped"] = {"by": "ceiling", "after_ms": 12000.0, "target_se_pct": 2.0}
    summary["fidelity"]["solo"]["b"]["reused_from"] = "s007"
    kept.write_text(json.dumps(summary))
    table = batch_table(folder).set_index(["policy", "job"])
    assert table.loc[("gate", "a"), "stopped_by"] == "target" and table.loc[("gate", "a"), "stopped_after_s"] == 7.4
    assert table.loc[("none", "b"), "stopped_by"] == "ceiling" and table.loc[("none", "b"), "stopped_after_s"] == 12
    assert math.isnan(table.loc[("shift", "a"), "stopped_after_s"])
    assert set(table.xs("b", level="job")["calibration_reused_from"]) == {"s007"}
    assert table.xs("a", level="job")["calibration_reused_from"].isna().all()


def test_the_report_says_how_each_policy_ended_and_how_many_calibrations_were_reused(tmp_path):
    from scenarios.batch.report import render_markdown, sections

    table = batch_table(_synthetic_batch(tmp_path))
    table.loc[table.policy == "gate", ["stopped_by", "stopped_after_s"]] = ["target", 7.4]
    table.loc[table.policy == "none", ["stopped_by", "stopped_after_s"]] = ["ceiling", 12.0]
    table.loc[table.job == "b", "calibration_reused_from"] = "s007"
    found = summarise(table, ["none", "shift", "gate"])
    assert found["cost"] == {"stopped": {"none": {"target": 0, "ceiling": 1, "median_s": 12.0},
                                         "gate": {"target": 1, "ceiling": 0, "median_s": 7.4}},
                             "jobs": 2, "reused": 1}
    record = {"settings": {"target_se_pct": 2.0, "duration_s": 12.0, "reuse_calibration": True}}
    md = render_markdown("t", sections(found, record))
    assert "standard error of at most 2 % of it, or to the ceiling of 12 s" in md
    assert "| gate | 1 | 0 | 7.4 |" in md and "| none | 0 | 1 | 12.0 |" in md
    assert "measured in an earlier scenario of this batch run): 1 of 2 jobs" in md
    plain = render_markdown("t", sections(summarise(batch_table(_synthetic_batch(tmp_path / "p")),
                                                    ["none", "gate"]), {"settings": {}}))
    assert "ran its full duration" in plain and "calibrated anew" in plain


def test_the_summary_and_report_from_the_table(tmp_path):
    folder = _synthetic_batch(tmp_path)
    table = batch_table(folder)
    found = summarise(table, ["none", "shift", "gate"])
    errors = found["errors"]["before the run"]["all"]
    measured = {(p, j): ms for p, jobs in example.MEASURED_MS.items() for j, ms in jobs.items()}
    before = {("none", "a"): 120, ("none", "b"): 240, ("shift", "a"): 120, ("shift", "b"): 240,
              ("gate", "a"): 100, ("gate", "b"): 200}
    expected = sorted(abs(measured[k] - before[k]) / measured[k] for k in before)
    assert errors["n"] == 6 and errors["median"] == pytest.approx((expected[2] + expected[3]) / 2)
    compared = found["policies"]["gate"]["compared"] + found["policies"]["shift"]["compared"]
    assert found["agreement"]["n"] == compared
    for d in found["disagreements"]:
        assert d["causes"] and d["model"] != d["wire"]
    md, page = write_report(folder.root, found, folder.record)
    assert "Cohen's kappa" in md.read_text() and page.read_text().startswith("<!DOCTYPE html>")


def test_the_prediction_from_the_fabric_is_a_kind_with_its_own_error_and_agreement(tmp_path):
    folder = _synthetic_batch(tmp_path)
    assert batch_table(folder)["fabric_ms"].isna().all()  # the first scenario: no fabric measured before it
    prediction = folder.done_dir("s000") / PREDICTION_FILE
    doc = json.loads(prediction.read_text())
    doc["from_the_fabric"] = {"policies": {
        "none": {"jobs": {"a": 110.0, "b": 220.0}, "change_pct": 0.0, "verdict": None},
        "shift": {"jobs": {"a": 110.0, "b": 220.0}, "change_pct": 0.0, "verdict": "neutral"},
        "gate": {"jobs": {"a": 121.0, "b": 242.0}, "change_pct": -9.1, "verdict": "hurts"}}}
    prediction.write_text(json.dumps(doc))
    table = batch_table(folder)
    gate = table[(table.policy == "gate") & (table.job == "b")].iloc[0]
    assert gate.fabric_ms == 242.0 and gate.fabric_verdict == "hurts" and gate.fabric_change_pct == -9.1
    found = summarise(table, ["none", "shift", "gate"])
    measured = {(p, j): ms for p, jobs in example.MEASURED_MS.items() for j, ms in jobs.items()}
    fabric = {(p, j): ms for p, jobs in doc["from_the_fabric"]["policies"].items() for j, ms in jobs["jobs"].items()}
    expected = sorted(abs(measured[k] - fabric[k]) / measured[k] for k in fabric)
    assert found["errors"]["before the run, from the fabric"]["all"]["median"] == pytest.approx(
        (expected[2] + expected[3]) / 2)
    wire = table.drop_duplicates("policy").set_index("policy")["wire_verdict"]
    agreeing = sum(wire[p] == v for p, v in (("shift", "neutral"), ("gate", "hurts")))
    assert found["agreement_from_the_fabric"]["n"] == found["agreement"]["n"]
    assert found["agreement_from_the_fabric"]["share"] == pytest.approx(agreeing / found["agreement"]["n"])
    md, _ = write_report(folder.root, found, folder.record)
    assert "The prediction before the run from the fabric" in md.read_text()


def test_report_writes_the_table_and_report_of_what_is_done_and_runs_nothing(tmp_path):
    folder = _synthetic_batch(tmp_path)
    record, _ = plan_batch(_values(policy="none,shift,gate", transport="persistent"), str(tmp_path / "unused"))
    whole = {**folder.record, "settings": record["settings"], "scenarios": ["s000", "s001"]}
    (folder.root / "batch.json").write_text(json.dumps(whole))  # s001 not done: a batch still running
    result = shiftbed("--report", str(folder.root), cwd=tmp_path)
    assert result.returncode == OK, result.stderr
    assert len(pd.read_parquet(folder.root / "batch.parquet")) == 3 * 2  # s000's policies × jobs
    assert "**Incomplete batch**" in (folder.root / "report.md").read_text()
    assert not (folder.root / ".partial").exists() or not any((folder.root / ".partial").iterdir())
    for args, message in ((["--report", str(folder.root), "--seed", "2"], "--report: reads the batch's folder"),
                          (["--report", str(tmp_path)], "--report: " + str(tmp_path) + ": not a batch folder")):
        result = shiftbed(*args, cwd=tmp_path)
        assert result.returncode == 2 and result.stderr.strip() == result.stderr.strip().splitlines()[0]
        assert message in result.stderr, result.stderr


def test_a_lost_fidelity_is_kept_and_named_but_not_compared(tmp_path):
    folder = _synthetic_batch(tmp_path, fidelity_ok=False)
    found = summarise(batch_table(folder), ["none", "shift", "gate"])
    assert found["fidelity_lost"] == ["s000"] and found["agreement"]["n"] == 0
    assert all(d["causes"][0] == "fidelity lost" for d in found["disagreements"])


def test_a_scenario_is_done_only_once_renamed_and_resume_redoes_the_rest(tmp_path):
    folder = BatchFolder.create(tmp_path / "b", {"settings": {}}, {"s000": "a", "s001": "b", "s002": "c"})
    assert not list(tmp_path.glob(".b.creating"))
    assert folder.pending() == ["s000", "s001", "s002"]
    work = folder.begin("s000")
    (work / "half-written").write_text("x")
    folder.finish("s000", {"attempts": [], "exit_code": 0})
    work = folder.begin("s001")  # then killed: the work folder stays behind
    (work / "stale").write_text("x")
    again = BatchFolder.open(tmp_path / "b")
    assert again.pending() == ["s001", "s002"] and again.done() == ["s000"]
    assert (again.done_dir("s000") / "half-written").is_file()
    fresh = again.begin("s001")  # a resumed scenario starts from nothing
    assert list(fresh.iterdir()) == []


def test_model_verdicts_at_the_sweeps_threshold():
    assert model_verdict("shift", 1.5) == "helps" and model_verdict("shift", -1.5) == "hurts"
    assert model_verdict("shift", 0.5) == "neutral" and model_verdict("none", 0.0) is None
    assert model_verdict("gate", None) is None


def test_the_prediction_before_the_run_needs_nothing_measured():
    scenario = spec.load(REPO / "scenarios" / "classroom.yaml")
    out = before_the_run(scenario, ("none", "shift", "gate"))
    assert out["kind"] == "before the run" and out["feasible"]
    assert out["policies"]["shift"]["verdict"] == "helps"  # gcd 300 >= 100 + 150: apart, at full speed
    assert out["policies"]["none"]["verdict"] is None


def shiftbed(*args, cwd):
    return subprocess.run([sys.executable, "-m", "scenarios.cli", "batch", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=120, env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})


@pytest.mark.parametrize("args, message", [
    ([], "OUT: give the batch's folder"),
    (["OUT"], "--scenarios: say how many"),
    (["OUT", "--scenarios", "0"], "--scenarios: must be at least 1"),
    (["OUT", "--scenarios", "2", "--jobs", "1"], "--jobs: need at least 2 jobs"),
    (["OUT", "--scenarios", "2", "--period-ms", "900:100"], "--period-ms: need 0 < LO <= HI"),
    (["OUT", "--scenarios", "2", "--comm-frac", "0.2:1.5"], "--comm-frac: HI must be below 1"),
    (["OUT", "--scenarios", "2", "--mix", "1.5"], "--mix: a share from 0 to 1"),
    (["OUT", "--scenarios", "2", "--mix", "0", "--zoo"], "--mix: applies to uniform periods"),
    (["OUT", "--scenarios", "2", "--mix", "0.5", "--period-ms", "600:1000"], "--mix: --period-ms 600:1000 has no"),
    (["OUT", "--scenarios", "2", "--quantum-ms", "1,5"], "--quantum-ms: a batch runs one quantum"),
    (["OUT", "--scenarios", "2", "--policy", "shift,gate"], "--policy: a batch judges every policy against"),
    (["OUT", "--scenarios", "2", "--policy", "none,bogus"], "--policy: "),
    (["OUT", "--scenarios", "2", "--policy", "none,mltcp"], "a model only"),
    (["OUT", "--scenarios", "2", "--duration", "-1"], "--duration: must be a positive number"),
    (["OUT", "--scenarios", "2", "--target-se-pct", "0"], "--target-se-pct: must be above 0"),
    (["OUT", "--scenarios", "2", "--fabric", "/no/such.yaml"], "--fabric: /no/such.yaml: no such file"),
    (["OUT", "--scenarios", "2", "--transport", "carrier-pigeon"], "invalid choice"),
    (["--resume", "."], "not a batch folder"),
    (["--resume", ".", "--seed", "4"], "--resume: takes the batch's own settings"),
])
def test_bad_arguments_are_one_line_and_exit_2_with_nothing_written(tmp_path, args, message):
    result = shiftbed(*args, cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], result.stderr
    assert list(tmp_path.iterdir()) == []


def test_an_existing_out_is_refused_and_left_alone(tmp_path):
    (tmp_path / "OUT").mkdir()
    result = shiftbed("OUT", "--scenarios", "2", cwd=tmp_path)
    assert result.returncode == 2 and "--resume OUT" in result.stderr
    assert list((tmp_path / "OUT").iterdir()) == []


def test_a_fabric_a_job_cannot_cross_is_refused(tmp_path):
    one_leaf = tmp_path / "one-leaf.yaml"
    one_leaf.write_text("name: x\nfabric: {spines: 1, leaves: 1, hosts_per_leaf: 4, host_link_mbps: 50, "
                        "fabric_link_mbps: 50}\njobs: [{name: a, period_ms: 100, comm_ms: 10}]\n")
    result = shiftbed("OUT", "--scenarios", "2", "--fabric", str(one_leaf), cwd=tmp_path)
    assert result.returncode == 2 and "places each job across two leaves" in result.stderr


def test_compare_reads_a_batch_folder_as_its_kept_runs(tmp_path):
    from scenarios.analysis.compare import compare_table, load_runs

    folder = _synthetic_batch(tmp_path)
    runs = load_runs([folder.root])
    assert [r.path.parent.name for r in runs] == ["s000"]
    assert len(compare_table(runs)) == 3 * 2


def test_the_batch_report_opens_in_chromium_offline(tmp_path):
    """report.html of a batch in Debian's Chromium, headless: it loads with no console error and no request
    beyond the file itself, and a reader sees every section, with its tables."""
    from headless_chromium import CHROMIUM, open_page

    if CHROMIUM is None:
        pytest.skip("chromium not installed (`make test` installs it)")
    folder = _synthetic_batch(tmp_path)
    _, page_path = write_report(folder.root, summarise(batch_table(folder), ["none", "shift", "gate"]),
                                folder.record)
    with open_page(page_path.as_uri()) as page:
        page.wait_until("document.readyState === 'complete'")
        titles = page.evaluate("[...document.querySelectorAll('h2')].map(h => h.textContent)")
        tables = page.evaluate("document.querySelectorAll('table').length")
        errors, urls = page.errors(), page.requested_urls()
    assert errors == [] and all(u.startswith(("file:", "data:", "about:")) for u in urls), (errors, urls)
    assert titles == ["In short", "How often each policy helps", "The model's verdict against the wire's",
                      "Each kind of prediction's error", "Where the model and the wire disagree",
                      "What each scenario cost", "Settings"]
    assert tables >= 1 + 3 + 1 + 1  # fractions, agreement (every policy, shift, gate), errors, settings


def test_each_cause_from_the_runs_own_data():
    from scenarios.batch.summary import causes

    base = {"policy": "shift", "fidelity_ok": True, "wire_verdict": "neutral", "wire_change_pct": 0.2,
            "wire_low_pct": -0.3, "wire_high_pct": 0.7, "model_change_pct": 4.0, "knife_edge": False,
            "met_change": math.nan, "none_met_change": math.nan, "none_apart_share": math.nan,
            "run_predicted_change_pct": 3.0}
    assert causes(base) == ["model error"]
    assert causes({**base, "fidelity_ok": False})[0] == "fidelity lost"
    assert causes({**base, "model_change_pct": 1.4}) == ["knife edge"]  # 0.4 from +1 %, half-width 0.5
    assert causes({**base, "wire_low_pct": -2.0, "wire_high_pct": 2.4}) == ["too short to tell"]  # ±2.2 > 1 %
    assert causes({**base, "none_apart_share": 0.4}) == ["jobs sorting themselves apart"]
    assert causes({**base, "met_change": math.nan, "none_met_change": 0.3}) == ["transient"]
    assert causes({**base, "run_predicted_change_pct": 0.5}) == ["declared timings"]


def test_the_progress_says_the_scenarios_done_and_the_running_agreement(tmp_path):
    import io

    from scenarios.batch.progress import BatchProgress
    from scenarios.batch.summary import running_agreement

    folder = _synthetic_batch(tmp_path)
    stream = io.StringIO()
    progress = BatchProgress(folder, [], stream=stream)  # a resumed batch with nothing left
    progress.introduce()
    agreeing, compared = running_agreement(batch_table(folder))
    assert compared >= 1
    said = stream.getvalue()
    assert "0 of 1 scenarios to run" in said
    assert f"1 of 1 scenarios done; model and wire agree on {agreeing} of {compared} verdicts" in said
    assert progress.display.note == progress.status()


@pytest.mark.parametrize("fidelity, attempts, code", [((True,), 1, 0), ((False, True), 2, 0),
                                                       ((False, False), 2, 3)])
def test_a_run_that_lost_fidelity_is_run_once_more_then_kept(tmp_path, monkeypatch, fidelity, attempts, code):
    """The batch's own decisions around a run (the run itself stood in for by the synthetic results folder,
    written where ``run`` writes and answering with ``run``'s exit status for it)."""
    from scenarios.batch import local as command
    from scenarios.batch import predict
    from scenarios.experiment import session
    from scenarios.experiment.session import SessionResult

    folder = BatchFolder.create(tmp_path / "b", {"settings": {"seed": 0, "policies": ["none", "shift", "gate"]}},
                                {"s000": spec_text()})
    answers, made = iter(fidelity), []

    def fake_run(scenario, text, options, display, solo_cache=None):
        made.append(next(answers))
        run = example.write_example(tmp_path / f"run{len(made)}", fidelity_ok=made[-1])
        kept = Path(shutil.move(str(run), options.out_root / "s000" / f"20261206T00000{len(made)}Z"))
        return SessionResult(OK if made[-1] else FIDELITY_LOST, kept)

    monkeypatch.setattr(session, "run_session", fake_run)
    monkeypatch.setattr(predict, "before_the_run", lambda scenario, policies: {"kind": "before the run",
                                                                              "policies": {}})
    assert command.run_scenario(folder, "s000", display=None) == code
    outcome = folder.outcome("s000")
    assert len(outcome["attempts"]) == attempts and outcome["exit_code"] == code
    assert outcome["kept"] == outcome["attempts"][-1]["results_dir"]
    assert [a["fidelity_ok"] for a in outcome["attempts"]] == list(fidelity)
    assert folder.pending() == [] and not list(folder.work_root.iterdir())


def test_a_run_gets_the_batchs_target_and_calibrations_and_one_without_fidelity_is_forgotten(tmp_path, monkeypatch):
    from scenarios.batch import local as command
    from scenarios.batch import predict
    from scenarios.experiment import session
    from scenarios.experiment.session import SessionResult

    folder = BatchFolder.create(tmp_path / "b", {"settings": {"seed": 0, "policies": ["none", "shift", "gate"],
                                                              "target_se_pct": 2.5, "reuse_calibration": True}},
                                {"s000": spec_text()})
    cache, forgotten, given = command.batch_solo_cache(folder), [], []
    monkeypatch.setattr(cache, "forget", forgotten.append)

    def fake_run(scenario, text, options, display, solo_cache=None):
        given.append((options.target_se_pct, solo_cache))
        run = example.write_example(tmp_path / f"run{len(given)}", fidelity_ok=len(given) > 1)
        if len(given) > 1:  # kept with fidelity, but a job ran off the speed it was calibrated at
            summary = json.loads((run / "summary.json").read_text())
            summary["fidelity"]["drifted"] = ["a"]
            (run / "summary.json").write_text(json.dumps(summary))
        kept = Path(shutil.move(str(run), options.out_root / "s000" / f"20261206T00000{len(given)}Z"))
        return SessionResult(OK if len(given) > 1 else FIDELITY_LOST, kept)

    monkeypatch.setattr(session, "run_session", fake_run)
    monkeypatch.setattr(predict, "before_the_run", lambda scenario, policies: {"kind": "before the run",
                                                                              "policies": {}})
    assert command.run_scenario(folder, "s000", None, cache) == OK
    assert given == [(2.5, cache), (2.5, cache)]  # as `run --target-se-pct 2.5`, on the batch's calibrations
    assert forgotten == ["s000", "s000"]  # lost fidelity, then drifted: neither's calibrations are reused
    assert cache.root == folder.root / command.CALIBRATION_DIR
    assert command.batch_solo_cache(BatchFolder.create(tmp_path / "c", {"settings": {}}, {"s000": spec_text()})) is None


def test_the_runs_own_prediction_is_judged_beside_the_one_before_the_run(tmp_path):
    found = summarise(batch_table(_synthetic_batch(tmp_path)), ["none", "shift", "gate"])
    run = found["agreement_from_the_run"]
    assert run["n"] == found["agreement"]["n"]  # the same pairs, the run's prediction in place of the model's
    # the example's run predicted shift +3.4 % and gate +12.5 % from its means (both help): the wire's
    # verdicts, whatever they are, stand in the "helps" row
    assert sum(run["table"][0]) == run["n"] == 2


def test_a_batch_with_nothing_done_yet_summarises_and_reports_to_nothing_compared(tmp_path):
    folder = BatchFolder.create(tmp_path / "b", {"settings": {}}, {"s000": spec_text()})
    table = batch_table(folder)
    found = summarise(table, ["none", "shift"])
    assert table.empty and found["agreement"]["n"] == 0 and found["policies"]["shift"]["compared"] == 0
    md, _ = write_report(folder.root, found, folder.record)
    assert "0 of 1 scenarios done" in md.read_text() and "Incomplete batch" in md.read_text()


def test_a_model_only_policy_is_refused_before_a_newer_iperf3s_transport_notice(tmp_path, monkeypatch, capsys):
    """With an iperf3 that ends each test at its next report tick (3.16 on), the default transport
    changes with a notice: a refused policy's one line must come first, and alone."""
    from apps import iperf
    from scenarios.errors import InputError

    monkeypatch.setattr(iperf, "installed_version", lambda: (3, 18))
    with pytest.raises(InputError, match="a model only"):
        plan_batch(_values(policy="none,mltcp"), str(tmp_path / "OUT"))
    assert capsys.readouterr().err == ""


def test_the_report_gives_the_sweeps_fractions_for_the_distribution_beside_the_batchs_own(tmp_path):
    from scenarios.batch.report import render_markdown, sections

    found = summarise(batch_table(_synthetic_batch(tmp_path)), ["none", "shift", "gate"])
    assert not any("sweep" in t[0] for s in sections(found, {"settings": {}}) for t in s.tables)
    helps = {"count": 3, "n": 200, "fraction": 0.015, "ci95": [0.005, 0.043]}
    rest = {"count": 197, "n": 200, "fraction": 0.985, "ci95": [0.957, 0.995]}
    none = {"count": 0, "n": 200, "fraction": 0.0, "ci95": [0.0, 0.019]}
    found["sweep"] = {"shift": {"helps": helps, "neutral": rest, "hurts": none}}
    counts = next(s for s in sections(found, {"settings": {}}) if s.title == "How often each policy helps")
    caption, header, rows = counts.tables[-1]
    assert caption.startswith("The sweep's fractions for the distribution") and "200 draws" in caption
    assert header == ["policy", "sweep helps", "sweep neutral", "sweep hurts"]
    assert rows == [["shift", "2 % [0, 4]", "98 % [96, 100]", "0 % [0, 2]"]]
    assert "| shift | 2 % [0, 4] | 98 % [96, 100] | 0 % [0, 2] |" in render_markdown("t", sections(found, {}))
