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
