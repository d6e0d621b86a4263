"""`shiftbed run` refuses bad input before it builds or starts anything.

Each case drives the installed command as a subprocess: exit status 2, at most
three lines on stderr naming the file/flag and what is wrong, no traceback,
nothing on stdout, no results folder; as root also no run record of that process in
/run/shiftbed and no OVS bridge tagged with one. The scenario-file classes themselves are
covered case by case in test_spec.py (through `shiftbed plan`); here they go
through `run`, which adds its own checks (a fabric, two workers per job,
command-line values, the machine's capacity).
"""

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from scenarios.errors import EnvironmentProblem

SHIFTBED = str(Path(sys.executable).with_name("shiftbed"))
GOOD = """\
name: rel
fabric: {spines: 1, leaves: 2, hosts_per_leaf: 2, host_link_mbps: 50, fabric_link_mbps: 50}
jobs:
  - {name: a, period_ms: 300, comm_ms: 100, workers: [h1, h3]}
  - {name: b, period_ms: 600, comm_ms: 150, workers: [h2, h4]}
"""
THREE_LEAVES = """\
name: three
fabric: {spines: 2, leaves: 3, hosts_per_leaf: 2, host_link_mbps: 40, fabric_link_mbps: 40}
jobs:
  - {name: a, period_ms: 250, comm_ms: 60, workers: [h1, h3]}
  - {name: b, period_ms: 500, comm_ms: 130, workers: [h2, h5]}
  - {name: c, period_ms: 1000, comm_ms: 50, workers: [h4, h6]}
"""
RUN_DIR = Path(os.environ.get("SHIFTBED_RUN_DIR", "/run/shiftbed"))


def built_by(pid: int) -> list[str]:
    """Run records owned by ``pid`` and OVS bridges tagged with their runs (root only; else empty).

    Attributed to the process, not compared before/after, so a fabric that
    another test or user brings up meanwhile is not mistaken for ours. A run
    writes its record before it creates anything, so watching for records
    while the process lives catches a fabric even if it was torn down again.
    """
    if os.geteuid() != 0 or not shutil.which("ovs-vsctl"):
        return []
    found = []
    for path in RUN_DIR.glob("*.json"):
        try:
            doc = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if doc.get("owner_pid") == pid:
            found.append(path.name)
            tagged = subprocess.run(["ovs-vsctl", "--timeout=5", "--bare", "--columns=name", "find", "bridge",
                                     f"external_ids:shiftbed-run={doc.get('run_id')}"],
                                    capture_output=True, text=True)
            found += tagged.stdout.split()
    return found


def refused(tmp_path, scenario_text, *args, file_name="s.yaml"):
    """Run `shiftbed run` on ``scenario_text`` (None: no file); check nothing happened; return stderr's lines."""
    path = tmp_path / file_name
    if scenario_text is not None:
        path.write_text(scenario_text)
    out = tmp_path / "results"
    proc = subprocess.Popen([SHIFTBED, "run", str(path), "--out", str(out), "--duration", "1", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen = []
    while proc.poll() is None:
        seen += built_by(proc.pid)
        time.sleep(0.01)
    stdout, stderr = proc.communicate(timeout=60)
    done = subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2, done.stderr[-2000:]
    assert 1 <= len(lines) <= 3 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert done.stdout == ""
    assert not out.exists(), "a results folder was created for refused input"
    assert seen + built_by(proc.pid) == [], f"something was built for refused input: {seen}"
    return lines


@pytest.mark.parametrize("text, field, words", [
    ("name: x\njobs: [\n", "line 3", "YAML syntax error"),
    ("", "(top level)", "empty file"),
    ("- a\n- b\n", "(top level)", "expected a mapping"),
    (GOOD.replace("name: rel\n", ""), "name", "missing required key"),
    (GOOD.replace("period_ms: 300", "perod_ms: 300"), "jobs[0].perod_ms", "did you mean 'period_ms'"),
    (GOOD.replace("period_ms: 300", "period_ms: fast"), "jobs[0].period_ms", "must be a number"),
    (GOOD.replace("period_ms: 300", "period_ms: -300"), "jobs[0].period_ms", "must be > 0"),
    (GOOD.replace("period_ms: 300", "period_ms: .inf"), "jobs[0].period_ms", "finite"),
    (GOOD.replace("comm_ms: 100", "comm_ms: 300"), "jobs[0].comm_ms", "less than period_ms"),
    (GOOD.replace("name: rel\n", "name: rel\nquantum_ms: -1\n"), "quantum_ms", "must be > 0"),
    (GOOD.replace("name: b", "name: a"), "jobs[1].name", "duplicate job name"),
    (GOOD.replace("[h2, h4]", "[h2, h5]"), "jobs[1].workers[1]", "not a host of the fabric"),
    (GOOD.replace("[h2, h4]", "[h4, h4]"), "jobs[1].workers[1]", "used twice"),
    (GOOD.replace("[h2, h4]", "[h2]"), "jobs[1].workers", "at least two workers"),
    (GOOD.replace("fabric: {spines: 1, leaves: 2, hosts_per_leaf: 2, host_link_mbps: 50, fabric_link_mbps: 50}\n",
                  ""), "fabric", "required to run"),
    (GOOD.replace("spines: 1", "spines: 0"), "fabric.spines", "must be >= 1"),
    (GOOD.replace("host_link_mbps: 50", "host_link_mbps: .nan"), "fabric.host_link_mbps", "finite"),
    # what the fabric builder cannot build is refused by the schema, in the builder's words
    (GOOD.replace("host_link_mbps: 50", "host_link_mbps: 2000"), "fabric.host_link_mbps",
     "must be in (0, 1000] Mbit/s, got 2000"),
    (GOOD.replace("leaves: 2", "leaves: 300"), "fabric.leaves", "at most 255 (DPID numbering), got 300"),
    # a job name becomes file names and a URL
    (GOOD.replace("name: b", "name: ../b"), "jobs[1].name", "must be 1-32 characters of letters, digits"),
    (GOOD.replace("name: b", "name: b c"), "jobs[1].name", "not starting with '.', got 'b c'"),
    # more quanta than a schedule can be computed for
    (GOOD.replace("name: rel\n", "name: rel\nquantum_ms: 1.0e-9\n"), "jobs[0].period_ms", "quanta of 1e-09 ms"),
    # the run captures every job where its bursts cross the fabric: a job on one leaf never does
    (THREE_LEAVES.replace("[h4, h6]", "[h5, h6]"), "jobs[2] (c).workers", "all on leaf3, so its bursts cross "
     "no fabric link to capture"),
    # what only the model has
    (GOOD.replace("name: rel\n", "name: rel\nrealign_s: 5\n"), "realign_s", "the run does not re-shift"),
    (GOOD.replace("name: rel\n", "name: rel\nguard_ms: 250\npolicies: [guard]\n"), "guard_ms",
     "must be less than every job's period_ms - comm_ms (a: 200), got 250"),
])
def test_bad_scenario_files_through_run(tmp_path, text, field, words):
    (line,) = refused(tmp_path, text)
    assert line.startswith(f"shiftbed run: {tmp_path / 's.yaml'}: {field}") and words in line, line


def test_a_policy_file_others_can_write_is_refused(tmp_path):
    policy = tmp_path / "mine.py"
    policy.write_text("raise SystemExit('imported')\n")
    policy.chmod(0o666)
    (line,) = refused(tmp_path, GOOD, "--policy-file", str(policy))
    assert line.startswith(f"shiftbed run: --policy-file: {policy}: the policy file {policy} is writable by group "
                           "or others (mode 0666) and policy files run as root: chmod go-w"), line


def test_missing_scenario_file(tmp_path):
    (line,) = refused(tmp_path, None, file_name="nope.yaml")
    assert str(tmp_path / "nope.yaml") in line and "no such file" in line


def test_directory_as_scenario_file(tmp_path):
    (tmp_path / "d.yaml").mkdir()
    (line,) = refused(tmp_path, None, file_name="d.yaml")
    assert "d.yaml" in line and "cannot read" in line


@pytest.mark.parametrize("args, words", [
    (["--policy", "nnoe"], "did you mean 'none'"),
    (["--policy", "gate,shfit"], "did you mean 'shift'"),
    (["--policy", ","], "at least one policy"),
    (["--policy", "gate,gate"], "named twice"),
    (["--duration", "0"], "positive"),
    (["--duration", "-5"], "positive"),
    (["--duration", "soon"], "must be a number"),
    (["--duration", "nan"], "positive"),
    (["--duration", "inf"], "positive"),
    (["--duration", "1e9"], "at most"),
    (["--seed", "x"], "--seed"),
    (["--datapath", "fast"], "--datapath"),
    (["--bogus"], "unrecognized arguments"),
    (["--policy", "none,mltcp"], "mltcp: a model only"),
])
def test_bad_command_line_values(tmp_path, args, words):
    lines = refused(tmp_path, GOOD, *args)
    assert words in lines[0] and args[0] in lines[0], lines


@pytest.mark.parametrize("where", ["file", "under a file"])
def test_results_root_that_is_not_a_directory(tmp_path, where):
    blocker = tmp_path / "blocker"
    blocker.write_text("not a folder")
    out = blocker if where == "file" else blocker / "results"
    (line,) = refused(tmp_path, GOOD, "--out", str(out))
    assert line == f"shiftbed run: --out: {blocker} is not a directory", line
    assert blocker.read_text() == "not a folder"


def test_more_fabric_than_the_machine_emulates_faithfully_asks_for_force(tmp_path):
    wide = GOOD.replace("host_link_mbps: 50, fabric_link_mbps: 50", "host_link_mbps: 300, fabric_link_mbps: 300")
    (line,) = refused(tmp_path, wide)
    # both jobs' flows share leaf1's and leaf2's uplinks at 300 Mbit/s: the estimate is in the
    # message, with the way out
    assert "fabric" in line and "~600 Mbit/s" in line and "--force" in line, line


def test_the_duration_default_comes_from_the_scenario_and_is_checked_there(tmp_path):
    (line,) = refused(tmp_path, GOOD.replace("name: rel\n", "name: rel\nduration_s: 0\n"))
    assert "duration_s" in line and "must be > 0" in line


# -- Open vSwitch missing or not answering: the message path (the machine's OVS is never stopped)


def test_ovs_not_installed_is_named_with_the_fix(monkeypatch):
    from scenarios.experiment import session
    from topo import fabric

    monkeypatch.setattr(fabric, "ovs_version", lambda: None)
    monkeypatch.setattr(fabric.shutil, "which", lambda name: None)
    with pytest.raises(EnvironmentProblem) as info:
        session.preflight()
    message = str(info.value)
    assert "\n" not in message and "Open vSwitch is not installed" in message and "make install" in message


def test_ovs_that_does_not_start_is_named_with_the_fix(monkeypatch, tmp_path):
    from scenarios.experiment import session
    from topo import fabric

    fake_ctl = tmp_path / "ovs-ctl"  # "starts" nothing
    fake_ctl.write_text("#!/bin/sh\nexit 0\n")
    fake_ctl.chmod(0o755)
    started = []
    real_run = fabric.subprocess.run

    def record_run(argv, *a, **kw):
        started.append(list(argv))
        return real_run(argv, *a, **kw)

    monkeypatch.setattr(fabric, "ovs_version", lambda: None)
    monkeypatch.setattr(fabric.shutil, "which", lambda name: f"/usr/bin/{name}")
    monkeypatch.setattr(fabric, "OVS_CTL", str(fake_ctl))
    monkeypatch.setattr(fabric.subprocess, "run", record_run)
    with pytest.raises(EnvironmentProblem) as info:
        session.preflight()
    message = str(info.value)
    assert started == [[str(fake_ctl), "start", "--system-id=random"]]  # it tried to start OVS once
    assert "\n" not in message and "does not answer" in message and "ovs-vswitchd.log" in message, message


def test_log_lines_of_modules_imported_after_mininet_appear_once():
    """mininet.log swaps the logger class; a run's warnings doubled and its INFO lines vanished."""
    code = ("import logging, sys\n"
            "logging.basicConfig(level=logging.INFO, stream=sys.stderr, format='%(message)s')\n"
            "import topo.fabric\n"
            "import scenarios.experiment.runner\n"
            "log = logging.getLogger('scenarios.experiment.runner')\n"
            "log.info('info line'); log.error('error line')\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          cwd=Path(__file__).resolve().parents[2])
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == ["info line", "error line"], done.stderr
