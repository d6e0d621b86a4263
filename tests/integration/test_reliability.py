"""Reliability on the real fabric: interrupts, crashes and faults during `shiftbed run`, foreign
things left alone, `shiftbed clean`, and the live scheduler REST under fuzzing.

Everything is driven through the installed `shiftbed` command as a subprocess,
on real Mininet + Open vSwitch + Ryu + iperf3 + tcpdump. What a run created is
found the way cleanup finds it, from its run record in /run/shiftbed (PIDs with
start times, bridges, interfaces) plus the iperf3 pid files its drivers write
and the network namespaces of its hosts, watched while the run goes; nothing
here is found or killed by name.

The scenarios are small on purpose (1 spine, 2 leaves, 2 hosts each, 50 Mbit/s)
with `--policy none` and short durations. A run costs fabric ~3 s, then
calibration: each job alone, ~4 sizing rounds of ~7 s (measured: ~28 s a job),
then the policy, then teardown and the report (~5 s); calibration measures
again what the host disturbed (apps/hoststeal.py), so it can take longer. So most tests run one job;
the worker-fault test runs two, because there the other job must keep its
measurements.
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import requests
import rest_rules  # tests/rest_rules.py: the REST rules, shared with tests/unit/test_scheduler_api.py
from hypothesis import event, given, settings
from hypothesis import strategies as st

from apps import hoststeal
from topo import runrecord

pytestmark = pytest.mark.root

REPO = Path(__file__).resolve().parents[2]
SHIFTBED = str(Path(sys.executable).with_name("shiftbed"))
ONE_JOB = """\
name: rel
fabric: {spines: 1, leaves: 2, hosts_per_leaf: 2, host_link_mbps: 50, fabric_link_mbps: 50}
jobs:
  - {name: a, period_ms: 300, comm_ms: 100, workers: [h1, h3]}
"""
TWO_JOBS = ONE_JOB + """\
  - {name: b, period_ms: 600, comm_ms: 150, workers: [h2, h4]}
"""
# Measured here (2 cores, userspace datapath): after SIGINT/SIGTERM/SIGHUP the run
# stops its drivers (an iteration in flight, <= 0.6 s), tcpdump, the network
# (~2 s) and draws the partial report (~3 s): 5-9 s. A run must stop within
# seconds; 20 s leaves room for a loaded CI machine.
MAX_EXIT_AFTER_SIGNAL_S = 20.0
# Controller death is checked every 0.2 s; the drivers then finish the
# iteration in flight (period <= 0.6 s): no kept iteration may end later than this after the kill.
MAX_ITERATION_END_AFTER_CONTROLLER_DEATH_S = 1.5


# ---------------------------------------------------------------------------- machine state


def bridges() -> set[str]:
    out = subprocess.run(["ovs-vsctl", "list-br"], capture_output=True, text=True, check=True).stdout
    return set(out.split())


def links() -> set[str]:
    """Interface names in the root network namespace."""
    return {p.name for p in Path("/sys/class/net").iterdir()}


def records() -> set[str]:
    return {p.name for p in runrecord.RUN_DIR.glob("*.json")}


def netns_of(pid: int) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/ns/net")
    except OSError:
        return None


def processes_in(namespaces: set[str]) -> list[int]:
    """PIDs of every process whose network namespace is one of ``namespaces``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and netns_of(int(entry.name)) in namespaces:
            found.append(int(entry.name))
    return found


def children(pid: int) -> list[int]:
    """Child PIDs (empty when the process is gone: processes come and go while we look)."""
    out = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for task in tasks:
        try:
            out += [int(p) for p in Path(f"/proc/{pid}/task/{task}/children").read_text().split()]
        except (OSError, ValueError):
            pass
    return out


def comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return "gone"


class Machine:
    """Bridges, root-namespace interfaces and run records before a test (to compare after)."""

    def __init__(self):
        self.bridges, self.links, self.records = bridges(), links(), records()


# ---------------------------------------------------------------------------- a run under watch


class WatchedRun:
    """`shiftbed run` as a subprocess, with everything it creates collected while it runs.

    A thread polls (every 0.1 s) the run's record (found by its owner PID),
    keeping every process it ever lists, the network namespaces of its Mininet
    hosts, the iperf3 server PIDs in its drivers' pid files and the
    processes descended from the run.
    """

    def __init__(self, scenario: Path, out: Path, *args: str, new_session: bool = False):
        self.out = out
        self.stderr_path = out.parent / f"{out.name}.stderr"
        self.stderr_file = open(self.stderr_path, "w")
        self.proc = subprocess.Popen([SHIFTBED, "run", str(scenario), "--out", str(out), "--json", *args],
                                     stdout=subprocess.PIPE, stderr=self.stderr_file, text=True, cwd=REPO,
                                     start_new_session=new_session)
        self.record: dict | None = None
        self.refs: dict[tuple[int, int], str] = {}  # (pid, start ticks) -> label
        self.namespaces: set[str] = set()
        self.root_ns = netns_of(os.getpid())
        self.watch_errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    # -- watching
    def _watch(self):
        while not self._stop.is_set():
            try:
                self._snapshot()
            except Exception as exc:  # noqa: BLE001  (a race with an exiting process: look again)
                self.watch_errors.append(repr(exc))
            self._stop.wait(0.1)

    def _snapshot(self):
        for path in runrecord.RUN_DIR.glob("*.json"):
            try:
                doc = json.loads(path.read_text())
            except (OSError, ValueError):
                continue
            if doc.get("owner_pid") != self.proc.pid:
                continue
            self.record = doc
            for p in doc["processes"]:
                self.refs[(p["pid"], p["start_ticks"])] = p["label"]
                if p["label"].startswith("node:h"):
                    ns = netns_of(p["pid"])
                    if ns and ns != self.root_ns:
                        self.namespaces.add(ns)
        for pidfile in self.out.glob("*/.*.partial/raw/*/iperf3-*.pid"):
            try:
                pid = int(pidfile.read_text().strip().strip("\x00"))
            except (OSError, ValueError):
                continue
            self._remember(pid, "iperf3-server")
        pending = [self.proc.pid]
        while pending:
            for child in children(pending.pop()):
                self._remember(child, f"descendant:{comm(child)}")
                pending.append(child)

    def _remember(self, pid: int, label: str):
        ticks = runrecord.process_start_ticks(pid)
        if ticks is not None:
            self.refs.setdefault((pid, ticks), label)

    # -- reading the run
    def partial_dir(self) -> Path | None:
        found = sorted(self.out.glob("*/.*.partial"))
        return found[0] if found else None

    def rows(self, policy: str, job: str = "a") -> int:
        partial = self.partial_dir()
        if partial is None:
            return 0
        try:
            return max(0, len((partial / "raw" / policy / f"{job}.csv").read_text().splitlines()) - 1)
        except OSError:
            return 0

    def wait_rows(self, policy: str, n: int = 2, timeout_s: float = 300.0):
        """Until job a has ``n`` rows (iterations x workers) in the policy's measurement.

        A deadline, not a measurement: calibration takes ~28 s a job, but measures a job's
        final solo run again when its period is off (once) and any solo run the host
        disturbed (up to twice, 5 s apart): one two-job run here took more than 90 s."""
        deadline = time.monotonic() + timeout_s
        while self.rows(policy) < n:
            assert self.proc.poll() is None, f"run ended early:\n{self.stderr()[-3000:]}"
            if time.monotonic() >= deadline:
                busy = hoststeal.measured_again_pcts(self.stderr())
                if busy:  # the deadline went on measuring what the host disturbed
                    raise hoststeal.HostBusy(f"the run's measurements before {policy}", busy)
                raise AssertionError(f"no {policy} rows after {timeout_s} s:\n{self.stderr()[-3000:]}")
            time.sleep(0.05)
        self._snapshot()

    def pid_of(self, label: str) -> int:
        """The live process the record lists under ``label`` (calibration's drivers have ended)."""
        self._snapshot()
        alive = [p["pid"] for p in self.record["processes"]
                 if p["label"] == label and runrecord.ProcessRef(**p).is_alive()]
        assert len(alive) == 1, (label, self.record["processes"])
        return alive[0]

    def wait(self, timeout_s: float) -> tuple[int, float]:
        """Exit status and seconds it took from now."""
        started = time.monotonic()
        self.proc.wait(timeout=timeout_s)
        took = time.monotonic() - started
        self._stop.set()
        self._thread.join()
        self.stdout = self.proc.stdout.read()
        self.stderr_file.close()
        return self.proc.returncode, took

    def stderr(self) -> str:
        if not self.stderr_file.closed:
            self.stderr_file.flush()
        return self.stderr_path.read_text(errors="replace")

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self._stop.set()

    # -- after the run
    def leftovers(self, before: Machine) -> dict:
        """What this run created that still exists (empty lists when it cleaned up)."""
        alive = [f"{label} (pid {pid})" for (pid, ticks), label in self.refs.items()
                 if runrecord.ProcessRef(pid, ticks, label).is_alive()]
        return {"processes": alive,
                "in_host_namespaces": processes_in(self.namespaces),
                "bridges": sorted(bridges() - before.bridges),
                "links": sorted(links() - before.links),
                "records": sorted(records() - before.records)}

    def results_dir(self) -> Path:
        """The one results folder (renamed, not .partial)."""
        assert not list(self.out.glob("*/.*.partial")), "results folder left half-written"
        folders = [p for p in self.out.glob("*/*") if p.is_dir()]
        assert len(folders) == 1, folders
        return folders[0]


def nothing_left(run: WatchedRun, before: Machine) -> None:
    left = run.leftovers(before)
    assert not any(left.values()), left
    # the test is only meaningful if the run had created things
    assert run.record and run.record["bridges"] and run.namespaces, run.record
    labels = set(run.refs.values())
    for needed in ("controller", "tcpdump", "dltjob:a", "iperf3-server"):
        assert needed in labels, (needed, labels)


def read_summary(folder: Path) -> dict:
    return json.loads((folder / "summary.json").read_text())


def iteration_rows(folder: Path, policy: str) -> int:
    import pandas as pd

    path = folder / "iterations.csv"
    if not path.exists():
        return 0
    table = pd.read_csv(path)
    return int((table["policy"] == policy).sum())


@pytest.fixture
def scenario(tmp_path) -> Path:
    path = tmp_path / "rel.yaml"
    path.write_text(ONE_JOB)
    return path


@pytest.fixture
def two_jobs(tmp_path) -> Path:
    path = tmp_path / "rel2.yaml"
    path.write_text(TWO_JOBS)
    return path


@pytest.fixture
def watched(tmp_path):
    started = []

    def start(scenario, *args, new_session=False):
        run = WatchedRun(scenario, tmp_path / f"out{len(started)}", *args, new_session=new_session)
        started.append(run)
        return run

    yield start
    for run in started:  # a failed test must not leave a run going
        run.kill()


# ---------------------------------------------------------------------------- interrupts


@pytest.mark.parametrize("how", ["SIGINT to the process group (Ctrl-C)", "SIGTERM to the run's PID",
                                 "SIGHUP to the run's PID (a dropped ssh session)"])
def test_interrupt_mid_policy_keeps_measurements_and_leaves_nothing(scenario, watched, one_job_calibration, how):
    before = Machine()
    run = watched(scenario, *one_job_calibration, "--policy", "none", "--duration", "10", new_session=True)
    run.wait_rows("none", n=4)  # the policy's measurement has started: two iterations of job a
    if how.startswith("SIGINT"):
        os.killpg(run.proc.pid, signal.SIGINT)
    else:
        os.kill(run.proc.pid, signal.SIGHUP if how.startswith("SIGHUP") else signal.SIGTERM)
    code, took = run.wait(timeout_s=120)
    print(f"{how}: exit {code} {took:.1f} s after the signal")
    stderr = run.stderr()
    assert code == 130, stderr[-3000:]
    assert took <= MAX_EXIT_AFTER_SIGNAL_S, f"exited {took:.1f} s after the signal"
    assert "Traceback" not in stderr, stderr[-3000:]
    assert "interrupted; partial results kept in" in stderr.strip().splitlines()[-1]
    folder = run.results_dir()
    summary = read_summary(folder)
    assert summary["complete"] is False and "interrupted" in summary["incomplete_reason"]
    assert iteration_rows(folder, "none") >= 4
    assert (folder / "raw" / "none" / "a.csv").exists()
    nothing_left(run, before)


def test_a_disk_that_fills_mid_run_stops_it_keeping_what_was_measured(scenario, watched, one_job_calibration, tmp_path):
    """A small tmpfs as ``--out``, filled by someone else while a policy runs: the run stops within
    seconds, says so in one line, and its folder holds the summary, the report and the rows measured."""
    out = tmp_path / "out0"  # the first run's --out (the `watched` fixture's naming)
    out.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "shiftbed-test", str(out)], check=True)
    try:
        before = Machine()
        run = watched(scenario, *one_job_calibration, "--policy", "none", "--duration", "10")
        run.wait_rows("none", n=4)
        free = shutil.disk_usage(out).free
        filler = out / "someone-elses-file"
        subprocess.run(["fallocate", "-l", str(free - 2**20), str(filler)], check=True)  # 1 MB left
        code, took = run.wait(timeout_s=120)
        stderr = run.stderr()
        assert code == 1, stderr[-3000:]
        assert "Traceback" not in stderr, stderr[-3000:]
        last = stderr.strip().splitlines()[-1]
        assert "disk holding the results is full" in last and "partial results kept in" in last, last
        folder = run.results_dir()
        summary = read_summary(folder)
        assert summary["complete"] is False and "full" in summary["incomplete_reason"], summary
        assert (folder / "report.md").exists() and not (folder / ".reserve").exists()
        assert iteration_rows(folder, "none") >= 4
        assert filler.exists()  # what was not the run's stays
        nothing_left(run, before)
    finally:
        subprocess.run(["umount", "-l", str(out)], check=False)


def test_foreign_bridge_and_process_survive_run_and_clean(scenario, watched, one_job_calibration):
    foreign_bridge = "foreignbr0"
    assert foreign_bridge not in bridges()
    subprocess.run(["ovs-vsctl", "add-br", foreign_bridge, "--", "set", "bridge", foreign_bridge,
                    "datapath_type=netdev"], check=True)
    sleeper = subprocess.Popen(["sleep", "600"], start_new_session=True)
    try:
        before = Machine()
        run = watched(scenario, *one_job_calibration, "--policy", "none", "--duration", "3")
        code, _ = run.wait(timeout_s=180)
        assert code == 0, run.stderr()[-3000:]
        doc = json.loads(run.stdout)
        assert doc["complete"] is True and doc["policies"]["none"]["jobs"]["a"]["iterations"] >= 3
        clean = subprocess.run([SHIFTBED, "clean", "--json"], capture_output=True, text=True, cwd=REPO, timeout=60)
        assert clean.returncode == 0, clean.stderr
        assert foreign_bridge in bridges()
        assert sleeper.poll() is None, "shiftbed ended a process it did not start"
        nothing_left(run, before)
    finally:
        sleeper.kill()
        sleeper.wait()
        subprocess.run(["ovs-vsctl", "--if-exists", "del-br", foreign_bridge], check=True)


def test_clean_after_a_sigkilled_run_removes_exactly_what_it_left(scenario, watched, one_job_calibration):
    before = Machine()
    run = watched(scenario, *one_job_calibration, "--policy", "none", "--duration", "10")
    run.wait_rows("none", n=2)
    run_id = run.record["run_id"]
    os.kill(run.proc.pid, signal.SIGKILL)
    run.wait(timeout_s=10)
    left = run.leftovers(before)
    assert left["bridges"] and left["processes"] and left["records"], left  # the crash left them
    first = subprocess.run([SHIFTBED, "clean", "--json"], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert first.returncode == 0, first.stderr
    cleaned = json.loads(first.stdout)["cleaned"]
    assert [c["run_id"] for c in cleaned] == [run_id]
    assert set(cleaned[0]["bridges"]) == set(left["bridges"])
    nothing_left(run, before)
    folder = run.results_dir()  # clean finished the run's half-written results folder
    assert cleaned[0]["results"] == str(folder)
    summary = read_summary(folder)
    assert summary["complete"] is False and "killed" in summary["incomplete_reason"]
    assert (folder / "raw" / "none" / "a.csv").read_text().count("\n") >= 3  # the measurements so far
    second = subprocess.run([SHIFTBED, "clean"], capture_output=True, text=True, cwd=REPO, timeout=60)
    assert second.returncode == 0 and second.stderr.strip() == "nothing to clean", second.stderr


# ---------------------------------------------------------------------------- faults


def test_controller_killed_mid_run_stops_cleanly_and_names_it(scenario, watched, one_job_calibration):
    before = Machine()
    run = watched(scenario, *one_job_calibration, "--policy", "none", "--duration", "10")
    run.wait_rows("none", n=2)
    controller = run.pid_of("controller")
    os.kill(controller, signal.SIGKILL)
    killed_at = time.time()
    code, took = run.wait(timeout_s=120)
    print(f"controller killed: exit {code} {took:.1f} s later")
    stderr = run.stderr()
    assert code == 1, stderr[-3000:]
    last = stderr.strip().splitlines()[-1]
    assert last.startswith("shiftbed run: the controller") and f"pid {controller}" in last and "died" in last, last
    assert "Traceback" not in stderr, stderr[-3000:]
    assert took <= MAX_EXIT_AFTER_SIGNAL_S
    folder = run.results_dir()
    summary = read_summary(folder)
    assert summary["complete"] is False and "controller" in summary["incomplete_reason"]
    assert (folder / "controller.log").stat().st_size > 0
    import pandas as pd

    kept = pd.read_csv(folder / "iterations.csv")
    kept = kept[kept["policy"] == "none"]
    assert len(kept) >= 2
    late = kept["end"].max() - killed_at
    print(f"last kept iteration ended {late:.2f} s after the controller died")
    assert late <= MAX_ITERATION_END_AFTER_CONTROLLER_DEATH_S, f"jobs ran on {late:.2f} s after the controller died"
    nothing_left(run, before)


def _kill_an_iperf3_client(run: WatchedRun, driver_pid: int, hosts: dict[str, str], timeout_s: float = 10.0):
    """SIGKILL one iperf3 client the driver has in flight; returns the host it ran on."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for child in children(driver_pid):
            if comm(child) == "iperf3" and state(child) in ("R", "S", "D"):
                host = hosts.get(netns_of(child))
                try:
                    os.kill(child, signal.SIGKILL)
                except ProcessLookupError:
                    continue
                return host
        time.sleep(0.002)
    raise AssertionError("no iperf3 client of the driver seen in flight")


def test_iperf3_client_killed_mid_policy_names_job_and_worker_and_the_next_policy_runs(two_jobs, watched):
    before = Machine()
    run = watched(two_jobs, "--policy", "none,shift", "--duration", "4")
    run.wait_rows("none", n=2)
    hosts = {netns_of(p["pid"]): p["label"].split(":", 1)[1]
             for p in run.record["processes"] if p["label"].startswith("node:h")}
    driver = run.pid_of("dltjob:a")
    victim_host = None
    for _attempt in range(5):  # a client that had just finished is not a fault: try again
        victim_host = _kill_an_iperf3_client(run, driver, hosts)
        time.sleep(1.0)
        if "iperf3 client on" in (run.partial_dir() / "raw" / "none" / "a.csv").read_text():
            break
    assert victim_host in ("h1", "h3"), victim_host
    code, _ = run.wait(timeout_s=180)
    stderr = run.stderr()
    assert code == 1, stderr[-3000:]
    assert "Traceback" not in stderr, stderr[-3000:]
    named = [line for line in stderr.splitlines() if line.startswith("shiftbed run: policy none stopped early")]
    assert len(named) == 1 and "job a" in named[0] and f"worker {victim_host}" in named[0], stderr[-2000:]
    doc = json.loads(run.stdout)
    assert [(g["policy"], g["job"], g["worker"]) for g in doc["gaps"]] == [("none", "a", victim_host)]
    assert set(doc["policies"]) == {"shift"} and doc["policies"]["shift"]["jobs"]["b"]["iterations"] >= 3
    folder = run.results_dir()
    summary = read_summary(folder)
    assert summary["complete"] is False and "gap" in summary["incomplete_reason"]
    import pandas as pd

    kept = pd.read_csv(folder / "iterations.csv")
    assert set(kept[kept["policy"] == "none"]["job"]) == {"a", "b"}  # the measured iterations of none stay
    assert (kept["policy"] == "shift").sum() >= 2 * 2 * 6  # 4 s of both jobs
    nothing_left(run, before)


# ---------------------------------------------------------------------------- the model fails, the measurement stays


def test_a_policy_the_model_cannot_simulate_keeps_every_measurement_and_exits_4(scenario, watched, one_job_calibration, tmp_path):
    """A real run of `none` and `unmodelled` (tests/policies/unmodelled.py: `none` on the fabric, its
    bursts said to share the link by a rule the fluid model has not got): the model fails for one
    policy after both were measured on the wire."""
    policy_file = tmp_path / "unmodelled.py"
    shutil.copyfile(REPO / "tests" / "policies" / "unmodelled.py", policy_file)
    policy_file.chmod(0o644)
    run = watched(scenario, *one_job_calibration, "--policy", "none,unmodelled", "--duration", "4", "--policy-file", str(policy_file))
    code, _ = run.wait(timeout_s=300)
    stderr = run.stderr()
    folder = run.results_dir()
    summary = read_summary(folder)
    # every policy measured and kept, fidelity judged, only the prediction missing
    assert summary["complete"] is True and summary["gaps"] == [], stderr[-3000:]
    assert code == (4 if summary["fidelity_ok"] else 3), stderr[-3000:]
    assert set(summary["policies"]) == {"none", "unmodelled"}
    mine, none = summary["policies"]["unmodelled"], summary["policies"]["none"]
    assert mine["prediction_unavailable"].startswith("ValueError: sharing must be one of"), mine
    assert "by-queue-age" in mine["prediction_unavailable"] and "\n" not in mine["prediction_unavailable"]
    a = mine["jobs"]["a"]
    assert a["iterations"] >= 3 and a["mean_iteration_ms"] > 0 and a["solo_iteration_ms"] > 0
    assert a["predicted_iteration_ms"] is None and a["error_pct"] is None
    assert mine["throughput_change_vs_none_pct"] is not None  # measured against none as ever
    assert "prediction_unavailable" not in none and none["jobs"]["a"]["predicted_iteration_ms"] > 0
    assert summary["fidelity"]["solo"]["a"]["iteration_ms"] > 0
    assert iteration_rows(folder, "unmodelled") >= 2 * 3 and iteration_rows(folder, "none") >= 2 * 3
    import pandas as pd

    assert (pd.read_csv(folder / "link_bandwidth.csv")["policy"] == "unmodelled").any()
    # the terminal: one line each, no traceback; the traceback in the folder
    assert "Traceback" not in stderr, stderr[-3000:]
    said = [line for line in stderr.splitlines() if line.startswith("shiftbed run: no prediction for unmodelled")]
    assert len(said) == 1 and "its measurement is kept" in said[0], stderr[-3000:]
    assert said[0].endswith(f"the model's traceback is in {folder / 'prediction.log'}"), said
    if code == 4:
        assert f"shiftbed run: results kept, prediction missing (exit 4); every figure is kept in {folder}" in stderr
    assert "Traceback" in (folder / "prediction.log").read_text()
    doc = json.loads(run.stdout)
    assert doc["policies"]["unmodelled"]["prediction_unavailable"] == mine["prediction_unavailable"]
    # the report shows the gap in words where the prediction would stand
    report = (folder / "report.md").read_text()
    assert "| unmodelled | a |" in report and "unavailable (the model failed)" in report
    assert "No prediction for `unmodelled`: the model could not simulate it (ValueError: sharing must be" in report
    # a folder whose summary kept no policy and no solo figures is predicted again from its raw runs alone:
    # the same measurement, and none's prediction as the run made it
    bare = tmp_path / "bare"
    shutil.copytree(folder, bare)
    stripped = {**summary, "policies": {}, "fidelity": {**summary["fidelity"], "solo": {}}}
    (bare / "summary.json").write_text(json.dumps(stripped))
    again = subprocess.run([SHIFTBED, "report", "--repredict", str(bare), "--json", "--policy-file", str(policy_file)],
                           capture_output=True, text=True, timeout=300, cwd=REPO)
    assert again.returncode == 0, again.stderr
    redone = json.loads(again.stdout)
    rows = {(r["policy"], r["job"]): r for r in redone["jobs"]}
    assert set(rows) == {("none", "a")}, redone
    assert rows[("none", "a")]["measured_ms"] == pytest.approx(none["jobs"]["a"]["mean_iteration_ms"], rel=1e-9)
    assert rows[("none", "a")]["prediction_ms"] == pytest.approx(none["jobs"]["a"]["predicted_iteration_ms"],
                                                                 rel=1e-9)
    assert any(n.startswith("unmodelled: no prediction") for n in redone["notes"]), redone["notes"]
    assert any("kept no policy" in n for n in redone["notes"]) and any("no solo figures" in n for n in redone["notes"])


# ---------------------------------------------------------------------------- environment


def test_missing_open_vswitch_is_one_line_with_the_fix_and_nothing_is_created(scenario, tmp_path):
    """OVS cannot be stopped on a shared machine: hide its tools instead (PATH without ovs-vsctl)."""
    before = Machine()
    bare = tmp_path / "bin"
    bare.mkdir()
    out = tmp_path / "out"
    done = subprocess.run([SHIFTBED, "run", str(scenario), "--policy", "none", "--out", str(out)],
                          capture_output=True, text=True, cwd=REPO, timeout=60, env={**os.environ, "PATH": str(bare)})
    assert done.returncode == 1, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Open vSwitch" in lines[0] and "make install" in lines[0], done.stderr
    assert not out.exists()
    assert bridges() == before.bridges and records() == before.records


# ---------------------------------------------------------------------------- REST fuzzing

@pytest.fixture(scope="module")
def controller():
    from controller.process import FabricController
    from topo.fabric import Fabric
    from topo.wiring import FabricParams

    with Fabric(FabricParams(spines=1, leaves=2, hosts_per_leaf=1),
                FabricController(apps=("controller.scheduler_app",))) as fabric:
        yield fabric


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | rest_rules.HUGE_INTEGERS | st.floats(allow_nan=True)
    | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=12)
JOB_KEYS = st.sampled_from(["name", "period_ms", "comm_ms", "workers", "flows", "perod_ms", ""])
POLICY_KEYS = st.sampled_from(["policy", "epoch_s", "start_in_s", "seed", "mode", "floor_kbps", "guard_ms",
                               "quantum_ms", "toggle", "advance_ms", "colour"])
# h1 (10.0.0.1, on leaf1, dpid 0x101) sends to h2 (10.0.0.2): a real flow of this fabric, idle
FZ_JOB = rest_rules.GOOD_JOB
FZ_TIMES = {FZ_JOB["name"]: (FZ_JOB["period_ms"], FZ_JOB["comm_ms"])}
EPOCH_SLACK_S = 0.001


class TestRestFuzz:
    """Fuzzed bodies at the live scheduler: each answer is the status the rules give
    (``tests/rest_rules.py``, written apart from the code), a refusal is one JSON line and changes
    nothing, an accepted job or policy shows in ``GET /shiftbed/jobs``, ``/schedule`` and
    ``/status`` as the rules say, and the controller keeps serving with no traceback in its log.

    The bodies include the edges (``rest_rules.job_edges``, ``policy_edges``): JSON nested past
    the parser's recursion limit, integers beyond any float, and a gate whose window is not
    shorter than the job's period, each refused with a 400 before anything changes.
    """

    @staticmethod
    def _url(fabric, path: str) -> str:
        return fabric.controller.rest_url + path

    def _post(self, fabric, path, body: bytes):
        return requests.post(self._url(fabric, path), data=body, timeout=5,
                             headers={"Content-Type": "application/json"})

    def _get(self, fabric, path) -> dict:
        answer = requests.get(self._url(fabric, path), timeout=5)
        assert answer.status_code == 200, (path, answer.status_code, answer.text[:300])
        return answer.json()

    @staticmethod
    def _assert_refused(answer, expected: rest_rules.Verdict):
        assert answer.status_code == expected.status, (answer.status_code, expected, answer.text[:300])
        doc = answer.json()
        assert isinstance(doc.get("error"), str) and doc["error"] and "\n" not in doc["error"], doc
        assert doc.get("status") == expected.status, doc

    def _assert_job_registered(self, fabric, stored: dict):
        """The job as the rules say it is stored, in every view of the scheduler."""
        name = stored["name"]
        assert self._get(fabric, "/shiftbed/jobs")["jobs"] == [stored]
        schedule = self._get(fabric, "/shiftbed/schedule")
        assert sorted(schedule["jobs"]) == [name] and schedule["policy"] is None, schedule
        planned = schedule["jobs"][name]
        assert (planned["period_ms"], planned["comm_ms"], planned["workers"]) == \
            (stored["period_ms"], stored["comm_ms"], stored["workers"]), planned
        assert schedule["quantum_ms"] == rest_rules.DEFAULT_QUANTUM_MS, schedule
        assert self._get(fabric, "/shiftbed/status")["jobs"] == [name]

    def _assert_no_job(self, fabric):
        assert self._get(fabric, "/shiftbed/jobs")["jobs"] == []
        assert self._get(fabric, "/shiftbed/schedule")["jobs"] == {}

    @settings(max_examples=100, deadline=None)
    @given(data=st.data())
    def test_post_jobs(self, controller, data):
        kind = data.draw(st.sampled_from(["raw", "value", "replaced", "edge", "mutated", "mutated", "mutated"]))
        if kind == "raw":
            body = data.draw(st.binary(max_size=200))
        elif kind == "edge":  # nested too deep, or a number beyond any float
            body = data.draw(rest_rules.job_edges())
        elif kind == "value":
            body = json.dumps(data.draw(JSON_VALUES)).encode()
        elif kind == "replaced":  # fields of a good job replaced by arbitrary JSON
            doc = {**FZ_JOB, **data.draw(st.dictionaries(JOB_KEYS, JSON_VALUES, min_size=1, max_size=3))}
            body = json.dumps(doc).encode()
        else:  # a good job with fields set to alternatives, mostly valid ones
            body = data.draw(rest_rules.encoded(rest_rules.job_docs()))
        expected = rest_rules.job_verdict(body)
        event(f"POST /jobs ({kind}): {expected.status or 'accepted'}")
        answer = self._post(controller, "/shiftbed/jobs", body)
        if expected.status is not None:
            self._assert_refused(answer, expected)
            self._assert_no_job(controller)
            return
        assert answer.status_code == 201, answer.text[:300]
        name = expected.stored["name"]
        try:
            assert answer.json()["job"] == expected.stored, answer.text[:300]
            self._assert_job_registered(controller, expected.stored)
        finally:
            removed = requests.delete(self._url(controller, f"/shiftbed/jobs/{name}"), timeout=5)
        assert removed.status_code == 200 and removed.json()["removed"] == name, removed.text[:300]
        self._assert_no_job(controller)

    @settings(max_examples=100, deadline=None)
    @given(data=st.data())
    def test_post_policy_without_jobs(self, controller, data):
        kind = data.draw(st.sampled_from(["value", "replaced", "edge", "mutated"]))
        if kind == "value":
            body = json.dumps(data.draw(JSON_VALUES)).encode()
        elif kind == "edge":
            body = data.draw(rest_rules.policy_edges(time.time(), exact_bounds=False))
        elif kind == "replaced":
            doc = {"policy": "gate", "start_in_s": 1.0}
            doc.update(data.draw(st.dictionaries(POLICY_KEYS, JSON_VALUES, min_size=1, max_size=3)))
            body = json.dumps(doc).encode()
        else:
            body = data.draw(rest_rules.encoded(rest_rules.policy_docs(time.time(), exact_bounds=False)))
        expected = rest_rules.policy_verdict(body, {}, now_s=time.time())
        assert expected.status is not None  # no job is registered: even a valid policy is refused (409)
        self._assert_refused(self._post(controller, "/shiftbed/policy", body), expected)
        assert self._get(controller, "/shiftbed/schedule")["policy"] is None

    def test_post_policy_with_a_job(self, controller):
        """Policies at a scheduler with one idle job: an accepted one shows in ``/schedule`` and
        ``/status``; a ``gate`` starts the gate (rules with the gate's cookie for a flow that
        carries no traffic here), stopped again before the next body."""
        answer = self._post(controller, "/shiftbed/jobs", json.dumps(FZ_JOB).encode())
        assert answer.status_code == 201, answer.text[:300]
        try:
            self._fuzz_policies(controller)
        finally:
            requests.post(self._url(controller, "/shiftbed/stop"), timeout=5)
            requests.delete(self._url(controller, f"/shiftbed/jobs/{FZ_JOB['name']}"), timeout=5)
        self._assert_no_job(controller)

    def _fuzz_policies(self, fabric):
        seen = []

        @settings(max_examples=100, deadline=None)
        @given(data=st.data())
        def post_policy(data):
            sent_s = time.time()  # the epochs drawn stay >= 300 s away from the bounds around it
            kind = data.draw(st.sampled_from(["value", "edge", "mutated", "mutated", "mutated"]))
            if kind == "mutated":
                body = data.draw(rest_rules.encoded(rest_rules.policy_docs(sent_s, exact_bounds=False)))
            elif kind == "edge":  # nested too deep, a number beyond any float, a gate window too long
                body = data.draw(rest_rules.policy_edges(sent_s, exact_bounds=False))
            else:
                body = json.dumps(data.draw(JSON_VALUES)).encode()
            expected = rest_rules.policy_verdict(body, FZ_TIMES, now_s=sent_s)
            before = self._get(fabric, "/shiftbed/schedule")
            answer = self._post(fabric, "/shiftbed/policy", body)
            answered_s = time.time()
            seen.append((kind, expected.status))
            event(f"POST /policy with a job ({kind}): {expected.status or 'accepted'}")
            if expected.status is not None:
                self._assert_refused(answer, expected)
                assert self._get(fabric, "/shiftbed/schedule") == before  # nothing changed
                assert self._get(fabric, "/shiftbed/status")["gating"] is False
                return
            try:
                assert answer.status_code == 200, answer.text[:300]
                self._assert_policy_set(fabric, answer.json(), expected.stored, sent_s, answered_s)
            finally:
                stopped = requests.post(self._url(fabric, "/shiftbed/stop"), timeout=5)
            assert stopped.status_code == 200 and stopped.json()["gating"] is False, stopped.text[:300]

        post_policy()
        statuses = {status for _kind, status in seen}
        assert None in statuses and 400 in statuses, seen  # both accepted and refused policies were sent
        assert ("edge", 400) in seen, seen

    def _assert_policy_set(self, fabric, schedule: dict, want: dict, sent_s: float, answered_s: float):
        """The answer (the new ``/schedule``) and ``/status`` after an accepted policy."""
        assert schedule == self._get(fabric, "/shiftbed/schedule")
        assert (schedule["policy"], schedule["mode"], schedule["quantum_ms"]) == \
            (want["policy"], want["mode"], want["quantum_ms"]), schedule
        if want["start_in_s"] is None:
            assert schedule["epoch_s"] == want["epoch_s"], schedule
        else:  # the controller's clock when it took the request, plus start_in_s
            assert sent_s + want["start_in_s"] - EPOCH_SLACK_S <= schedule["epoch_s"] \
                <= answered_s + want["start_in_s"] + EPOCH_SLACK_S, (schedule, sent_s, answered_s)
        planned = schedule["jobs"][FZ_JOB["name"]]
        period_ms, comm_ms = FZ_TIMES[FZ_JOB["name"]]
        assert planned["window_ms"] == comm_ms + want["guard_ms"], planned
        assert rest_rules.expected_offset_ms(want["policy"], period_ms, planned["shift_ms"],
                                             planned["offset_ms"], want["quantum_ms"]), planned
        status = self._get(fabric, "/shiftbed/status")
        assert status["policy"] == want["policy"] and status["gating"] is want["enforces_windows"], status

    def test_still_serving_after_fuzzing(self, controller):
        assert controller.controller.alive()
        answer = requests.get(controller.controller.rest_url + "/shiftbed/schedule", timeout=5)
        assert answer.status_code == 200 and answer.json()["jobs"] == {}, answer.text[:300]
        status = requests.get(controller.controller.rest_url + "/shiftbed/status", timeout=5).json()
        assert status["jobs"] == [] and status["gating"] is False, status
        log = Path(controller.controller.log_path).read_text(errors="replace")
        assert "Traceback" not in log and "internal error" not in log, log[-2000:]

    def test_rest_listens_on_loopback_only(self, controller):
        port = controller.controller.wsapi_port
        listening = []
        for table in ("/proc/net/tcp", "/proc/net/tcp6"):
            for line in Path(table).read_text().splitlines()[1:]:
                local, st = line.split()[1], line.split()[3]
                if st == "0A" and int(local.rsplit(":", 1)[1], 16) == port:
                    listening.append(local.rsplit(":", 1)[0])
        assert listening == ["0100007F"], listening  # 127.0.0.1, nothing else
