"""Solo calibrations reused within a batch: what makes two jobs the same shape, the cache (linked, never
copied twice; forgotten after a run without fidelity), and calibration taking a reused job whole."""

import json
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

from apps.jobmodel import JobSpec, Worker
from scenarios.experiment.calibration import Calibration
from scenarios.experiment.reuse import ScenarioCalibrations, SoloCache, shape_key
from topo.wiring import FabricParams

PARAMS = FabricParams(1, 2, 2, 50.0, 50.0)
ENVIRONMENT = {"datapath": "user", "mtu": 9000, "queue_ms": 20.0, "ovs_version": "3.1.0", "fabric_startup_s": 4.2}
SPEC = JobSpec("j0", 300.0, 90.0, (Worker("h1", "10.0.0.1", 101), Worker("h3", "10.0.0.3", 103)), link_mbps=50.0,
               transport="persistent")
SPINES = ((5201, 1), (5202, 1))


def key(spec=SPEC, environment=ENVIRONMENT, home="s1-eth1", spines=SPINES, params=PARAMS):
    return shape_key(params, environment, spec, home, spines)


def test_the_same_shape_on_the_same_fabric_is_one_key_whatever_the_build():
    rebuilt = replace(SPEC, workers=(Worker("h1", "10.0.0.1", 901), Worker("h3", "10.0.0.3", 903)))  # new PIDs
    assert key(rebuilt, {**ENVIRONMENT, "fabric_startup_s": 6.0}) == key()


@pytest.mark.parametrize("other", [
    {"spec": replace(SPEC, period_ms=301.0)}, {"spec": replace(SPEC, comm_ms=91.0)},
    {"spec": replace(SPEC, transport="iperf3")}, {"spec": replace(SPEC, name="j1")},
    {"spec": replace(SPEC, workers=(Worker("h2", "10.0.0.2", 1), Worker("h3", "10.0.0.3", 2)))},
    {"spec": replace(SPEC, base_port=5301)}, {"spec": replace(SPEC, seed=1)}, {"spec": replace(SPEC, jitter_ms=2.0)},
    {"environment": {**ENVIRONMENT, "datapath": "kernel"}}, {"environment": {**ENVIRONMENT, "mtu": 1500}},
    {"params": FabricParams(1, 2, 2, 20.0, 20.0)}, {"home": "s1-eth2"}, {"spines": ((5201, 2), (5202, 2))},
])
def test_anything_else_different_is_another_shape(other):
    assert key(**other) != key()


def solo_run(tmp_path: Path, name: str) -> Path:
    run = tmp_path / "work" / "raw" / name
    run.mkdir(parents=True)
    (run / "j0.csv").write_text("job,iteration\nj0,0\n")
    (run / "shared.pcap").write_bytes(b"pcap")
    return run


def test_the_cache_links_the_kept_solo_run_and_outlives_its_folder(tmp_path):
    import shutil

    cache = SoloCache(tmp_path / "cache")
    run = solo_run(tmp_path, "solo-j0-3-0.512")
    first = ScenarioCalibrations(cache, "s000", {"j0": key()})
    assert first.lookup("j0") is None
    first.keep("j0", replace(SPEC, comm_ms=80.0, fill=0.5), {"iteration_ms": 288.0}, pd.DataFrame(), str(run))
    stored = next((tmp_path / "cache").rglob("shared.pcap"))
    assert stored.stat().st_ino == (run / "shared.pcap").stat().st_ino  # a link, not a second copy
    shutil.rmtree(tmp_path / "work")  # the measuring scenario's folder goes (a retry, a rename)
    second = ScenarioCalibrations(cache, "s001", {"j0": key(), "j1": key(replace(SPEC, name="j1"))})
    found = second.lookup("j0")
    assert (found.comm_ms, found.fill, found.solo, found.run, found.scenario) == (
        80.0, 0.5, {"iteration_ms": 288.0}, "solo-j0-3-0.512", "s000")
    assert (found.stored / "shared.pcap").read_bytes() == b"pcap"
    assert second.lookup("j1") is None and second.reused == {"j0": "s000"}


def test_a_run_without_fidelity_forgets_what_it_measured_and_what_it_reused(tmp_path):
    cache = SoloCache(tmp_path / "cache")
    for scenario, job in (("s000", "j0"), ("s001", "j1")):
        mine = ScenarioCalibrations(cache, scenario, {job: key(replace(SPEC, name=job))})
        mine.keep(job, SPEC, {}, pd.DataFrame(), str(solo_run(tmp_path / scenario, f"solo-{job}-1-0.800")))
    user = ScenarioCalibrations(cache, "s002", {"j0": key()})
    assert user.lookup("j0") is not None
    assert cache.forget("s002") == [key()]  # s002 lost fidelity: what it reused is measured anew
    assert len(cache) == 1 and user.lookup("j0") is None
    assert cache.forget("s001") == [key(replace(SPEC, name="j1"))] and len(cache) == 0
    assert list((tmp_path / "cache").iterdir()) == []


def test_a_new_cache_starts_empty(tmp_path):
    (tmp_path / "cache" / "0").mkdir(parents=True)  # what a killed batch left
    assert len(SoloCache(tmp_path / "cache")) == 0 and list((tmp_path / "cache").iterdir()) == []


class _Measurer:
    def __init__(self, raw_dir):
        self.raw_dir = raw_dir


@pytest.fixture(autouse=True)
def quiet_lines(monkeypatch):
    """Calibration's progress lines need every solo figure; these tests give only the ones they check."""
    for line in ("calibrated_line", "figures_line"):
        monkeypatch.setattr(f"scenarios.experiment.calibration.{line}", lambda *args: "")


def test_calibration_takes_a_reused_job_whole_and_keeps_a_measured_one(tmp_path, monkeypatch):
    cache = SoloCache(tmp_path / "cache")
    spans = pd.DataFrame({"job": ["j0"], "start_s": [1.0]})
    ScenarioCalibrations(cache, "s000", {"j0": key()}).keep(
        "j0", replace(SPEC, comm_ms=80.0, fill=0.5), {"iteration_ms": 288.0, "fill": 0.5}, spans,
        str(solo_run(tmp_path / "s000", "solo-j0-3-0.500")))
    j1 = replace(SPEC, name="j1", workers=(Worker("h2", "10.0.0.2", 1), Worker("h4", "10.0.0.4", 2)))
    measured = []

    def size(self, measurer, spec):  # j1 is measured (its shape not in the cache); j0 never
        measured.append(spec.name)
        self.solo_spans[spec.name] = spans.assign(job=spec.name)
        self.solo_dirs[spec.name] = str(solo_run(tmp_path / "s001", f"solo-{spec.name}-1-0.800"))
        return replace(spec, fill=0.6), {"iteration_ms": 290.0, "data_ms": 50.0}, {"nominal_sustained_mbps": 49.0}

    monkeypatch.setattr(Calibration, "_size_bursts", size)
    monkeypatch.setattr(Calibration, "_set_period", lambda self, measurer, spec, solo: (spec, solo))
    monkeypatch.setattr("scenarios.experiment.calibration.launch_leads_ms", lambda solo: {n: 0.0 for n in solo})
    known = ScenarioCalibrations(cache, "s001", {"j0": key(), "j1": key(j1)})
    calibration = Calibration()
    raw = tmp_path / "s001" / "run" / "raw"
    sized = calibration.run(_Measurer(raw), [SPEC, j1], known=known)
    assert measured == ["j1"] and known.reused == {"j0": "s000"}
    assert sized[0] == replace(SPEC, comm_ms=80.0, fill=0.5)  # this run's workers, the reused sizing
    assert calibration.solo["j0"] == {"iteration_ms": 288.0, "fill": 0.5, "reused_from": "s000"}
    assert calibration.solo_spans["j0"] is not None and (raw / "solo-j0-3-0.500" / "shared.pcap").is_file()
    assert "reused_from" not in calibration.solo["j1"] and len(cache) == 2  # j1 kept for the next scenario
    assert json.loads(json.dumps(calibration.solo["j0"]))["reused_from"] == "s000"  # summary.json keeps it


def test_without_a_batch_nothing_is_reused(monkeypatch):
    monkeypatch.setattr(Calibration, "_size_bursts", lambda self, m, spec: (spec, {"iteration_ms": 1.0}, {}))
    monkeypatch.setattr(Calibration, "_set_period", lambda self, measurer, spec, solo: (spec, solo))
    monkeypatch.setattr("scenarios.experiment.calibration.launch_leads_ms", lambda solo: {})
    calibration = Calibration()
    assert calibration.run(SimpleNamespace(), [SPEC]) == [SPEC] and calibration.solo == {"j0": {
        "iteration_ms": 1.0, "fill": SPEC.fill}}


# ---------------------------------------------------------------------------- --reuse-calibration DIR


def calibrated_folder(tmp_path: Path, spec=SPEC) -> Path:
    """A run's folder as the runner leaves it: its kept solo run under raw/ and calibration.json."""
    from scenarios.experiment.reuse import write_calibration_record

    folder = tmp_path / "earlier"
    run = folder / "raw" / "solo-j0-3-0.512"
    run.mkdir(parents=True)
    spans = pd.DataFrame({"job": ["j0", "j0"], "start_s": [1.0, 1.3], "end_s": [1.09, 1.39], "bytes": [10, 11]})
    calibration = SimpleNamespace(solo={"j0": {"iteration_ms": 288.0, "reused_from": "s9"}},
                                  solo_spans={"j0": spans}, solo_dirs={"j0": str(run)})
    write_calibration_record(folder, {"j0": key(spec)}, [replace(spec, comm_ms=80.0, fill=0.5)], calibration)
    return folder


def test_an_earlier_runs_calibration_is_taken_whole_where_the_shape_is_the_same(tmp_path):
    from scenarios.experiment.reuse import FolderCalibrations

    folder = calibrated_folder(tmp_path)
    record = json.loads((folder / "calibration.json").read_text())["jobs"]["j0"]
    assert record["solo"] == {"iteration_ms": 288.0} and record["run"] == "solo-j0-3-0.512"  # not where it came from
    rebuilt = replace(SPEC, workers=(Worker("h1", "10.0.0.1", 901), Worker("h3", "10.0.0.3", 903)))
    known = FolderCalibrations(folder, {"j0": key(rebuilt, {**ENVIRONMENT, "fabric_startup_s": 9.9})})
    found = known.lookup("j0")
    assert (found.comm_ms, found.fill, found.solo, found.run, found.stored) == (
        80.0, 0.5, {"iteration_ms": 288.0}, "solo-j0-3-0.512", folder / "raw" / "solo-j0-3-0.512")
    pd.testing.assert_frame_equal(found.spans, pd.read_parquet(found.stored / "solo_spans.parquet"))
    assert list(found.spans["bytes"]) == [10, 11] and known.reused == {"j0": str(folder)}


@pytest.mark.parametrize("other, says", [
    ({"spec": replace(SPEC, period_ms=301.0)}, r"job j0 differs from .*'s \(job.period_ms: 300.0 there, 301.0 here\)"),
    ({"environment": {**ENVIRONMENT, "mtu": 1500}}, "the fabric differs from .*environment.mtu: 9000 there, 1500 here"),
    ({"params": FabricParams(1, 2, 2, 20.0, 20.0)}, "the fabric differs from .*fabric.fabric_link_mbps: 50.0 there"),
])
def test_an_earlier_run_of_another_shape_is_refused_in_one_line(tmp_path, other, says):
    from scenarios.errors import InputError
    from scenarios.experiment.reuse import FolderCalibrations

    folder = calibrated_folder(tmp_path)
    with pytest.raises(InputError, match=f"^--reuse-calibration: {says}") as refused:
        FolderCalibrations(folder, {"j0": key(**other)})
    assert "\n" not in str(refused.value)


def test_a_folder_without_a_calibration_or_without_the_job_is_refused(tmp_path):
    from scenarios.errors import InputError
    from scenarios.experiment.reuse import FolderCalibrations

    with pytest.raises(InputError, match="holds no calibration.json: give the results folder of a run"):
        FolderCalibrations(tmp_path, {"j0": key()})
    folder = calibrated_folder(tmp_path)
    with pytest.raises(InputError, match="calibrated no job j1"):
        FolderCalibrations(folder, {"j0": key(), "j1": key(replace(SPEC, name="j1"))})


def test_before_anything_is_built_the_scenarios_jobs_and_fabric_are_checked_against_the_folder(tmp_path):
    from scenarios import spec as scenario_spec
    from scenarios.errors import InputError
    from scenarios.experiment.reuse import check_reusable

    text = ("name: rel\nfabric: {spines: 1, leaves: 2, hosts_per_leaf: 2, host_link_mbps: 50, fabric_link_mbps: 50}\n"
            "transport: persistent\njobs:\n  - {name: j0, period_ms: 300, comm_ms: 90, workers: [h1, h3]}\n")
    path = tmp_path / "rel.yaml"
    path.write_text(text)
    folder = calibrated_folder(tmp_path)
    check_reusable(folder, scenario_spec.load(path), seed=0)  # the same: no error
    for changed, says in [(text.replace("period_ms: 300", "period_ms: 400"), "job j0 differs .*job.period_ms"),
                          (text.replace("workers: [h1, h3]", "workers: [h2, h3]"), r"job j0 differs .*job.workers\[0\]"),
                          (text.replace("fabric_link_mbps: 50", "fabric_link_mbps: 20"), "the fabric differs"),
                          (text.replace("name: j0", "name: j1"), ".* calibrated no job j1")]:
        path.write_text(changed)
        with pytest.raises(InputError, match=f"^--reuse-calibration: {says}"):
            check_reusable(folder, scenario_spec.load(path), seed=0)
    path.write_text(text)
    with pytest.raises(InputError, match="job.seed: 0 there, 1 here"):
        check_reusable(folder, scenario_spec.load(path), seed=1)
