"""The run's raw folders: one per run of the drivers, never shared (their CSVs append)."""

from pathlib import Path
from types import SimpleNamespace

import pytest

from scenarios import spec
from scenarios.experiment import Experiment, RunOptions

REPO = Path(__file__).resolve().parents[2]


def test_a_raw_folder_is_never_reused(tmp_path):
    scenario = spec.load(REPO / "scenarios" / "classroom.yaml")
    experiment = Experiment(scenario, "", RunOptions(("none",), 1.0, tmp_path))
    experiment.writer = SimpleNamespace(partial_dir=tmp_path / ".partial")
    first = Path(experiment._work_dir("solo", "alpha", "1", "0.417"))
    assert first == tmp_path / ".partial" / "raw" / "solo-alpha-1-0.417" and first.is_dir()
    # a second run of the drivers into the same folder would append its rows to the first's
    with pytest.raises(FileExistsError):
        experiment._work_dir("solo", "alpha", "1", "0.417")
    assert Path(experiment._work_dir("solo", "alpha", "2", "0.417")).is_dir()
