"""The scheduler's REST client against a small HTTP server around the real SchedulerCore (no Ryu)."""

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from apps import jobrun
from apps.dltjob import fetch_plan
from apps.jobmodel import JobSpec, Worker
from controller.scheduler import ApiError, SchedulerCore, parse_body
from controller.scheduler_client import SchedulerClient, SchedulerRefused
from topo.wiring import FabricParams, fabric_wiring, leaf_dpid

pytestmark = pytest.mark.xdist_group("serial")  # serves HTTP and times the client: one at a time (make test)


class _Handler(BaseHTTPRequestHandler):
    """The routes of controller/scheduler_app.py, answered by a SchedulerCore (no gate is fired)."""

    core: SchedulerCore
    seen: list

    def log_message(self, *_args):
        pass

    def _answer(self, fn, status=200):
        try:
            body = fn()
        except ApiError as exc:
            status, body = exc.status, exc.body()
        raw = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def _body(self):
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def do_GET(self):
        self.seen.append(("GET", self.path))
        answers = {"schedule": self.core.schedule_doc, "status": lambda: {"gating": self.core.gating},
                   "jobs": lambda: {"jobs": [j.as_dict() for j in self.core.jobs.values()]}}
        self._answer(answers[self.path.removeprefix("/shiftbed/")])

    def do_POST(self):
        self.seen.append(("POST", self.path))
        body = self._body()
        if self.path == "/shiftbed/jobs":
            self._answer(lambda: {"job": self.core.add_job(parse_body(body)).as_dict(),
                                  "schedule": self.core.schedule_doc()}, 201)
        elif self.path == "/shiftbed/policy":
            self._answer(lambda: (self.core.set_policy(parse_body(body)), self.core.schedule_doc())[1])
        elif self.path == "/shiftbed/stop":
            self._answer(lambda: {"gating": False})

    def do_DELETE(self):
        self.seen.append(("DELETE", self.path))
        name = self.path.removeprefix("/shiftbed/jobs/")
        self._answer(lambda: (self.core.remove_job(name), {"removed": name})[1])


@pytest.fixture
def server():
    handler = type("Handler", (_Handler,), {"core": SchedulerCore(), "seen": []})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/", handler
    httpd.shutdown()
    httpd.server_close()


def job_body(name, period_ms=200.0, comm_ms=50.0):
    return {"name": name, "period_ms": period_ms, "comm_ms": comm_ms, "workers": ["h1", "h3"],
            "flows": [{"dpid": 0x101, "src_ip": "10.0.0.1", "dst_ip": "10.0.0.3", "tcp_src": 5201}]}


def test_register_choose_a_policy_read_the_schedule_and_stop(server):
    url, handler = server
    client = SchedulerClient(url)  # a trailing slash is fine
    assert client.add_job(job_body("a"))["job"]["name"] == "a"
    client.add_job(job_body("b", 400.0, 100.0))
    doc = client.set_policy("shift", start_in_s=1.0)
    assert doc["policy"] == "shift" and set(doc["jobs"]) == {"a", "b"}
    assert client.schedule() == doc
    assert client.status() == {"gating": False}
    assert client.stop() == {"gating": False}
    assert handler.seen == [("POST", "/shiftbed/jobs"), ("POST", "/shiftbed/jobs"), ("POST", "/shiftbed/policy"),
                            ("GET", "/shiftbed/schedule"), ("GET", "/shiftbed/status"), ("POST", "/shiftbed/stop")]


def test_a_refusal_carries_the_status_and_the_schedulers_reason(server):
    client = SchedulerClient(server[0])
    with pytest.raises(SchedulerRefused, match=r"scheduler said 409: .*no jobs registered") as refused:
        client.set_policy("gate")
    assert refused.value.status == 409 and isinstance(refused.value, RuntimeError)
    assert client.request("POST", "/shiftbed/jobs", data=b"{not json").status_code == 400


def test_replace_and_remove(server):
    client = SchedulerClient(server[0])
    assert not client.remove_job("a")  # not registered: no error
    client.add_job(job_body("a"))
    with pytest.raises(SchedulerRefused, match="already registered"):
        client.add_job(job_body("a", 300.0))
    assert client.replace_job(job_body("a", 300.0))["job"]["period_ms"] == 300.0
    assert client.remove_job("a")
    assert client.get("jobs") == {"jobs": []}


def test_the_glue_and_the_driver_use_the_same_client(server):
    url, handler = server
    wiring = fabric_wiring(FabricParams())
    spec = JobSpec("a", 200.0, 50.0, (Worker("h1", "10.0.0.1"), Worker("h3", "10.0.0.3")))
    schedule = jobrun.register_jobs(url, wiring, [spec])
    assert schedule["jobs"]["a"]["workers"] == ["h1", "h3"]
    registered = handler.core.jobs["a"]
    assert {f.dpid for f in registered.flows} == {leaf_dpid(1), leaf_dpid(2)}  # each sender's leaf
    asked_s = time.time()
    doc = SchedulerClient(url).set_policy("gate", start_in_s=1.0)
    assert asked_s + 1.0 <= doc["epoch_s"] <= time.time() + 1.0
    plan = fetch_plan(url, "a")
    # the driver's plan is the server's: its epoch; a job alone bursts at the epoch (offset 0), its
    # window as long as its burst every period
    assert (plan.policy, plan.epoch_s) == ("gate", doc["epoch_s"])
    assert (plan.offset_ms, plan.period_ms, plan.window_ms) == (0.0, 200.0, 50.0)
    assert SchedulerClient(url).remove_job("a")
    assert handler.core.jobs == {}


def test_a_controller_that_does_not_answer_is_named_with_the_request_and_its_wait():
    import socket

    from controller.scheduler_client import SchedulerUnreachable

    with socket.socket() as mute:  # accepts the connection, never answers
        mute.bind(("127.0.0.1", 0))
        mute.listen()
        url = f"http://127.0.0.1:{mute.getsockname()[1]}"
        with pytest.raises(SchedulerUnreachable) as caught:
            SchedulerClient(url, timeout_s=0.2).set_policy("shift", start_in_s=1.0)
    assert str(caught.value) == f"the controller at {url} did not answer POST /shiftbed/policy within 0.2 s"
    with pytest.raises(SchedulerUnreachable, match=rf"^the controller at {url} could not be reached for GET "
                                                    r"/shiftbed/schedule \(ConnectionError\)$"):
        SchedulerClient(url, timeout_s=0.2).schedule()  # nothing listens there any more
