"""`shiftbed report --repredict`: which raw runs it reads, which offsets it takes, how it refuses.

That it reproduces a real run's predictions is tested on the demo's run
(tests/integration/test_run.py): that needs a folder with captures.
"""

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from results_example import write_example

from controller.theory.schedule import JobTiming, compute_schedule
from scenarios.errors import InputError
from scenarios.experiment.repredict import (
    Repredicted,
    accuracy,
    kept_policy_dir,
    kept_solo_dir,
    repredict,
    run_offsets_ms,
)
from scenarios.summary_record import PolicySummary

SHIFTBED = Path(sys.executable).parent / "shiftbed"
SCHEDULE = compute_schedule([JobTiming("a", 400, 100), JobTiming("b", 800, 100)])
NO_WINDOWS = pd.DataFrame(columns=["policy", "job", "open_s", "close_s"])


def test_a_jobs_kept_solo_run_is_its_last_counted_as_a_number_and_only_its_own(tmp_path):
    for name in ("solo-a-2-0.800", "solo-a-10-0.612", "solo-a-9-0.700", "solo-ab-11-0.500", "solo-b-12-0.800"):
        (tmp_path / name).mkdir()
    assert kept_solo_dir(tmp_path, "a").name == "solo-a-10-0.612"
    with pytest.raises(InputError, match="no solo run of job c"):
        kept_solo_dir(tmp_path, "c")


def test_a_policys_kept_run_is_its_last_attempt(tmp_path):
    for name in ("gate", "gate-attempt2", "gate-attempt3", "guard", "none"):
        (tmp_path / name).mkdir()
    assert kept_policy_dir(tmp_path, "gate").name == "gate-attempt3"
    assert kept_policy_dir(tmp_path, "guard").name == "guard"
    assert kept_policy_dir(tmp_path, "shift") is None


def test_recorded_offsets_are_used_as_they_are():
    notes = []
    assert run_offsets_ms("random", {"a": 120.0, "b": 7.0}, NO_WINDOWS, SCHEDULE, notes) == {"a": 120.0, "b": 7.0}
    assert notes == []


def test_without_recorded_offsets_the_first_windows_give_them():
    windows = pd.DataFrame({"policy": ["gate", "gate", "gate", "shift"], "job": ["a", "a", "b", "b"],
                            "open_s": [0.4, 0.0, 0.1, 0.3], "close_s": [0.5, 0.1, 0.2, 0.4]})
    notes = []
    assert run_offsets_ms("gate", {}, windows, SCHEDULE, notes) == {"a": 0.0, "b": 100.0}
    assert notes == []


def test_without_recorded_offsets_or_windows_a_random_start_is_said_to_be_a_guess():
    notes = []
    assert run_offsets_ms("none", {}, NO_WINDOWS, SCHEDULE, notes) == {"a": 0.0, "b": 0.0}
    assert notes == []  # none starts every job at the epoch: nothing is guessed
    offsets = run_offsets_ms("random", {}, NO_WINDOWS, SCHEDULE, notes)
    assert set(offsets) == {"a", "b"} and any(offsets.values())
    assert notes == ["random: offsets not recorded in this folder; taken as the policy gives them with seed 0"]


def test_offsets_read_back_from_summary_json_and_an_older_folder_has_none():
    policy = PolicySummary(jobs={}, epoch_s=1.79e9, offsets_ms={"a": 0.0, "b": 250.0})
    assert PolicySummary.from_dict(json.loads(json.dumps(policy.to_dict()))) == policy
    assert PolicySummary.from_dict({"jobs": {}, "epoch_s": 1.79e9}).offsets_ms == {}


def test_errors_are_against_the_measurement_and_accuracy_counts_the_goal():
    row = Repredicted("gate", "a", measured_ms=440.0, recorded_ms=400.0, predicted_ms=410.0)
    assert row.error_pct == pytest.approx(30 / 410 * 100)
    assert row.recorded_error_pct == pytest.approx(10.0)
    assert Repredicted("none", "a", 400.0, None, 400.0).recorded_error_pct is None
    assert accuracy([2.0, -12.0, 10.0]) == {"mean_abs_error_pct": pytest.approx(8.0), "within_goal": 2, "pairs": 3}
    assert accuracy([]) == {"mean_abs_error_pct": None, "within_goal": 0, "pairs": 0}


def test_a_folder_without_its_raw_runs_cannot_be_predicted_again(tmp_path):
    folder = write_example(tmp_path)
    with pytest.raises(InputError, match="no raw/ folder"):
        repredict(folder)


@pytest.mark.parametrize("make", [lambda p: p / "x", lambda p: p, lambda p: write_example(p)])
def test_shiftbed_report_repredict_on_what_it_cannot_use_exits_2_with_one_line(tmp_path, make):
    result = subprocess.run([str(SHIFTBED), "report", "--repredict", str(make(tmp_path))],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert result.stderr.startswith("shiftbed report: ")


def test_a_run_of_a_policy_not_registered_here_asks_for_its_file(tmp_path):
    folder = write_example(tmp_path)
    (folder / "raw").mkdir()
    summary = json.loads((folder / "summary.json").read_text())
    summary["policies"]["mine"] = summary["policies"].pop("gate")
    (folder / "summary.json").write_text(json.dumps(summary))
    with pytest.raises(InputError, match="policy mine is not registered here: .* --policy-file"):
        repredict(folder)

