"""What the integration tests share: one `shiftbed demo` on the real fabric (a few minutes, root).

The demo runs both of its scenarios under every built-in policy: the classroom
pair, which a shift separates, and the coprime pair, which nothing separates.
test_demo_end_to_end.py checks the front door on it; test_run.py checks the
coprime run against the model (there `gate` costs ~40 %, far more than the
model's tolerance). One demo at 10 s per policy serves both, instead of a demo
and a second run of the coprime pair.
"""

import os
import pathlib
import subprocess
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
SHIFTBED = str(pathlib.Path(sys.executable).with_name("shiftbed"))
DEMO_DURATION_S = 10  # per policy: ~25 iterations of a 401-ms job, the accuracy test's sample


@pytest.fixture(scope="session")
def demo_run(tmp_path_factory):
    """``shiftbed demo --duration 10 --out DIR --json``: its completed process and DIR."""
    if os.geteuid() != 0:
        pytest.skip("needs root")
    out = tmp_path_factory.mktemp("demo")
    result = subprocess.run([SHIFTBED, "demo", "--duration", str(DEMO_DURATION_S), "--out", str(out), "--json"],
                            capture_output=True, text=True, timeout=1500, cwd=REPO)
    return result, out


# The job the reliability and hardening tests run (tests/integration/test_reliability.py's ONE_JOB).
ONE_JOB = """\
name: calibration
fabric: {spines: 1, leaves: 2, hosts_per_leaf: 2, host_link_mbps: 50, fabric_link_mbps: 50}
jobs:
  - {name: a, period_ms: 300, comm_ms: 100, workers: [h1, h3]}
"""


@pytest.fixture(scope="session")
def one_job_calibration(tmp_path_factory):
    """``["--reuse-calibration", DIR]``: DIR an earlier run of the one job the reliability and hardening tests
    run, so that each of their runs takes its calibration (~30 s a run) instead of measuring it again.
    Only for tests that judge something else (interrupts, faults, cleanup, exposure); the tests that judge
    calibration or accuracy (the demo, the labs, the time scale, the model) calibrate their own jobs."""
    if os.geteuid() != 0:
        pytest.skip("needs root")
    out = tmp_path_factory.mktemp("calibration")
    scenario = out / "calibration.yaml"
    scenario.write_text(ONE_JOB)
    done = subprocess.run([SHIFTBED, "run", str(scenario), "--policy", "none", "--duration", "2", "--out",
                           str(out / "results"), "--json"], capture_output=True, text=True, timeout=900, cwd=REPO)
    folders = list((out / "results").glob("calibration/*/calibration.json"))
    assert done.returncode in (0, 3) and len(folders) == 1, done.stderr[-3000:]  # 3: kept, fidelity lost
    return ["--reuse-calibration", str(folders[0].parent)]
