"""`shiftbed run` end to end on the real fabric, on a scenario whose policies differ by more
than the model may be off.

Real Mininet + Open vSwitch + Ryu (fabric app + window scheduler) + iperf3 +
tcpdump. The run is the coprime pair of the ``demo_run`` fixture
(conftest.py): `shiftbed demo` runs `shiftbed run`'s code on each of its
scenarios, and its ``--json`` holds each run's own ``--json`` object. All four
built-in policies, 10 s each.

The scenario is the shipped hard case, scenarios/two-jobs-coprime.yaml: periods
401 and 600 ms (gcd 1) with 150- and 200-ms bursts on one link. No static shift
separates them (so `shift` is `none` here), and `gate`, which holds each job to
windows that keep meeting, costs both jobs a large share of their throughput:
the model put `gate` 30-50 % slower than `none` and the wire measured -40 %
(demo run, 2026-12-02). So at least one pair of policies differs by more than
the model's tolerance for every job, and the accuracy test can tell whether
the model tells the policies apart; on the classroom pair they differ by a few
per cent only. (Two jobs with equal periods do not serve: their bursts drift
apart by themselves under `none`, and the policies end up within a few per
cent.)

What the tests check the summary against is computed here from the run's own
tables (iterations.csv, the capture's tcpdump logs), not taken from the summary.
"""

import itertools
import json
import pathlib
import shutil
import subprocess
import sys

import pandas as pd
import pytest

from apps.hoststeal import HostBusy
from scenarios import spec
from scenarios.experiment.progressview import MAX_LINE_CHARS

pytestmark = pytest.mark.root

REPO = pathlib.Path(__file__).resolve().parents[2]
SHIFTBED = str(pathlib.Path(sys.executable).with_name("shiftbed"))
SCENARIO = REPO / "scenarios" / "two-jobs-coprime.yaml"
POLICIES = ("none", "shift", "gate", "random")  # the demo runs every built-in
# Cross-checks: captured vs iperf3-reported bytes within 2 %, utilisation from the
# capture vs port counters within 5 %.
MAX_BYTES_ERR_PCT = 2.0
MAX_UTIL_ERR_PCT = 5.0
MIN_GATE_BYTES_IN_WINDOW = 0.95
# Accuracy: every job's measured mean iteration within 15 % of the fluid model's prediction
# (the goal is 10 %; docs/accuracy.md has the measured errors). Where the model predicts two
# policies further apart than this, the measurement must rank them the same way.
MAX_PREDICTION_ERR_PCT = 15.0
GATE_LAUNCH_LEAD_S = 0.015  # a burst launches its solo lead (launch -> first data; 6-12 ms) early
WARMUP_ITERATIONS = 1  # the first iteration starts at the epoch, before any pattern has formed
TABLE_MS = 0.01  # unix times in a CSV (a few 0.1 us apart at this magnitude) give iterations to within this


@pytest.fixture(scope="module")
def run(demo_run):
    """The demo's coprime run: its ``--json`` object, its results folder, and the demo's stderr."""
    result, _ = demo_run
    assert result.returncode in (0, 3), result.stderr[-3000:]  # 3: fidelity lost, judged by each test
    doc = json.loads(result.stdout)["runs"][SCENARIO.stem]
    return doc, pathlib.Path(doc["results_dir"]), result.stderr


def scenario_periods_ms() -> dict[str, float]:
    return {job.name: job.period_ms for job in spec.load(SCENARIO).jobs}


def iteration_spans(iterations: pd.DataFrame) -> pd.DataFrame:
    """One row per (policy, job, iteration) of iterations.csv, steady iterations only: an iteration runs
    from its first worker's start to its last worker's end (docs/results.md), in ms."""
    spans = (iterations.groupby(["policy", "job", "iteration"])
             .agg(start=("start", "min"), end=("end", "max"), comm_start=("comm_start", "min")).reset_index())
    spans["iteration_ms"] = (spans["end"] - spans["start"]) * 1000
    return spans[spans["iteration"] >= WARMUP_ITERATIONS]


def measured_means_ms(folder: pathlib.Path) -> dict[str, dict[str, float]]:
    """Each policy's and job's mean iteration (ms), from iterations.csv alone."""
    spans = iteration_spans(pd.read_csv(folder / "iterations.csv"))
    out: dict[str, dict[str, float]] = {}
    for (policy, job), rows in spans.groupby(["policy", "job"]):
        out.setdefault(policy, {})[job] = float(rows["iteration_ms"].mean())
    return out


def predicted_ms(summary: dict) -> dict[str, dict[str, float]]:
    return {policy: {job: j["predicted_iteration_ms"] for job, j in entry["jobs"].items()}
            for policy, entry in summary["policies"].items()}


def separated_pairs(predicted: dict[str, dict[str, float]], tolerance_pct: float) -> list[tuple[str, str, str]]:
    """(job, policy, policy) for every two policies the model puts further apart than ``tolerance_pct``."""
    pairs = []
    for p, q in itertools.combinations(sorted(predicted), 2):
        for job in sorted(predicted[p]):
            a, b = predicted[p][job], predicted[q][job]
            if abs(a - b) / min(a, b) * 100 > tolerance_pct:
                pairs.append((job, p, q))
    return pairs


def ranking_disagreements(predicted, measured, tolerance_pct: float) -> list[str]:
    """Where the model puts two policies further apart than ``tolerance_pct`` for a job, the measured
    mean iterations must be in the same order; one line per pair that is not."""
    wrong = []
    for job, p, q in separated_pairs(predicted, tolerance_pct):
        if (predicted[p][job] < predicted[q][job]) != (measured[p][job] < measured[q][job]):
            wrong.append(f"{job}: the model has {p} {predicted[p][job]:.0f} ms and {q} {predicted[q][job]:.0f} ms, "
                         f"measured {measured[p][job]:.0f} and {measured[q][job]:.0f}")
    return wrong


def judge(problems: list[str], summary: dict) -> None:
    """Fail with ``problems``, unless the host took the CPU in every attempt at a measurement of the
    run (``fidelity.disturbed``): then they may be the host's, and the test is inconclusive."""
    fidelity = summary["fidelity"]
    if problems and fidelity["disturbed"]:
        steal = fidelity["host_steal_pct"]
        raise HostBusy(f"the run's {', '.join(fidelity['disturbed'])} ({'; '.join(problems)})",
                       [steal[what] for what in fidelity["disturbed"]])
    assert not problems, "\n".join(problems)


def test_json_has_every_key_for_every_policy_and_job(run):
    doc, _, _ = run
    assert doc["complete"] is True
    assert set(doc["policies"]) == set(POLICIES)
    for entry in doc["policies"].values():
        assert entry["throughput_change_vs_none_pct"] is not None
        assert set(entry["jobs"]) == set(scenario_periods_ms())
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
    assert env["controller"]["framework"] in ("ryu", "os-ken") and env["controller"]["version"] and env["queue_ms"] > 0
    assert env["burst_tcp"] == {"congestion_control": "cubic", "nodelay": True}


def test_crosschecks_within_bounds(run):
    doc, _, _ = run
    checks = doc["crosschecks"]
    assert abs(checks["capture_vs_iperf_bytes_err_pct"]) <= MAX_BYTES_ERR_PCT, checks
    assert checks["capture_vs_portstats_util_err_pct"] is not None
    assert abs(checks["capture_vs_portstats_util_err_pct"]) <= MAX_UTIL_ERR_PCT, checks


def test_the_gate_keeps_most_of_each_jobs_bytes_in_its_windows(run):
    """On a set it cannot keep apart, a burst stretched past its window's close leaves what it had
    queued in the fabric (up to queue_ms of link time) to drain after the close, so the share of a
    job's bytes inside its windows is below a feasible pair's (>= 0.95: test_gate_jobs.py); measured
    0.87-0.90 on this pair (2026-12-02). A gate that enforced nothing would leave each job's bytes in
    its windows by chance, about window/period of them (0.33-0.37 here): the gate must hold at
    least twice that."""
    doc, folder, _ = run
    windows = pd.read_csv(folder / "windows.csv")
    for job, share in doc["crosschecks"]["gate_bytes_in_window"].items():
        mine = windows[(windows["policy"] == "gate") & (windows["job"] == job)]
        by_chance = float((mine["close_s"] - mine["open_s"]).median()) * 1000 / scenario_periods_ms()[job]
        assert share >= min(MIN_GATE_BYTES_IN_WINDOW, 2 * by_chance), (job, share, by_chance)


def test_summary_agrees_with_the_runs_own_tables(run):
    """The summary's measured figures, errors and throughput changes, recomputed from iterations.csv;
    its capture drops, from the tcpdump logs of every capture the run kept in raw/."""
    doc, folder, _ = run
    summary = json.loads((folder / "summary.json").read_text())
    measured = measured_means_ms(folder)
    for policy, entry in summary["policies"].items():
        for job, j in entry["jobs"].items():
            assert j["mean_iteration_ms"] == pytest.approx(measured[policy][job], abs=TABLE_MS), (policy, job)
            error_pct = (measured[policy][job] - j["predicted_iteration_ms"]) / j["predicted_iteration_ms"] * 100
            assert j["error_pct"] == pytest.approx(error_pct, abs=0.01), (policy, job)
        changes = [(measured["none"][job] / ms - 1) * 100 for job, ms in measured[policy].items()]
        assert entry["throughput_change_vs_none_pct"] == pytest.approx(sum(changes) / len(changes), abs=0.01)
    drops = 0
    for log in folder.glob("raw/*/tcpdump.err"):
        drops += sum(int(line.split()[0]) for line in log.read_text().splitlines() if "dropped by kernel" in line)
    assert summary["fidelity"]["capture_drops"] == drops
    assert 0 < summary["fidelity"]["solo_rate_ratio"] <= 1.05
    if not doc["fidelity_ok"]:
        assert "FIDELITY" in (folder / "report.md").read_text().upper()


def test_the_model_puts_some_policies_further_apart_than_its_tolerance(run):
    """What makes the accuracy test meaningful: for every job, the model puts some two policies more
    than the tolerance apart, and the measurement too (else a model that ignored the policies, or a
    fabric on which they did nothing, could pass)."""
    _, folder, _ = run
    summary = json.loads((folder / "summary.json").read_text())
    predicted, measured = predicted_ms(summary), measured_means_ms(folder)
    problems = []
    for job in scenario_periods_ms():
        if not any(j == job for j, _, _ in separated_pairs(predicted, MAX_PREDICTION_ERR_PCT)):
            problems.append(f"{job}: the model puts every two policies within {MAX_PREDICTION_ERR_PCT:g} % "
                            f"of each other: {({p: round(v[job]) for p, v in predicted.items()})}")
        if not any(j == job for j, _, _ in separated_pairs(measured, MAX_PREDICTION_ERR_PCT)):
            problems.append(f"{job}: the policies measured within {MAX_PREDICTION_ERR_PCT:g} % of each other: "
                            f"{({p: round(v[job]) for p, v in measured.items()})}")
    judge(problems, summary)


def test_theory_and_measurement_agree(run):
    """Each job's mean iteration within the tolerance of the model's, and the policies in the
    model's order wherever it puts them further apart than that; on a run that kept its fidelity."""
    _, folder, _ = run
    summary = json.loads((folder / "summary.json").read_text())
    measured, predicted = measured_means_ms(folder), predicted_ms(summary)
    problems = [] if summary["fidelity_ok"] else [f"fidelity lost: {summary['fidelity']['advice']}"]
    for policy, jobs in predicted.items():
        for job, ms in jobs.items():
            error_pct = (measured[policy][job] - ms) / ms * 100
            if abs(error_pct) > MAX_PREDICTION_ERR_PCT:
                problems.append(f"{policy} {job}: measured {measured[policy][job]:.1f} ms, predicted {ms:.1f} "
                                f"({error_pct:+.1f} %)")
    problems += ranking_disagreements(predicted, measured, MAX_PREDICTION_ERR_PCT)
    judge(problems, summary)


def test_gate_launches_every_burst_inside_its_windows(run):
    """The gate's contract on a set it cannot keep apart: every burst launches inside one of its job's
    windows, so a job iterates in whole window periods (one, or more when a burst stretched by the
    other's ran past its next window). How many it misses is the model's to predict
    (test_theory_and_measurement_agree); the median of one period per iteration is held on the
    feasible pairs of test_gate_jobs.py and the labs."""
    doc, folder, _ = run
    epoch_s = doc["policies"]["gate"]["epoch_s"]
    iterations = pd.read_csv(folder / "iterations.csv")
    windows = pd.read_csv(folder / "windows.csv")
    for job in scenario_periods_ms():
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


def test_progress_is_shown_on_stderr_in_short_lines_with_what_is_left(run):
    _, _, stderr = run
    assert "iterations alpha:" in stderr and "link" in stderr
    assert "left] " in stderr and "\r" not in stderr
    assert max(len(line) for line in stderr.splitlines()) <= MAX_LINE_CHARS


def folder_state(folder: pathlib.Path) -> dict[str, tuple[int, int]]:
    """Every file under ``folder``: its size and modification time (ns)."""
    return {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in sorted(folder.rglob("*")) if p.is_file()}


def test_repredicting_the_folder_gives_every_prediction_as_recorded_and_changes_nothing(run):
    """The folder holds all the model draws on (solo runs, every policy's bursts, the offsets each ran
    with, `random`'s included): the same code predicts from it exactly what the run recorded."""
    _, folder, _ = run
    summary = json.loads((folder / "summary.json").read_text())
    before = folder_state(folder)
    result = subprocess.run([SHIFTBED, "report", "--repredict", "--json", str(folder)],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)
    assert answer["notes"] == []
    pairs = {(r["policy"], r["job"]): r for r in answer["jobs"]}
    assert set(pairs) == {(p, j) for p in POLICIES for j in scenario_periods_ms()}
    for (policy, job), row in pairs.items():
        recorded = summary["policies"][policy]["jobs"][job]
        assert row["prediction_ms"] == pytest.approx(recorded["predicted_iteration_ms"], rel=1e-9), (policy, job)
        assert row["measured_ms"] == pytest.approx(recorded["mean_iteration_ms"], rel=1e-9), (policy, job)
    assert folder_state(folder) == before
