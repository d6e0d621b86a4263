"""The run's raw folders (one per run of the drivers, never shared: their CSVs append), and what a
policy's prediction draws from (the run's other policies, never its own)."""

from pathlib import Path

import pytest

from controller.theory.schedule import compute_schedule
from scenarios import spec
from scenarios.experiment.drive import MeasureLog, Measurer
from scenarios.experiment.prediction import MeasuredRun

REPO = Path(__file__).resolve().parents[2]


def classroom_run(solo, solo_spans=None, bursts=None) -> MeasuredRun:
    scenario = spec.load(REPO / "scenarios" / "classroom.yaml")
    schedule = compute_schedule(scenario.timings(), scenario.quantum_ms)
    return MeasuredRun(schedule, solo, solo_spans or {}, bursts or {}, {})


def test_a_raw_folder_is_never_reused(tmp_path):
    measurer = Measurer(fabric=None, links=None, raw_dir=tmp_path / ".partial" / "raw", notes=MeasureLog())
    first = Path(measurer.work_dir("solo", "alpha", "1", "0.417"))
    assert first == tmp_path / ".partial" / "raw" / "solo-alpha-1-0.417" and first.is_dir()
    # a second run of the drivers into the same folder would append its rows to the first's
    with pytest.raises(FileExistsError):
        measurer.work_dir("solo", "alpha", "1", "0.417")
    assert Path(measurer.work_dir("solo", "alpha", "2", "0.417")).is_dir()


def test_a_policys_busy_start_cost_comes_from_the_other_policies_bursts():
    import pandas as pd

    from scenarios.analysis.tables import BUSY_START_MS

    solo = {"alpha": {"lead_ms": 8.0}, "beta": {"lead_ms": 10.0}}

    def bursts(alpha_busy_leads):
        n = len(alpha_busy_leads)
        return pd.DataFrame({"job": ["alpha"] * n, "lead_ms": alpha_busy_leads, "busy_start": [True] * n})

    run = classroom_run(solo, bursts={"none": bursts([18.0, 20.0, 22.0]), "gate": bursts([40.0, 40.0, 40.0])})
    # gate's prediction takes none's bursts (20 - 8 ms), none's takes gate's (40 - 8): never its own
    assert run.busy_starts_ms("gate") == ({"alpha": pytest.approx(12.0), "beta": BUSY_START_MS},
                                                 {"alpha": pytest.approx((10.0, 12.0, 14.0)), "beta": ()})
    assert run.busy_starts_ms("none") == ({"alpha": pytest.approx(32.0), "beta": BUSY_START_MS},
                                                 {"alpha": pytest.approx((32.0, 32.0, 32.0)), "beta": ()})
    run = classroom_run(solo, bursts={"gate": bursts([40.0, 40.0, 40.0])})  # a run of one policy: the default
    assert run.busy_starts_ms("gate") == ({"alpha": BUSY_START_MS, "beta": BUSY_START_MS},
                                                 {"alpha": (), "beta": ()})


def test_a_policys_model_pools_the_solo_bursts_with_the_other_policies_quiet_ones():
    import pandas as pd

    solo = {"alpha": {"iteration_ms": 290.0, "lead_ms": 10.0, "data_ms": 50.0},
            "beta": {"iteration_ms": 590.0, "lead_ms": 10.0, "data_ms": 100.0}}

    def bursts(lead_ms, quiet=True, busy=False):
        return pd.DataFrame({"job": ["alpha"] * 3, "lead_ms": [lead_ms] * 3, "data_ms": [50.0] * 3,
                             "after_ms": [10.0] * 3, "quiet": [quiet] * 3, "busy_start": [busy] * 3})

    run = classroom_run(solo, {"alpha": bursts(10.0)},
                        {"none": pd.concat([bursts(20.0), bursts(40.0, quiet=False, busy=True)]),
                         "gate": bursts(30.0)})
    # gate's model takes none's quiet bursts (leads 10 and 20: mean 15), never gate's own
    gate = run.model_solo("gate")
    assert gate["alpha"]["lead_ms"] == pytest.approx(15.0) and gate["alpha"]["quiet_bursts"] == 3
    assert gate["alpha"]["iteration_ms"] == pytest.approx(295.0)  # median burst 70 -> 75 ms
    assert gate["beta"]["iteration_ms"] == 590.0 and gate["beta"]["quiet_bursts"] == 0
    assert run.model_solo("none")["alpha"]["lead_ms"] == pytest.approx(20.0)
    # and a busy start's cost is counted from the lead the model is fed: 40 - 15 ms
    costs, _ = run.busy_starts_ms("gate", gate)
    assert costs["alpha"] == pytest.approx(25.0)
