"""`shiftbed run` on the classroom scenario, end to end, on the real fabric.

Real Mininet + Open vSwitch + Ryu (fabric app + window scheduler) + iperf3 +
tcpdump, driven through the installed command as a user would. One run (all
four policies, ~1–2 minutes) is shared by the tests below.
"""

import json
import os
import pathlib
import shutil
import subprocess
import sys

import pandas as pd
import pytest

pytestmark = pytest.mark.root

REPO = pathlib.Path(__file__).resolve().parents[2]
SHIFTBED = str(pathlib.Path(sys.executable).with_name("shiftbed"))
SCENARIO = REPO / "scenarios" / "classroom.yaml"
POLICIES = ("none", "shift", "gate", "random")
# Cross-checks (issue 5): captured vs iperf3-reported bytes within 2 %,
# utilisation from the capture vs port counters within 5 %. Accuracy (issue 5):
# every job's measured mean iteration within 15 % of the fluid model's
# prediction (the goal is 10 %; docs/accuracy.md has the measured errors).
MAX_BYTES_ERR_PCT = 2.0
MAX_UTIL_ERR_PCT = 5.0
MIN_GATE_BYTES_IN_WINDOW = 0.95
MAX_PREDICTION_ERR_PCT = 15.0
# A gated job's median iteration against its window period: 297.4-302.6 ms for alpha and
# 597.7-602.3 for beta in 26 classroom runs here (docs/accuracy.md, sixteenth session).
MAX_GATE_MEDIAN_ERR = 0.02
GATE_LAUNCH_LEAD_S = 0.015  # a burst launches its solo lead (launch -> first data; 6-12 ms) early


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    if os.geteuid() != 0:
        pytest.skip("needs root")
    out = tmp_path_factory.mktemp("results")
    result = subprocess.run([SHIFTBED, "run", str(SCENARIO), "--policy", ",".join(POLICIES), "--out", str(out),
                             "--json"], capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    doc = json.loads(result.stdout)
    return doc, pathlib.Path(doc["results_dir"]), result.stderr


def test_json_has_every_key_for_every_policy_and_job(run):
    doc, _, _ = run
    assert doc["complete"] is True
    assert set(doc["policies"]) == set(POLICIES)
    for entry in doc["policies"].values():
        assert entry["throughput_change_vs_none_pct"] is not None
        assert set(entry["jobs"]) == {"alpha", "beta"}
        for job in entry["jobs"].values():
            assert job["iterations"] >= 3
            assert job["mean_iteration_ms"] > 0 and job["predicted_iteration_ms"] > 0
    assert doc["policies"]["none"]["throughput_change_vs_none_pct"] == 0


def test_results_folder_is_complete_and_readable(run):
    _, folder, _ = run
    from scenarios.results import load_results

    results = load_results(folder)
    assert results.summary.complete
    assert not list(folder.parent.glob(".*partial"))
    for table in ("iterations", "link_bandwidth", "windows", "port_stats"):
        assert len(getattr(results, table)) > 0, table
    assert set(results.iterations["policy"]) == set(POLICIES)
    env = json.loads((folder / "environment.json").read_text())
    assert env["datapath"] in ("user", "kernel") and env["mtu"] == 9000 and env["ovs_version"]
    assert env["ryu_version"] == "4.34" and env["queue_ms"] > 0
    assert env["burst_tcp"] == {"congestion_control": "cubic", "nodelay": True}


def test_crosschecks_within_bounds(run):
    doc, _, _ = run
    checks = doc["crosschecks"]
    assert abs(checks["capture_vs_iperf_bytes_err_pct"]) <= MAX_BYTES_ERR_PCT, checks
    assert checks["capture_vs_portstats_util_err_pct"] is not None
    assert abs(checks["capture_vs_portstats_util_err_pct"]) <= MAX_UTIL_ERR_PCT, checks
    for job, share in checks["gate_bytes_in_window"].items():
        assert share >= MIN_GATE_BYTES_IN_WINDOW, (job, checks)


def test_fidelity_and_predictions_are_reported(run):
    doc, folder, _ = run
    summary = json.loads((folder / "summary.json").read_text())
    fidelity = summary["fidelity"]
    assert 0 < fidelity["solo_rate_ratio"] <= 1.05
    assert doc["fidelity_ok"] == (fidelity["solo_rate_ratio"] >= 0.9 and fidelity["capture_drops"] == 0
                                  and not fidelity["unmeasured_jobs"] and not fidelity["overrun_jobs"]
                                  and not fidelity["disturbed"])
    if not doc["fidelity_ok"]:
        assert "FIDELITY" in (folder / "report.md").read_text().upper()
    for entry in doc["policies"].values():
        for job in entry["jobs"].values():
            expected = (job["mean_iteration_ms"] - job["predicted_iteration_ms"]) / job["predicted_iteration_ms"] * 100
            assert job["error_pct"] == pytest.approx(expected)


def test_theory_and_measurement_agree(run):
    doc, folder, _ = run
    fidelity = json.loads((folder / "summary.json").read_text())["fidelity"]
    if fidelity["disturbed"]:  # in every attempt: what they measured is the host (tests/conftest.py)
        pytest.skip(f"inconclusive: {fidelity['advice']}")
    assert doc["fidelity_ok"] is True
    errors = {(policy, job): round(entry["error_pct"], 1)
              for policy, p in doc["policies"].items() for job, entry in p["jobs"].items()}
    assert all(abs(err) <= MAX_PREDICTION_ERR_PCT for err in errors.values()), errors


def test_gate_holds_each_job_to_its_period(run):
    """The gate's contract: every burst launches inside one of its job's windows, and a job iterates
    once per window period. Its mean adds the windows a job missed when a burst ran long (4 of 38 in
    one CI run: alpha 332 ms, median 301.9; alone its bursts never ran long); the model judges the
    mean (test_theory_and_measurement_agree)."""
    doc, folder, _ = run
    epoch_s = doc["policies"]["gate"]["epoch_s"]
    iterations = pd.read_csv(folder / "iterations.csv")
    windows = pd.read_csv(folder / "windows.csv")
    for job, period_ms in (("alpha", 300), ("beta", 600)):  # the classroom periods
        entry = doc["policies"]["gate"]["jobs"][job]
        assert entry["median_iteration_ms"] == pytest.approx(period_ms, rel=MAX_GATE_MEDIAN_ERR), entry
        mine = windows[(windows["policy"] == "gate") & (windows["job"] == job)]
        launches_s = (iterations[(iterations["policy"] == "gate") & (iterations["job"] == job)]
                      .groupby("iteration")["comm_start"].min() - epoch_s)
        launches_s = launches_s[launches_s < mine["close_s"].max()]  # the table lists the run's windows only
        opens_s, closes_s = mine["open_s"].to_numpy(), mine["close_s"].to_numpy()
        outside = [round(1000 * t) for t in launches_s
                   if not ((opens_s - GATE_LAUNCH_LEAD_S <= t) & (t < closes_s)).any()]
        assert len(launches_s) >= 5 and not outside, (job, "launched outside its windows at (ms)", outside)


def test_plots_exist_and_redraw_identically(run, tmp_path):
    _, folder, _ = run
    pngs = sorted((folder / "plots").glob("*.png"))
    assert len(pngs) >= 4
    for png in pngs:
        data = png.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000, png
    copy = tmp_path / folder.name
    shutil.copytree(folder, copy)
    for png in (copy / "plots").glob("*.png"):
        png.unlink()
    (copy / "report.md").unlink()
    redraw = subprocess.run([SHIFTBED, "report", str(copy)], capture_output=True, text=True, timeout=120)
    assert redraw.returncode == 0, redraw.stderr
    for png in pngs:
        assert (copy / "plots" / png.name).read_bytes() == png.read_bytes(), png.name
    assert (copy / "report.md").read_text() == (folder / "report.md").read_text().replace(str(folder), str(copy))


def test_progress_is_shown_on_stderr(run):
    _, _, stderr = run
    assert "iterations alpha:" in stderr and "link" in stderr
