"""REST validation of the window scheduler, without Ryu: every bad request is a 4xx with a message."""

import json
import math
import re
import time

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from controller import limits
from controller.limits import MAX_JOBS, search_nodes
from controller.scheduler import (
    ApiError,
    SchedulerCore,
    parse_body,
    validate_job,
    validate_policy,
)
from controller.theory.policies import POLICIES
from controller.theory.schedule import DEFAULT_MAX_NODES

NOW_S = 1_800_000_000.0


def job(**kw):
    doc = {"name": "a", "period_ms": 200, "comm_ms": 60, "workers": ["h1", "h3"],
           "flows": [{"dpid": 0x101, "src_ip": "10.0.0.1", "dst_ip": "10.0.0.3", "tcp_src": 5701}]}
    doc.update(kw)
    return doc


def status_of(fn, *args):
    with pytest.raises(ApiError) as info:
        fn(*args)
    assert 400 <= info.value.status < 500
    assert info.value.message and "\n" not in info.value.message
    json.dumps(info.value.body())
    return info.value.status


@pytest.mark.parametrize("raw", [b"", b"{", b"[1, 2]", b"null", b"\xff\xfe", b'"text"', b"{'a': 1}"])
def test_bad_json(raw):
    assert status_of(parse_body, raw) == 400


@pytest.mark.parametrize("change", [
    {"name": 7}, {"name": ""}, {"name": "x" * 33}, {"name": "a b"}, {"name": ".hidden"}, {"name": "../up"},
    {"name": "a/b"}, {"name": "a\n"}, {"workers": ["h1\n"]},
    {"period_ms": "fast"}, {"period_ms": True}, {"period_ms": -1}, {"period_ms": 0},
    {"period_ms": float("inf")}, {"period_ms": float("nan")}, {"period_ms": 1e12},
    {"comm_ms": 200}, {"comm_ms": 300}, {"comm_ms": None},
    {"workers": []}, {"workers": "h1"}, {"workers": ["h1", "h1"]}, {"workers": [1]},
    {"flows": []}, {"flows": "x"}, {"flows": [7]},
    {"flows": [{"dpid": "1", "src_ip": "10.0.0.1", "dst_ip": "10.0.0.3", "tcp_src": 1}]},
    {"flows": [{"dpid": 1, "src_ip": "10.0.0.300", "dst_ip": "10.0.0.3", "tcp_src": 1}]},
    {"flows": [{"dpid": 1, "src_ip": "10.0.0.1", "dst_ip": "10.0.0.3", "tcp_src": 70000}]},
    {"flows": [{"dpid": 1, "src_ip": "10.0.0.1", "dst_ip": "10.0.0.3", "tcp_src": 5.5}]},
    {"flows": [{"dpid": -1, "src_ip": "10.0.0.1", "dst_ip": "10.0.0.3", "tcp_src": 1}]},
    {"flows": [{"dpid": 1, "src_ip": "10.0.0.1", "dst_ip": "10.0.0.3", "tcp_src": 1, "x": 1}]},
    {"perod_ms": 200},
])
def test_bad_jobs(change):
    doc = job(**change)
    assert status_of(validate_job, doc) == 400


def test_missing_fields():
    for key in ("name", "period_ms", "comm_ms", "workers", "flows"):
        doc = job()
        del doc[key]
        assert status_of(validate_job, doc) == 400


def test_good_job():
    j = validate_job(job())
    assert j.name == "a" and j.flows[0].tcp_src == 5701 and j.workers == ("h1", "h3")


@pytest.mark.parametrize("doc", [
    {}, {"policy": "fast"}, {"policy": 1}, {"policy": "gate", "epoch_s": "now"},
    {"policy": "gate", "epoch_s": NOW_S + 1e6}, {"policy": "gate", "epoch_s": 0},
    {"policy": "gate", "start_in_s": -1}, {"policy": "gate", "start_in_s": 1e9},
    {"policy": "gate", "epoch_s": NOW_S, "start_in_s": 1}, {"policy": "gate", "mode": "half"},
    {"policy": "gate", "floor_kbps": 0}, {"policy": "gate", "guard_ms": -5},
    {"policy": "gate", "quantum_ms": 0}, {"policy": "gate", "seed": 1.5}, {"policy": "gate", "colour": 1},
    {"policy": "gate", "toggle": "flip"}, {"policy": "gate", "advance_ms": -1}, {"policy": "gate", "advance_ms": 500},
])
def test_bad_policy(doc):
    assert status_of(validate_policy, doc, NOW_S) == 400


def test_policy_epoch_default_and_absolute():
    assert validate_policy({"policy": "none"}, NOW_S).epoch_s == NOW_S + 2.0
    assert validate_policy({"policy": "gate", "epoch_s": NOW_S + 5}, NOW_S).epoch_s == NOW_S + 5


def test_core_unknown_duplicate_and_conflicts():
    core = SchedulerCore()
    assert status_of(core.remove_job, "nobody") == 404
    assert status_of(core.set_policy, {"policy": "none"}) == 409
    core.add_job(job())
    assert status_of(core.add_job, job()) == 409
    core.gating = True
    assert status_of(core.add_job, job(name="b")) == 409
    assert status_of(core.remove_job, "a") == 409
    core.gating = False
    core.remove_job("a")
    assert core.schedule is None and core.schedule_doc()["jobs"] == {}


def test_core_schedule_and_policy():
    pytest.importorskip("controller.theory.policies")
    core = SchedulerCore()
    core.add_job(job())
    core.add_job(job(name="b", period_ms=400, comm_ms=100, workers=["h2", "h4"]))
    doc = core.schedule_doc()
    assert doc["feasible"] and doc["hyperperiod_ms"] == 400 and doc["policy"] is None
    core.set_policy({"policy": "gate", "epoch_s": NOW_S + 1}, NOW_S)
    doc = json.loads(json.dumps(core.schedule_doc()))
    assert doc["policy"] == "gate" and doc["epoch_s"] == NOW_S + 1
    for name in ("a", "b"):
        assert doc["jobs"][name]["offset_ms"] == doc["jobs"][name]["shift_ms"]
    core.set_policy({"policy": "none"}, NOW_S)
    assert {j["offset_ms"] for j in core.schedule_doc()["jobs"].values()} == {0.0}


JSON_BODIES = st.one_of(
    st.binary(max_size=200),
    st.recursive(st.none() | st.booleans() | st.floats() | st.integers() | st.text(max_size=10),
                 lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=10), c, max_size=5),
                 max_leaves=20).map(lambda d: json.dumps(d).encode()),
    st.dictionaries(st.sampled_from(["name", "period_ms", "comm_ms", "workers", "flows"]),
                    st.none() | st.integers(-5, 700_000) | st.floats() | st.text(max_size=40),
                    max_size=3).map(lambda d: json.dumps({**job(), **d}).encode()),
)


@settings(max_examples=300, deadline=None)
@given(JSON_BODIES)
def test_fuzzed_bodies_are_refused_or_accepted_never_crash(raw):
    core = SchedulerCore()
    try:
        added = core.add_job(parse_body(raw))
    except ApiError as exc:
        assert 400 <= exc.status < 500 and exc.message and "\n" not in exc.message
        assert core.jobs == {} and core.schedule is None  # refused: nothing kept
    else:  # accepted: stored as sent, scheduled
        doc = json.loads(raw)
        assert list(core.jobs) == [doc["name"]] and core.jobs[doc["name"]] is added
        assert added.period_ms == doc["period_ms"] and added.comm_ms == doc["comm_ms"]
        assert list(added.workers) == doc["workers"] and len(added.flows) == len(doc["flows"])
        assert [j.name for j in core.schedule.jobs] == [doc["name"]] and core.policy is None
    try:
        policy = validate_policy(parse_body(raw), NOW_S)
    except ApiError as exc:
        assert 400 <= exc.status < 500 and exc.message and "\n" not in exc.message
    else:
        doc = json.loads(raw)
        assert policy.policy == doc["policy"] and policy.policy in POLICIES
        assert NOW_S <= policy.epoch_s <= NOW_S + 3600 + 600 or "epoch_s" in doc


# -- transactions: a refused request changes nothing -----------------------------------------


def state_of(core: SchedulerCore) -> tuple:
    """Everything a request may change (the schedule and policy by identity: they are replaced, not edited)."""
    return (dict(core.jobs), id(core.schedule), core.schedule, id(core.policy), core.policy,
            dict(core.offsets_ms), core.gating)


def test_a_burst_that_rounds_to_zero_quanta_is_refused_and_not_kept():
    core = SchedulerCore()
    core.add_job(job())
    before = state_of(core)
    assert status_of(core.add_job, job(name="tiny", period_ms=100, comm_ms=0.3)) == 400
    assert state_of(core) == before
    core.add_job(job(name="b", period_ms=400, comm_ms=100))  # later requests are not disturbed
    assert sorted(core.jobs) == ["a", "b"] and [j.name for j in core.schedule.jobs] == ["a", "b"]
    core.set_policy({"policy": "gate"}, NOW_S)
    assert core.schedule_doc()["jobs"]["b"]["offset_ms"] is not None


def test_a_refused_policy_keeps_the_schedule_and_policy():
    core = SchedulerCore()
    core.add_job(job())
    core.set_policy({"policy": "shift"}, NOW_S)
    before = state_of(core)
    # a quantum on which the period has too many quanta to schedule: refused before computing
    assert status_of(core.set_policy, {"policy": "gate", "quantum_ms": 1e-5}, NOW_S) == 400
    # a quantum on which the burst fills the period
    assert status_of(core.set_policy, {"policy": "gate", "quantum_ms": 150}, NOW_S) == 400
    assert state_of(core) == before


def test_a_schedule_too_big_to_compute_is_refused_before_computing():
    calls = []
    core = SchedulerCore(compute_with=lambda fn, *args: calls.append(fn) or fn(*args))
    for i in range(40):
        core.add_job(job(name=f"j{i}", period_ms=2000, comm_ms=10))
    assert len(calls) == 40  # every computation goes through the executor the app gives
    before = state_of(core)
    with pytest.raises(ApiError) as info:
        core.set_policy({"policy": "none", "quantum_ms": 0.1}, NOW_S)  # 39 × 40 × 20000 cells
    assert info.value.status == 400 and "31200000 cells" in info.value.message and "more than 5000000" in info.value.message
    assert len(calls) == 40 and state_of(core) == before


def test_at_most_max_jobs():
    core = SchedulerCore()
    for i in range(MAX_JOBS):
        core.add_job(job(name=f"j{i}", period_ms=1000, comm_ms=1))
    before = state_of(core)
    assert status_of(core.add_job, job(name="one-more")) == 409
    assert state_of(core) == before


def test_the_search_budget_shrinks_with_the_instance():
    assert 10_000 < search_nodes([3, 6]) <= DEFAULT_MAX_NODES
    assert search_nodes([300, 600]) < search_nodes([3, 6])  # a joint table of 300² cells at the last two jobs
    assert 1 <= search_nodes([100_000] * 6) < search_nodes([10_000] * 6) < search_nodes([1000] * 6)


def test_the_slowest_instance_found_is_answered_within_the_clients_timeout():
    """Six jobs whose exact search ran out of its 200 000 nodes after ~12 s (gcd² tables at every
    leaf); with the budget the answer (the heuristic's, gap stated) takes ~2 s."""
    core = SchedulerCore()
    for i, (period_ms, comm_ms) in enumerate([(800, 129.5), (600, 79.1), (1200, 216.7), (50, 4.1), (150, 14.2),
                                              (50, 3.2)]):
        core.add_job(job(name=f"j{i}", period_ms=period_ms, comm_ms=comm_ms))
    started = time.monotonic()
    core.set_policy({"policy": "gate", "quantum_ms": 0.5}, NOW_S)
    assert time.monotonic() - started < 5.0  # apps/jobrun.py waits 5 s for an answer
    assert core.schedule.method == "heuristic" and core.schedule.gap is not None


# -- a model of the API, independent of the code, against random request sequences ----------

MODEL_CELLS = 2_000  # the memory bound, made small so that random sequences reach it cheaply
KNOWN_POLICIES = ("none", "shift", "gate", "random")
GOOD_NAMES = ("a", "b", "c", "x" * 32)
NAMES = st.one_of(st.sampled_from(GOOD_NAMES), st.sampled_from(GOOD_NAMES), st.sampled_from((".x", "a/b", "x" * 33)))
TIMES = st.one_of(  # (period_ms, comm_ms): mostly schedulable on the 1 ms grid, then anything
    st.sampled_from(((200, 60), (400, 100), (300, 20), (10, 2), (2.5, 1))),
    st.tuples(st.sampled_from((0.4, 1, 2.5, 10, 200, 600_000, 700_000)),
              st.sampled_from((0.2, 0.4, 0.5, 1, 2, 60, 150))))
QUANTA = st.one_of(st.sampled_from((None, 1, 0.5, 0.1)), st.sampled_from((0.01, 0, 20_000)))


class Model:
    """What the API promises, written from its description: jobs, the schedule's grid, the policy."""

    def __init__(self):
        self.jobs: dict[str, tuple[float, float]] = {}
        self.quantum_ms: float | None = None  # of the current schedule; None: no schedule
        self.policy: str | None = None
        self.gating = False

    @staticmethod
    def quanta(ms: float, quantum_ms: float) -> int:
        return math.floor(ms / quantum_ms + 0.5)

    def schedulable(self, jobs: dict, quantum_ms: float) -> bool:
        """Every burst at least one quantum and shorter than its period; the arrays within the bound."""
        periods = []
        for period_ms, comm_ms in jobs.values():
            if period_ms / quantum_ms > MODEL_CELLS:
                return False
            t, c = self.quanta(period_ms, quantum_ms), self.quanta(comm_ms, quantum_ms)
            if not 1 <= c < t:
                return False
            periods.append(t)
        return (len(periods) - 1) * sum(periods) <= MODEL_CELLS

    def add(self, name, period_ms, comm_ms) -> int | None:
        if not (len(name) <= 32 and re.fullmatch(r"[A-Za-z0-9_-][A-Za-z0-9_.-]*", name)):
            return 400
        if not (0 < period_ms <= 600_000 and 0 < comm_ms < period_ms):
            return 400
        if name in self.jobs or len(self.jobs) >= 64 or self.gating:
            return 409
        jobs = {**self.jobs, name: (period_ms, comm_ms)}
        if not self.schedulable(jobs, 1.0):
            return 400
        self.jobs, self.quantum_ms, self.policy = jobs, 1.0, None
        return None

    def remove(self, name) -> int | None:
        if name not in self.jobs:
            return 404
        if self.gating:
            return 409
        del self.jobs[name]
        self.quantum_ms, self.policy = (1.0 if self.jobs else None), None
        return None

    def set_policy(self, policy, quantum_ms) -> int | None:
        q = 1.0 if quantum_ms is None else quantum_ms
        if policy not in KNOWN_POLICIES or not 0 < q <= 10_000:
            return 400
        if not self.jobs or self.gating:
            return 409
        if not self.schedulable(self.jobs, q):
            return 400
        self.quantum_ms, self.policy = q, policy
        return None


REQUESTS = st.one_of(
    st.tuples(st.just("add"), NAMES, TIMES),
    st.tuples(st.just("add"), NAMES, TIMES),
    st.tuples(st.just("remove"), NAMES),
    st.tuples(st.just("policy"), st.sampled_from(KNOWN_POLICIES + ("bogus",)), QUANTA),
    st.tuples(st.just("gating"), st.booleans()),  # the app starts and stops the gate
)


@settings(max_examples=200, deadline=None)
@given(st.lists(REQUESTS, min_size=4, max_size=30))
def test_random_request_sequences_follow_the_model(requests):
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(limits, "MAX_SCHEDULE_CELLS", MODEL_CELLS)
        core, model = SchedulerCore(), Model()
        for request in requests:
            kind, *args = request
            if kind == "gating":
                core.gating = model.gating = args[0]
                continue
            before = state_of(core)
            if kind == "add":
                name, (period_ms, comm_ms) = args
                expected = model.add(name, period_ms, comm_ms)
                call = (core.add_job, job(name=name, period_ms=period_ms, comm_ms=comm_ms))
            elif kind == "remove":
                expected = model.remove(args[0])
                call = (core.remove_job, args[0])
            else:
                policy, quantum_ms = args
                expected = model.set_policy(policy, quantum_ms)
                body = {"policy": policy} if quantum_ms is None else {"policy": policy, "quantum_ms": quantum_ms}
                call = (core.set_policy, body, NOW_S)
            try:
                call[0](*call[1:])
                status = None
            except ApiError as exc:
                status = exc.status
            assert status == expected, (request, status, expected)
            event(f"{kind}: {status or 'accepted'}")
            if status is not None:
                assert state_of(core) == before, request
                continue
            assert sorted(core.jobs) == sorted(model.jobs)
            assert {n: (j.period_ms, j.comm_ms) for n, j in core.jobs.items()} == model.jobs
            if model.jobs:
                assert sorted(j.name for j in core.schedule.jobs) == sorted(model.jobs)
                assert core.schedule.quantum_ms == model.quantum_ms
            else:
                assert core.schedule is None
            assert (core.policy.policy if core.policy else None) == model.policy
            assert sorted(core.offsets_ms) == (sorted(model.jobs) if model.policy else [])
