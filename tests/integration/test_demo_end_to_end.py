"""`shiftbed demo`, the README's front door, end to end on the real fabric.

One demo at 10 s per policy (a few minutes, root; the ``demo_run`` fixture of
conftest.py, which test_run.py shares). It plans and runs both of its scenarios
under every built-in policy: the classroom pair, which a shift separates, and
the coprime pair, which nothing separates (the infeasible case). The verdict
each report must state is worked out here from the scenario files, by the gcd
rule for two jobs: c_a + c_b <= gcd(T_a, T_b).
"""

import json
import math
import pathlib

import pytest

from apps.hoststeal import HostBusy
from scenarios import spec

REPO = pathlib.Path(__file__).resolve().parents[2]
SCENARIOS = {"classroom": REPO / "scenarios" / "classroom.yaml",
             "two-jobs-coprime": REPO / "scenarios" / "two-jobs-coprime.yaml"}
POLICIES = ("none", "shift", "gate", "random")  # the built-ins: a scenario without `policies:` runs them all
RESULTS_FILES = ("scenario.yaml", "environment.json", "schedule.json", "iterations.csv", "link_bandwidth.csv",
                 "windows.csv", "port_stats.csv", "summary.json", "report.md")


@pytest.fixture(scope="module")
def demo(demo_run):
    return demo_run


def separable(path: pathlib.Path) -> bool:
    """Two jobs can be kept apart for ever iff their bursts fit in the gcd of their periods."""
    a, b = spec.load(path).jobs
    return a.comm_ms + b.comm_ms <= math.gcd(round(a.period_ms), round(b.period_ms))


def test_the_gcd_rule_gives_one_feasible_and_one_infeasible_scenario():
    """By hand: classroom 100 + 150 <= gcd(300, 600) = 300; coprime 150 + 200 > gcd(401, 600) = 1."""
    assert separable(SCENARIOS["classroom"]) and not separable(SCENARIOS["two-jobs-coprime"])


def reports(demo) -> dict[str, pathlib.Path]:
    """The reports the demo's JSON names (its last line on stdout: whether stdout holds nothing
    else is test_the_demo_prints_one_json_object's to judge)."""
    result, _ = demo
    assert result.returncode in (0, 3), result.stderr[-3000:]  # 3: measured, fidelity lost (judged below)
    last = result.stdout.strip().splitlines()[-1]
    return {name: pathlib.Path(path) for name, path in json.loads(last)["reports"].items()}


@pytest.mark.root
def test_the_demo_prints_one_json_object(demo):
    result, _ = demo
    assert result.returncode in (0, 3), result.stderr[-3000:]
    doc = json.loads(result.stdout)  # --json: one JSON object and nothing else on stdout
    assert set(doc) == {"reports", "runs"}, doc
    kept = all(run["fidelity_ok"] for run in doc["runs"].values())
    assert result.returncode == (0 if kept else 3), result.stderr[-3000:]  # 3: a run lost fidelity
    for name, report in doc["reports"].items():  # each run's own --json object, for its report's folder
        assert doc["runs"][name]["results_dir"] == str(pathlib.Path(report).parent), doc["runs"][name]
        assert set(doc["runs"][name]["policies"]) == set(POLICIES)


@pytest.mark.root
def test_the_demo_json_names_a_report_per_scenario(demo):
    _, out = demo
    assert set(reports(demo)) == set(SCENARIOS)
    for name, path in reports(demo).items():
        assert path.name == "report.md" and path.is_file(), path
        assert path.parent.parent == out / name, path  # OUT/<scenario>/<run>/report.md


@pytest.mark.root
@pytest.mark.parametrize("name", SCENARIOS)
def test_each_report_states_the_theorys_verdict(demo, name):
    text = reports(demo)[name].read_text()
    verdict = "feasible" if separable(SCENARIOS[name]) else "infeasible"
    assert f"- Schedule: {verdict}." in text, text[:2000]
    a, b = spec.load(SCENARIOS[name]).jobs
    gcd_ms, comm_sum_ms = math.gcd(round(a.period_ms), round(b.period_ms)), a.comm_ms + b.comm_ms
    row = f"| {a.name} – {b.name} | {gcd_ms:g} | {comm_sum_ms:g} | {'yes' if verdict == 'feasible' else '**no**'} |"
    assert row in text, (row, text[:3000])


@pytest.mark.root
@pytest.mark.parametrize("name", SCENARIOS)
def test_each_reports_policy_verdict_follows_its_intervals(demo, name):
    """"In short" names a policy as helping only when the report's own table has that policy's whole 95 %
    interval above the threshold; otherwise it says no policy beat `none` beyond the noise. The demo's
    JSON gives the same phrase."""
    import re

    from scenarios.analysis.verdict import THRESHOLD_PCT

    text = reports(demo)[name].read_text()
    said = re.search(r"^- Policies: (.*)\.$", text, re.MULTILINE).group(1)
    rows = {m[0]: (m[1], m[2] and (float(m[2]), float(m[3])), m[4])
            for m in re.findall(r"^\| (\w+) \| ([-+0-9.]+) % \| (?:\[([-+0-9.]+), ([-+0-9.]+)\]|n/a) \| "
                                r"(helps|neutral|hurts|no interval|-) \|", text, re.MULTILINE)}
    assert set(rows) == set(POLICIES), rows
    helping = [p for p, (_, bounds, word) in rows.items() if word == "helps"]
    for policy, (_, bounds, word) in rows.items():  # the table rounds each bound to 0.1: -1.04 shows -1.0
        if word == "helps":
            assert bounds[0] >= THRESHOLD_PCT, (policy, bounds)
        elif word == "hurts":
            assert bounds[1] <= -THRESHOLD_PCT, (policy, bounds)
    if helping:
        assert re.match(rf"`({'|'.join(helping)})` helps: ", said), said
    else:
        assert said.startswith(("no policy differed from `none` beyond the noise",
                                "no policy beat `none` beyond the noise")), said
    assert "won" not in said
    doc = json.loads(demo[0].stdout.strip().splitlines()[-1])
    assert doc["runs"][name]["policy_verdict"] == said


@pytest.mark.root
@pytest.mark.parametrize("name", SCENARIOS)
def test_each_results_folder_is_complete_with_its_fidelity(demo, name):
    folder = reports(demo)[name].parent
    for file in RESULTS_FILES:
        assert (folder / file).is_file(), file
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["scenario"] == name
    assert summary["complete"] is True and summary["incomplete_reason"] is None and not summary["gaps"]
    assert set(summary["policies"]) == set(POLICIES)
    jobs = {job.name for job in spec.load(SCENARIOS[name]).jobs}
    for policy, entry in summary["policies"].items():
        assert set(entry["jobs"]) == jobs, policy
        for job, j in entry["jobs"].items():
            # >= 1: under `gate` the coprime pair's beta takes about two 600-ms windows per iteration
            assert j["iterations"] >= 1 and j["mean_iteration_ms"] > 0 and j["predicted_iteration_ms"] > 0, (policy, job)
    fidelity = summary["fidelity"]
    for key in ("solo_rate_ratio", "capture_drops", "disturbed", "host_steal_pct", "drifted"):
        assert key in fidelity, key
    if not summary["fidelity_ok"] and fidelity["disturbed"]:  # the host took the CPU in every attempt
        raise HostBusy(f"the demo's {name} run ({', '.join(fidelity['disturbed'])})",
                       [fidelity["host_steal_pct"][what] for what in fidelity["disturbed"]])
    assert summary["fidelity_ok"] is True, fidelity["advice"]


# Two first bursts that start together share the link: the shorter one's data takes twice as long
# (classroom alpha alone: 70.5 ms, of which 55.7 ms data, so ~126 ms together: 1.8 times its solo
# burst; measured 137.6 ms, 2026-12-02). Halfway between alone (1.0) and together (1.8):
STRETCHED = 1.4


def first_bursts_ms(folder: pathlib.Path, policy: str) -> dict[str, tuple[float, float]]:
    """Each job's first burst on the wire's clock, as (start, end) ms after the policy's epoch: from its
    first worker's comm_start to its last worker's comm_end in iterations.csv."""
    import pandas as pd

    epoch_s = json.loads((folder / "summary.json").read_text())["policies"][policy]["epoch_s"]
    rows = pd.read_csv(folder / "iterations.csv")
    first = rows[(rows["policy"] == policy) & (rows["iteration"] == 0)]
    return {job: ((g["comm_start"].min() - epoch_s) * 1000, (g["comm_end"].max() - epoch_s) * 1000)
            for job, g in first.groupby("job")}


@pytest.mark.root
def test_shift_keeps_the_first_bursts_apart_where_none_makes_them_meet(demo):
    """A policy's effect on the wire, not its bookkeeping. Under `none` both classroom jobs' first
    bursts start at the epoch, meet, and the shorter one takes far longer than alone; under `shift`
    they start the schedule's shift apart (100-150 ms for these jobs) and neither is stretched. A
    `shift` that did nothing (its offsets forced to 0) fails here."""
    folder = reports(demo)["classroom"].parent
    summary = json.loads((folder / "summary.json").read_text())
    solo_ms = {job: figures["comm_ms"] for job, figures in summary["fidelity"]["solo"].items()}
    (a, (a0, a1)), (b, (b0, b1)) = sorted(first_bursts_ms(folder, "shift").items())
    assert a1 <= b0 or b1 <= a0, f"under shift the first bursts met: {a} {a0:.0f}-{a1:.0f}, {b} {b0:.0f}-{b1:.0f} ms"
    for job, (start, end) in ((a, (a0, a1)), (b, (b0, b1))):
        assert end - start < STRETCHED * solo_ms[job], (job, end - start, solo_ms[job])
    none = first_bursts_ms(folder, "none")
    (a0, a1), (b0, b1) = none[a], none[b]
    assert a0 < b1 and b0 < a1, f"under none the first bursts did not meet: {none}"
    shorter = min(none, key=lambda job: solo_ms[job])
    start, end = none[shorter]
    assert end - start >= STRETCHED * solo_ms[shorter], (shorter, end - start, solo_ms[shorter])


# A burst's start-up is its solo comm phase minus its data time: the iperf3 processes, the control
# connection and the closing exchange. It measured 11.0-15.1 ms for the demo's four jobs in two demo
# runs (2026-12-02), and 13-18 ms launch to exit in docs/gate.md ("Burst start overhead"). Calibration
# and the model absorb a slower start (they measure it), so only an absolute bound sees one: 25 ms is
# above every measurement and below a start 20 ms slower than today's (31-35 ms).
MAX_STARTUP_MS = 25.0


@pytest.mark.root
@pytest.mark.parametrize("name", SCENARIOS)
def test_each_jobs_bursts_start_as_fast_as_measured(demo, name):
    summary = json.loads((reports(demo)[name].parent / "summary.json").read_text())
    fidelity = summary["fidelity"]
    slow = {job: round(figures["startup_ms"], 1) for job, figures in fidelity["solo"].items()
            if figures["startup_ms"] > MAX_STARTUP_MS}
    if slow and fidelity["disturbed"]:  # the host took the CPU in every attempt at a measurement
        raise HostBusy(f"the demo's {name} run ({', '.join(fidelity['disturbed'])})",
                       [fidelity["host_steal_pct"][what] for what in fidelity["disturbed"]])
    assert not slow, f"solo bursts start slower than {MAX_STARTUP_MS:g} ms: {slow}"
