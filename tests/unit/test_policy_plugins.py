"""The policy plug-in interface: a user's file, loaded by path, works wherever a built-in does."""

import math
import subprocess
import sys
from pathlib import Path

import pytest

from apps.dltjob import JobDriver
from apps.jobmodel import JobPlan, JobSpec, TransferResult, Worker
from controller.scheduler import ApiError, SchedulerCore
from controller.theory import fluid, policies
from controller.theory.schedule import JobTiming, compute_schedule
from scenarios import spec
from scenarios.errors import InputError

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "docs" / "labs" / "examples" / "realign.py"
SHIFTBED = str(Path(sys.executable).with_name("shiftbed"))


@pytest.fixture
def loaded():
    """Load files through this; everything they registered is removed afterwards."""
    before, files_before = set(policies.POLICIES), set(policies._LOADED_FILES)
    yield policies.load_policy_file
    for name in set(policies.POLICIES) - before:
        del policies.POLICIES[name]
    for key in set(policies._LOADED_FILES) - files_before:
        del policies._LOADED_FILES[key]


def test_the_example_registers_realign4_and_loading_twice_is_harmless(loaded):
    assert loaded(EXAMPLE) == ["realign4"]
    assert loaded(EXAMPLE) == ["realign4"]
    p = policies.get_policy("realign4")
    assert [k for k in range(10) if p.waits_for_window(k)] == [0, 4, 8]
    assert not p.enforces_windows and p.realigns() and p.uses_schedule


@pytest.mark.parametrize("body, words", [
    (None, "no such policy file"),
    ("x = 1\n", "registers no policy"),
    ("def broken(:\n", "line 1: SyntaxError"),
    ("from controller.theory.policies import Policy, register\n\n\n@register\nclass P(Policy):\n    name = 'none'\n",
     "line 4: ValueError: policy name 'none' is empty or taken"),
    ("import no_such_module_here\n", "ModuleNotFoundError"),
])
def test_bad_policy_files_are_one_line_errors(tmp_path, loaded, body, words):
    path = tmp_path / "p.py"
    if body is not None:
        path.write_text(body)
    with pytest.raises(policies.PolicyFileError) as info:
        loaded(path)
    message = str(info.value)
    assert str(path) in message and words in message and "\n" not in message, message


def test_a_half_imported_file_leaves_no_policy_behind(tmp_path, loaded):
    path = tmp_path / "half.py"
    path.write_text("from controller.theory.policies import Policy, register\n\n@register\nclass A(Policy):\n"
                    "    name = 'half-a'\n\nraise RuntimeError('boom')\n")
    with pytest.raises(policies.PolicyFileError, match="line 7: RuntimeError: boom"):
        loaded(path)
    assert "half-a" not in policies.POLICIES


def reference_fluid(jobs, offsets_ms, windows_ms=None, waits=lambda k: False, enforce=False, warmup=2,
                    iterations=40) -> dict[str, float]:
    """Each job's mean iteration (ms) in the fluid model as controller/theory/fluid.py's docstring
    states it, written apart from that module: compute ``T - c`` then a burst of ``c`` ms of link
    time; ``n`` bursts on the link each get ``1/n`` of it; burst ``k`` waits for its job's next
    window start (``shift + m·T``) if ``waits(k)`` and it is not at one; with ``enforce`` a burst
    moves only inside its windows ``[start, start + c)``. The mean runs from the end of burst
    ``warmup`` to the last end, once every job has ended ``warmup + iterations + 1`` bursts.
    ``jobs``: name -> (T, c); ``windows_ms``: name -> shift."""
    tol = 1e-6
    phase = dict.fromkeys(jobs, "compute")
    ready, left, bursts, ends, until = dict(offsets_ms), dict.fromkeys(jobs, 0.0), dict.fromkeys(jobs, 0), \
        {n: [] for n in jobs}, {}

    def window(n, t):
        """(start, end) of the window holding ``t`` or None, and the next window start (``t`` if at one)."""
        period, comm = jobs[n]
        start = windows_ms[n] + math.floor((t - windows_ms[n]) / period + tol) * period
        return ((start, start + comm) if t < start + comm - tol else None,
                start if abs(t - start) <= tol else start + period)

    t = min(ready.values())
    while min(len(e) for e in ends.values()) < warmup + iterations + 1:
        for n in jobs:  # what happens at t
            if phase[n] == "burst" and left[n] <= tol:
                ends[n].append(t)
                phase[n], ready[n] = "compute", t + jobs[n][0] - jobs[n][1]
            if phase[n] == "compute" and ready[n] <= t + tol:
                left[n], k = jobs[n][1], bursts[n]
                bursts[n] += 1
                if windows_ms is not None and waits(k) and abs(window(n, t)[1] - t) > tol:
                    phase[n], until[n] = "wait", window(n, t)[1]
                else:
                    phase[n] = "burst"
            elif phase[n] == "wait" and until[n] <= t + tol:
                phase[n] = "burst"
        sending = [n for n in jobs if phase[n] == "burst" and (not enforce or window(n, t)[0] is not None)]
        step = [ready[n] for n in jobs if phase[n] == "compute"] + [until[n] for n in jobs if phase[n] == "wait"]
        step += [t + left[n] * len(sending) for n in sending]
        if enforce:  # a gated burst's window closes, or its next one opens
            step += [window(n, t)[0][1] if window(n, t)[0] else window(n, t)[1] for n in jobs if phase[n] == "burst"]
        t_next = min(step)
        for n in sending:
            left[n] -= (t_next - t) / len(sending)
        t = t_next
    return {n: (e[-1] - e[warmup]) / (len(e) - 1 - warmup) for n, e in ends.items()}


def test_the_reference_fluid_model_on_cases_worked_by_hand():
    """Two jobs of T = 300, c = 100 starting together share every burst: 200 ms each, then 200 of
    compute, 400 ms an iteration; 100 ms apart they never meet: 300. Gated with both windows at 0,
    each burst gets half the link for its 100-ms window and finishes in the next: two windows, 600."""
    jobs = {"a": (300, 100), "b": (300, 100)}
    assert reference_fluid(jobs, {"a": 0, "b": 0}) == pytest.approx({"a": 400, "b": 400})
    assert reference_fluid(jobs, {"a": 0, "b": 100}) == pytest.approx({"a": 300, "b": 300})
    gated = reference_fluid(jobs, {"a": 0, "b": 0}, {"a": 0, "b": 0}, waits=lambda k: True, enforce=True)
    assert gated == pytest.approx({"a": 600, "b": 600})


def test_the_fluid_model_realigns_every_fourth_burst_without_pausing_bursts(loaded):
    loaded(EXAMPLE)
    sched = compute_schedule([JobTiming("a", 401, 150), JobTiming("b", 600, 200)])
    res = fluid.compare_policies(sched, ("none", "shift", "gate", "realign4"), iterations=40)
    ms = {p: {j: r.mean_iteration_ms for j, r in res[p].jobs.items()} for p in res}
    jobs, shifts = {"a": (401, 150), "b": (600, 200)}, sched.shifts_ms
    reference = {"none": reference_fluid(jobs, {"a": 0, "b": 0}),
                 "shift": reference_fluid(jobs, shifts),
                 "gate": reference_fluid(jobs, shifts, shifts, waits=lambda k: True, enforce=True),
                 "realign4": reference_fluid(jobs, shifts, shifts, waits=lambda k: k % 4 == 0)}
    for policy in ms:
        assert ms[policy] == pytest.approx(reference[policy], abs=1e-6), policy
    # gcd 1: shift = none; gate waits whole periods; realign4 is in between. Lab 4's figures, as this
    # reference gives them (exactly, in rational arithmetic, tests/labs/test_lab_model_figures.py:
    # 451 1/15 and 674.775, 601.04 and 1199.05, 501 4/15 and 749.325 ms)
    rounded = {p: {j: round(v, 1) for j, v in jobs_ms.items()} for p, jobs_ms in reference.items()}
    assert rounded["shift"] == rounded["none"] == {"a": 451.1, "b": 674.8}
    assert rounded["gate"] == {"a": 601.0, "b": 1199.0}
    assert rounded["realign4"] == {"a": 501.3, "b": 749.3}


def test_a_feasible_pair_keeps_its_solo_periods_under_realign4(loaded):
    loaded(EXAMPLE)
    sched = compute_schedule([JobTiming("a", 300, 100), JobTiming("b", 600, 150)])
    res = fluid.simulate_policy(sched, "realign4")
    assert {j: r.mean_iteration_ms for j, r in res.jobs.items()} == pytest.approx({"a": 300, "b": 600})


def test_the_scheduler_accepts_a_registered_policy_and_does_not_gate_it(loaded):
    loaded(EXAMPLE)
    core = SchedulerCore()
    flow = {"dpid": 1, "src_ip": "10.0.0.1", "dst_ip": "10.0.0.3", "tcp_src": 5201}
    core.add_job({"name": "a", "period_ms": 300, "comm_ms": 100, "workers": ["h1", "h3"], "flows": [flow]})
    core.add_job({"name": "b", "period_ms": 600, "comm_ms": 150, "workers": ["h2", "h4"],
                  "flows": [dict(flow, src_ip="10.0.0.2", dst_ip="10.0.0.4", tcp_src=5211)]})
    core.set_policy({"policy": "realign4"}, now_s=1000.0)
    assert not core.enforces_windows
    doc = core.schedule_doc()
    assert doc["policy"] == "realign4"
    # its offsets separate the bursts: gcd(300, 600) = 300, so b may start 100 to 300 - 150 ms after a
    offsets = {n: j["offset_ms"] for n, j in doc["jobs"].items()}
    assert 100 <= (offsets["b"] - offsets["a"]) % 300 <= 150, offsets
    core.set_policy({"policy": "gate"}, now_s=1000.0)
    assert core.enforces_windows
    with pytest.raises(ApiError, match="must be one of none, shift, gate, random, .*realign4"):
        core.set_policy({"policy": "realign5"}, now_s=1000.0)


class _Clock:
    def __init__(self):
        self.t_s = 1000.0

    def now(self):
        return self.t_s

    def sleep_until(self, t_s):
        self.t_s = max(self.t_s, t_s)


def test_the_job_driver_waits_for_its_window_every_fourth_iteration(loaded):
    loaded(EXAMPLE)
    clock, launches = _Clock(), []

    def transport(phase):  # every burst 40 ms: the job runs 10 ms fast per 200 ms period
        launches.append(clock.t_s)
        clock.t_s += 0.04
        return [TransferResult(t, launches[-1], clock.t_s, t.nbytes) for t in phase]

    workers = (Worker("h1", "10.0.0.1"), Worker("h3", "10.0.0.3"))
    job = JobSpec("a", 190.0, 40.0, workers, link_mbps=80.0)  # solo iteration 190 ms, window period 200
    plan = JobPlan("realign4", epoch_s=1001.0, offset_ms=50.0, period_ms=200.0, window_ms=40.0)
    JobDriver(job, plan, transport, lambda row: None, clock=clock).run(9)
    windows = [1001.05 + 0.2 * m for m in range(12)]
    on_window = [k for k, t in enumerate(launches) if min(abs(t - w) for w in windows) < 1e-9]
    assert on_window == [0, 4, 8]  # free-running (190 ms) in between, early each time
    assert launches[3] == pytest.approx(1001.05 + 3 * 0.19)


def test_a_scenario_names_its_policy_files_relative_to_itself(tmp_path, loaded):
    (tmp_path / "pol").mkdir()
    (tmp_path / "pol" / "mine.py").write_text(EXAMPLE.read_text())
    path = tmp_path / "s.yaml"
    path.write_text("name: s\npolicy_files: [pol/mine.py]\npolicies: [none, realign4]\n"
                    "jobs:\n  - {name: a, period_ms: 300, comm_ms: 100}\n  - {name: b, period_ms: 600, comm_ms: 150}\n")
    try:
        sc = spec.load(path)
        assert sc.policies == ("none", "realign4")
        assert sc.policy_files == (str((tmp_path / "pol" / "mine.py").resolve()),)
        path.write_text(path.read_text().replace("pol/mine.py", "pol/other.py"))
        with pytest.raises(InputError, match=r"s.yaml: policy_files\[0\]: .*other.py: no such policy file"):
            spec.load(path)
    finally:
        policies.os.environ.pop(policies.POLICY_FILES_ENV, None)


@pytest.mark.parametrize("command", [
    ["plan", "scenarios/classroom.yaml"],
    ["sweep", "--samples", "1"],
    ["run", "scenarios/classroom.yaml"],
])
@pytest.mark.parametrize("file_text, words", [
    (None, "no such policy file"),
    ("y = 2\n", "registers no policy"),
])
def test_every_command_refuses_a_bad_policy_file_with_exit_2(tmp_path, command, file_text, words):
    path = tmp_path / "bad.py"
    if file_text is not None:
        path.write_text(file_text)
    r = subprocess.run([SHIFTBED, *command, "--policy-file", str(path)], capture_output=True, text=True,
                       cwd=REPO, timeout=60)
    assert r.returncode == 2 and r.stdout == ""
    (line,) = r.stderr.strip().splitlines()
    assert line.startswith(f"shiftbed {command[0]}: --policy-file: {path}") and words in line, line


def test_plan_and_sweep_know_the_example_by_name():
    plan = subprocess.run([SHIFTBED, "plan", "scenarios/two-jobs-coprime.yaml", "--policy-file", str(EXAMPLE),
                           "--policies", "none,realign4", "--json"], capture_output=True, text=True, cwd=REPO,
                          timeout=60)
    assert plan.returncode == 0, plan.stderr
    assert '"realign4"' in plan.stdout
    sweep = subprocess.run([SHIFTBED, "sweep", "--jobs", "2", "--samples", "5", "--quantum-ms", "50",
                            "--policy", "realign4", "--policy-file", str(EXAMPLE), "--json"],
                           capture_output=True, text=True, cwd=REPO, timeout=60)
    assert sweep.returncode == 0, sweep.stderr
    assert '"policy_helps_fraction"' in sweep.stdout and '"policy": "realign4"' in sweep.stdout


def test_unknown_policy_after_loading_is_still_refused(loaded):
    loaded(EXAMPLE)
    with pytest.raises(policies.UnknownPolicy, match="did you mean 'realign4'"):
        policies.get_policy("realign44")
