"""A quiet terminal: one line per stage by default, the detail behind -v, no raw dicts, no library chatter."""

import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from controller.theory.schedule import JobTiming, compute_schedule
from scenarios.experiment.progress import (
    calibrated_line,
    fabric_line,
    figures_line,
    plan_line,
    policy_line,
)

REPO = Path(__file__).resolve().parents[2]
SOLO = {"iteration_ms": 288.0, "comm_ms": 68.64, "data_ms": 45.1, "startup_ms": 23.54, "lead_ms": 12.0,
        "sustained_mbps": 49.46, "link_samples_ms": [44.0, 46.5], "fill": 0.417, "nominal_host_steal_pct": None}


def test_a_calibrated_job_is_one_human_line():
    line = calibrated_line("alpha", 300.0, SOLO)
    assert line == ("calibrated alpha: 288.0 ms per iteration for a 300-ms period; bursts of 68.6 ms "
                    "(45.1 ms of data) at 49.5 Mbit/s alone")


def test_solo_bursts_that_stalled_are_counted_on_the_calibrated_line():
    line = calibrated_line("server", 600.0, {**SOLO, "bursts": 20, "stalled_bursts": 9})
    assert line.endswith("alone; 9 of 20 stalled, as on a TCP retransmission timeout (150 ms or more over the median)")
    assert calibrated_line("alpha", 300.0, {**SOLO, "bursts": 20, "stalled_bursts": 0}).endswith("alone")


def test_the_detail_behind_it_names_every_figure_without_a_python_dict():
    line = figures_line("alpha", SOLO)
    assert line.startswith("solo alpha: iteration_ms 288, comm_ms 68.64, data_ms 45.1,")
    assert line.endswith(", fill 0.42") and "{" not in line and "[" not in line and "None" not in line


def test_the_plan_the_fabric_and_each_policy_are_one_line_each():
    schedule = compute_schedule([JobTiming("alpha", 300, 100), JobTiming("beta", 600, 150)])
    assert plan_line("classroom", schedule, ("none", "gate"), 12.0) == (
        "classroom: theory says feasible (hyper-period 600 ms); none, gate for 12 s each")
    fabric = SimpleNamespace(startup_s=4.26, datapath="user", mtu=9000)
    one = SimpleNamespace(ports=(SimpleNamespace(name="leaf1->spine1", mbps=50.0),), meetings={})
    assert fabric_line(fabric, one) == ("fabric up in 4.3 s (user datapath, MTU 9000); shared link leaf1->spine1 "
                                        "at 50 Mbit/s")
    two = SimpleNamespace(ports=(SimpleNamespace(name="leaf2->spine1", mbps=50.0),
                                 SimpleNamespace(name="leaf3->spine1", mbps=50.0)), meetings=dict.fromkeys("abcd"))
    assert fabric_line(fabric, two) == ("fabric up in 4.3 s (user datapath, MTU 9000); jobs meet on 4 links, "
                                        "captured at leaf2->spine1, leaf3->spine1 at 50 Mbit/s")
    measured = {"alpha": {"iterations": 40, "mean_iteration_ms": 301.24}, "beta": {"mean_iteration_ms": 602.0}}
    assert policy_line("gate", measured) == "gate done: alpha 301.2, beta 602.0 ms per iteration"


LOG_LINES = ("import logging\n"
             "from scenarios.cli import configure_logging\n"
             "configure_logging({verbosity})\n"
             "from scenarios.experiment.progress import stages\n"
             "stages.info('fabric up')\n"
             "logging.getLogger('scenarios.experiment.runner').info('scheduler: feasible=True')\n"
             "logging.getLogger('scenarios.experiment.drive').warning('solo a: measuring it again')\n"
             "logging.getLogger('matplotlib.font_manager').warning('Matplotlib is building the font cache')\n")


@pytest.mark.parametrize("verbosity, shown", [
    (0, ["fabric up", "solo a: measuring it again"]),
    (1, ["fabric up", "scheduler: feasible=True", "solo a: measuring it again"]),
    (2, ["fabric up", "scheduler: feasible=True", "solo a: measuring it again",
         "Matplotlib is building the font cache"]),
])
def test_stage_lines_and_warnings_by_default_detail_with_v_libraries_with_vv(verbosity, shown):
    done = subprocess.run([sys.executable, "-c", LOG_LINES.format(verbosity=verbosity)], capture_output=True,
                          text=True, timeout=60, cwd=REPO)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "" and done.stderr.splitlines() == shown


@pytest.mark.parametrize("command", ["run", "demo", "check"])
def test_the_commands_that_build_a_fabric_take_v(command):
    done = subprocess.run([sys.executable, "-m", "scenarios.cli", command, "--help"], capture_output=True,
                          text=True, timeout=60, cwd=REPO)
    assert done.returncode == 0 and "-v, --verbose" in done.stdout, done.stderr
