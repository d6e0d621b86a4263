"""The batch's fleet without a fabric: a done scenario's folder packed on a worker and written into the
batch (complete or absent, whatever order they come back in), bytes that are not such a folder refused,
the worker's run of a scenario that stops it, and the check of a cluster before anything is written
(the cluster real: ``dask scheduler`` and ``dask worker`` on 127.0.0.1, ended by PID).

Nothing here builds a fabric: every cluster the command line meets is one it refuses.
"""

import io
import json
import os
import socket
import subprocess
import sys
import tarfile
from pathlib import Path

import dask_cluster as cluster
import pytest
import results_example as example

from scenarios.batch import fleet, fleetworker
from scenarios.batch.folder import OUTCOME_FILE, PREDICTION_FILE, RUN_LOG, BatchFolder
from scenarios.batch.pack import WORKER_LOG, adopt, keep_unfinished, pack, unpack
from scenarios.batch.table import batch_table
from scenarios.errors import EnvironmentProblem
from scenarios.exitcodes import BAD_INPUT, FAULT

pytestmark = pytest.mark.xdist_group("serial")  # starts dask clusters: one at a time (make test)

REPO = Path(__file__).resolve().parents[2]
SHIFTBED = [sys.executable, "-m", "scenarios.cli"]
NAMES = ("s000", "s001")
RECORD = {"settings": {"policies": ["none", "shift", "gate"], "seed": 4},
          "draws": {name: {"n_jobs": 2, "sample": k} for k, name in enumerate(NAMES)}}
SCENARIO_TEXT = ("name: {name}\npolicies: [none, shift, gate]\nduration_s: 3\nfabric: {{spines: 1, leaves: 2, "
                 "hosts_per_leaf: 2, host_link_mbps: 20, fabric_link_mbps: 20}}\njobs:\n"
                 "  - {{name: a, period_ms: 100, comm_ms: 30, workers: [h1, h3]}}\n"
                 "  - {{name: b, period_ms: 200, comm_ms: 40, workers: [h2, h4]}}\n")


def _new_batch(root: Path) -> BatchFolder:
    return BatchFolder.create(root, RECORD, {name: SCENARIO_TEXT.format(name=name) for name in NAMES})


def _done_on_a_worker(tmp_path: Path) -> BatchFolder:
    """A worker's batch folder with both scenarios done: the synthetic run (results_example) kept."""
    worker = _new_batch(tmp_path / "worker")
    for name in NAMES:
        work = worker.begin(name)
        run = example.write_example(tmp_path / "runs" / name)
        run.rename(work / run.name)
        (work / PREDICTION_FILE).write_text(json.dumps({"kind": "before the run", "policies": {}}))
        (work / RUN_LOG).write_text(f"{name}'s table\n")
        worker.finish(name, {"scenario": name, "attempts": [{"results_dir": run.name, "exit_code": 0,
                                                            "fidelity_ok": True}], "kept": run.name, "exit_code": 0})
    return worker


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_a_packed_folder_written_in_is_the_workers_folder_byte_for_byte(tmp_path):
    worker = _done_on_a_worker(tmp_path)
    client = _new_batch(tmp_path / "client")
    data = pack(worker.done_dir("s000"))
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        assert OUTCOME_FILE not in tar.getnames()  # the outcome travels as data; the client writes it
    assert client.pending() == list(NAMES)
    adopt(client, "s000", data, worker.outcome("s000"))
    assert client.pending() == ["s001"] and client.outcome("s000") == worker.outcome("s000")
    assert _files(client.done_dir("s000")) == _files(worker.done_dir("s000"))
    assert not list(client.work_root.iterdir())  # nothing half-written left behind


def test_what_an_unfinished_attempt_wrote_is_kept_not_done_as_a_batch_here_keeps_it(tmp_path):
    worker = _new_batch(tmp_path / "worker")
    attempt = worker.begin("s001")
    run = example.write_example(tmp_path / "runs" / "s001")  # a run cut short keeps its folder
    run.rename(attempt / run.name)
    (attempt / PREDICTION_FILE).write_text("{}")
    client = _new_batch(tmp_path / "client")
    (client.begin("s001") / "stale").write_text("an earlier attempt's")
    kept = keep_unfinished(client, "s001", pack(attempt), "Traceback ...\nReadTimeout\n")
    assert kept == client.work_root / "s001" and client.pending() == list(NAMES)
    assert _files(kept) == {**_files(attempt), WORKER_LOG: b"Traceback ...\nReadTimeout\n"}


def test_the_table_does_not_depend_on_the_order_the_scenarios_came_back_in(tmp_path):
    worker = _done_on_a_worker(tmp_path)
    client = _new_batch(tmp_path / "client")
    for name in reversed(NAMES):  # the second scenario's worker finished first
        adopt(client, name, pack(worker.done_dir(name)), worker.outcome(name))
    here, there = batch_table(client), batch_table(worker)
    assert list(here["scenario"].unique()) == list(NAMES)
    assert len(here) == len(NAMES) * 3 * 2  # scenarios × policies × jobs
    assert here.drop(columns="results_dir").equals(there.drop(columns="results_dir"))
    assert all(str(client.root) in p for p in here["results_dir"])


def _tar(*members: tuple[tarfile.TarInfo, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for info, content in members:
            info.size = len(content)
            tar.addfile(info, io.BytesIO(content))
    return buffer.getvalue()


def _member(name: str, kind=tarfile.REGTYPE, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, link
    return info


@pytest.mark.parametrize(("data", "why"), [
    (_tar((_member("/etc/x"), b"x")), "not a path inside"),
    (_tar((_member("run/../../x"), b"x")), "not a path inside"),
    (_tar((_member("run/link", tarfile.SYMTYPE, "/etc/passwd"), b"")), "not a plain file or folder"),
    (_tar((_member(OUTCOME_FILE), b"{}")), "not a path inside"),
    (b"not a tar at all", "not a packed scenario folder"),
], ids=["absolute", "dot-dot", "symlink", "outcome-at-top", "not-a-tar"])  # the bytes hold gzip's clock
def test_bytes_that_are_not_a_scenario_folder_are_refused_and_leave_it_not_done(tmp_path, data, why):
    client = _new_batch(tmp_path / "client")
    with pytest.raises(ValueError, match=why):
        adopt(client, "s000", data, {"scenario": "s000"})
    assert not client.is_done("s000") and not client.done_dir("s000").exists()
    assert not (tmp_path / "etc").exists() and not (tmp_path / "x").exists()
    unpack(pack(_done_on_a_worker(tmp_path).done_dir("s001")), tmp_path / "again")  # a real one still goes in
    assert (tmp_path / "again" / RUN_LOG).read_text() == "s001's table\n"


def test_a_worker_hands_back_what_stopped_its_run_and_leaves_no_scratch(tmp_path, monkeypatch):
    import topo.runrecord

    monkeypatch.setattr(topo.runrecord, "RUN_DIR", tmp_path / "run")
    monkeypatch.setattr(fleetworker, "scratch_root", lambda: tmp_path / "scratch")
    record = {**RECORD, "scenarios": ["s000"]}
    returned = fleetworker.run_scenario_here("s000", "name: s000\njobs: [", record)  # refused before any fabric
    code, said = (BAD_INPUT, "s000.yaml") if os.geteuid() == 0 else (FAULT, "building a fabric needs root")
    assert returned["exit_code"] == code and returned["outcome"] is None and returned["folder"] is None
    last = returned["worker_log"].splitlines()[-1]
    assert said in last and last.startswith("shiftbed batch:"), returned["worker_log"]
    assert returned["partial"] is None  # refused before its attempt wrote anything
    assert returned["fingerprint"] == fleetworker.shiftbed_fingerprint()
    assert not (tmp_path / "scratch").exists() and (tmp_path / "run" / "fleet.lock").is_file()


def test_the_workers_offering_a_fabric_and_why_a_fleet_is_refused():
    workers = {"tcp://a:1": {"resources": {"fabric": 1}}, "tcp://b:1": {"resources": {}},
               "tcp://c:1": {}, "tcp://d:1": {"resources": {"fabric": 2, "GPU": 1}}}
    assert fleet.fabric_workers(workers) == ["tcp://a:1", "tcp://d:1"]
    ok = {"host": "m1", "root": True, "fingerprint": "f"}
    assert fleet.refusal("tcp://s:8786", {"tcp://a:1": ok}, "f") is None
    assert "no worker offers the resource fabric" in fleet.refusal("tcp://s:8786", {}, "f")
    assert "--resources fabric=1" in fleet.refusal("tcp://s:8786", {}, "f")
    other = fleet.refusal("tcp://s:8786", {"tcp://a:1": ok, "tcp://d:1": {**ok, "fingerprint": "g"}}, "f")
    assert "worker tcp://d:1 (m1) runs other shiftbed code" in other
    assert "does not run as root" in fleet.refusal("tcp://s:8786", {"tcp://a:1": {**ok, "root": False}}, "f")


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, (str(REPO), env.get("PYTHONPATH"))))
    return env


@pytest.fixture(scope="module")
def plain_cluster(tmp_path_factory):
    """A scheduler with one worker that offers no fabric."""
    with cluster.dask_cluster(tmp_path_factory.mktemp("dask"), _env(), [["--nthreads", "1", "--no-nanny"]]) as address:
        yield address


@pytest.fixture(scope="module")
def fabric_cluster(tmp_path_factory):
    """A scheduler with a worker that offers no fabric and one that offers one (as this user; its lock and
    scratch folder in the test's)."""
    folder = tmp_path_factory.mktemp("dask")
    env = {**_env(), "SHIFTBED_RUN_DIR": str(folder / "run"), "TMPDIR": str(folder)}  # the worker's lock, scratch
    workers = [["--nthreads", "1", "--no-nanny"], ["--nthreads", "1", "--no-nanny", "--resources", "fabric=1"]]
    with cluster.dask_cluster(folder, env, workers) as address:
        yield address


ARGS = ["--scenarios", "1", "--policy", "none,shift", "--transport", "persistent", "--duration", "3"]


@pytest.mark.slow
def test_a_cluster_without_a_fabric_worker_is_refused_in_one_line_with_nothing_written(plain_cluster, tmp_path):
    out = tmp_path / "b"
    done = subprocess.run([*SHIFTBED, "batch", str(out), *ARGS, "--dask-scheduler", plain_cluster], cwd=REPO,
                          env=_env(), capture_output=True, text=True, timeout=120)
    assert done.returncode == FAULT, done.stderr
    assert done.stderr.strip().splitlines() == [
        f"shiftbed batch: dask scheduler {plain_cluster}: no worker offers the resource fabric; start one as root "
        f"on a machine with shiftbed installed: `dask worker {plain_cluster} --nworkers 1 --nthreads 1 "
        "--resources fabric=1` (docs/scale.md)"]
    assert not out.exists()


@pytest.mark.slow
def test_a_bad_address_is_bad_input_before_any_connection(tmp_path):
    done = subprocess.run([*SHIFTBED, "batch", str(tmp_path / "b"), *ARGS, "--dask-scheduler", "nohost"], cwd=REPO,
                          env=_env(), capture_output=True, text=True, timeout=60)
    assert done.returncode == BAD_INPUT and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "--dask-scheduler: 'nohost' is not a scheduler address" in done.stderr
    assert not (tmp_path / "b").exists()


@pytest.mark.slow
def test_the_fabric_worker_is_found_and_checked_for_root_and_this_shiftbed(fabric_cluster):
    if os.geteuid() == 0:  # a root worker passes every check
        found = fleet.connect(fabric_cluster)
        try:
            assert len(found.workers) == 1 and found.fabric_workers() == found.workers
            assert str(found) == f"the dask cluster at {fabric_cluster}: 1 worker offering a fabric"
        finally:
            found.client.close()
    else:
        with pytest.raises(EnvironmentProblem, match=r"worker tcp://127\.0\.0\.1:\d+ \(.*\) does not run as "
                                                           r"root, and building a fabric needs root"):
            fleet.connect(fabric_cluster)


def test_a_resume_takes_the_fleet_and_checks_its_address_after_the_folder(tmp_path, capsys):
    from scenarios import cli

    assert cli.main(["batch", "--resume", str(tmp_path), "--dask-scheduler", "nohost"]) == BAD_INPUT
    assert "not a batch folder" in capsys.readouterr().err
    _new_batch(tmp_path / "b")
    assert cli.main(["batch", "--resume", str(tmp_path / "b"), "--dask-scheduler", "nohost"]) == BAD_INPUT
    assert capsys.readouterr().err.strip() == ("shiftbed batch: --dask-scheduler: 'nohost' is not a scheduler address "
                                               "(expected tcp://HOST:PORT, e.g. tcp://10.0.0.5:8786)")


@pytest.mark.slow
def test_a_scenario_that_stops_on_its_worker_stops_the_batch_in_one_line(fabric_cluster, tmp_path, capsys):
    from distributed import Client

    too_fast = SCENARIO_TEXT.replace("_link_mbps: 20", "_link_mbps: 1000")  # the run refuses it, nothing built
    folder = BatchFolder.create(tmp_path / "b", RECORD, {name: too_fast.format(name=name) for name in NAMES})
    client = Client(fabric_cluster, timeout=30, set_as_default=False)
    on = fleet.Fleet(client, fabric_cluster, fleet.fabric_workers(client.scheduler_info(n_workers=-1)["workers"]))
    code = fleet.run_fleet(folder, on)  # closes the client
    expected = BAD_INPUT if os.geteuid() == 0 else FAULT  # "~2000 Mbit/s ... more than", or "needs root"
    assert code == expected
    err = capsys.readouterr().err
    assert f"2 of 2 scenarios to run on the dask cluster at {fabric_cluster}: 1 worker offering a fabric" in err
    assert f"shiftbed batch: s000 on {socket.gethostname()}: not done (exit {expected}): shiftbed batch: " in err
    assert f"s000 stopped the batch (exit {expected}); `shiftbed batch --resume {folder.root} --dask-scheduler " in err
    assert folder.pending() == list(NAMES)
    if os.geteuid() == 0:  # its prediction was written before the run refused: kept as a batch here keeps it
        attempt = folder.work_root / "s000"
        assert f"(what it wrote, and its output in worker.log: {attempt})" in err
        assert sorted(p.name for p in attempt.iterdir()) == ["prediction.json", "run.log", "worker.log"]
        assert "shiftbed batch: " in (attempt / "worker.log").read_text()
    else:  # refused before any attempt (no root)
        assert not list(folder.root.glob(".partial/*"))
