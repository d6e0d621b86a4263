"""The scheduler app computes schedules off the hub and serves state changes one at a time.

A real `python -m controller controller.scheduler_app` on free ports, no switches, no root, once
on every framework installed here (Ryu's eventlet hub, os-ken's native threads).
The instance below takes ~0.4 s to schedule on a 0.5 ms grid (its exact search runs out
of budget, then the heuristic answers): long enough to see whether the hub still serves.
Its periods are products of two of four primes near 100, so every job keeps residues as
long as its period and each node of the search passes over ~130 000 of them.
"""

import itertools
import threading
import time

import pytest
import requests

from controller.fabric_config import FabricConfig
from controller.framework_choice import FRAMEWORK_ENV, installed
from controller.process import ControllerProcess
from topo.wiring import FabricParams

pytestmark = pytest.mark.xdist_group("serial")  # starts controllers and times their answers: one at a time (make test)

SLOW_JOBS = [(a * b, round(a * b / 10, 1)) for a, b in itertools.combinations((101, 103, 107, 109), 2)]
SLOW_QUANTUM_MS = 0.5


def job(name: str, period_ms: float, comm_ms: float, port: int) -> dict:
    return {"name": name, "period_ms": period_ms, "comm_ms": comm_ms, "workers": ["h1", "h2"],
            "flows": [{"dpid": 0x101, "src_ip": "10.0.0.1", "dst_ip": "10.0.0.2", "tcp_src": port}]}


@pytest.fixture(scope="module", params=installed())
def scheduler(tmp_path_factory, request):
    path = tmp_path_factory.mktemp("scheduler") / "fabric.json"
    FabricConfig(FabricParams(spines=1, leaves=2, hosts_per_leaf=1)).write(str(path))
    controller = ControllerProcess(path, apps=("controller.scheduler_app",), env={FRAMEWORK_ENV: request.param})
    controller.start()
    yield controller
    controller.stop()


@pytest.fixture
def slow_jobs(scheduler):
    url = scheduler.rest_url + "/shiftbed"
    for i, (period_ms, comm_ms) in enumerate(SLOW_JOBS):
        answer = requests.post(f"{url}/jobs", json=job(f"j{i}", period_ms, comm_ms, 5000 + i), timeout=10)
        assert answer.status_code == 201, answer.text
    yield url
    for name in requests.get(f"{url}/jobs", timeout=10).json()["jobs"]:
        requests.delete(f"{url}/jobs/{name['name']}", timeout=10)


def in_background(fn) -> tuple[threading.Thread, dict]:
    result = {}

    def run():
        started = time.monotonic()
        result["answer"] = fn()
        result["took_s"] = time.monotonic() - started
    thread = threading.Thread(target=run)
    thread.start()
    return thread, result


def test_the_hub_keeps_answering_while_a_schedule_is_computed(slow_jobs):
    thread, result = in_background(lambda: requests.post(
        f"{slow_jobs}/policy", json={"policy": "none", "quantum_ms": SLOW_QUANTUM_MS}, timeout=30))
    latencies_s = []
    while thread.is_alive():
        started = time.monotonic()
        assert requests.get(f"{slow_jobs}/status", timeout=10).status_code == 200
        latencies_s.append(time.monotonic() - started)
        time.sleep(0.02)
    thread.join()
    assert result["answer"].status_code == 200, result["answer"].text
    assert result["took_s"] > 0.25, "the computation was too quick to show anything"
    # computed in the hub, a status request would wait for the whole computation
    assert len(latencies_s) >= 3 and max(latencies_s) < min(0.5, result["took_s"] / 2), (latencies_s, result)


def test_a_change_waits_for_the_change_in_progress(slow_jobs):
    thread, result = in_background(lambda: requests.post(
        f"{slow_jobs}/policy", json={"policy": "shift", "quantum_ms": SLOW_QUANTUM_MS}, timeout=30))
    time.sleep(0.2)  # the policy's schedule is being computed
    late = requests.post(f"{slow_jobs}/jobs", json=job("late", 300, 30, 6000), timeout=30)
    thread.join()
    assert result["answer"].status_code == 200 and late.status_code == 201, (result["answer"].text, late.text)
    # served in turn: the job came after the policy, so the schedule has it and no policy is set
    schedule = requests.get(f"{slow_jobs}/schedule", timeout=10).json()
    names = {j["name"] for j in requests.get(f"{slow_jobs}/jobs", timeout=10).json()["jobs"]}
    assert set(schedule["jobs"]) == names == {f"j{i}" for i in range(len(SLOW_JOBS))} | {"late"}
    assert schedule["policy"] is None and schedule["quantum_ms"] == 1.0
