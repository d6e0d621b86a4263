"""REST validation of the window scheduler, without Ryu: every bad request is a 4xx with a message.

Fuzzed and hand-written bodies are judged by the rules written out apart from the code
(``tests/rest_rules.py``): the status, and after acceptance the stored job or policy.
"""

import json
import math
import re
import time

import pytest
import rest_rules
from hypothesis import event, given, settings
from hypothesis import strategies as st

from controller import limits
from controller.gate import GateWindow, WindowGate
from controller.limits import MAX_JOBS, search_nodes
from controller.scheduler import (
    ApiError,
    SchedulerCore,
    parse_body,
    validate_job,
    validate_policy,
)
from controller.theory.schedule import DEFAULT_MAX_NODES

pytestmark = pytest.mark.xdist_group("serial")  # times a request against the 5 s a client waits: one at a time (make test)

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


@pytest.mark.parametrize("raw", [b"[" * 100_000, b"[" * 5000 + b"]" * 5000, b'{"a": ' * 5000 + b"1" + b"}" * 5000,
                                 b'{"name": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"])
def test_json_nested_past_the_recursion_limit_is_400(raw):
    with pytest.raises(ApiError) as info:
        parse_body(raw)
    assert info.value.status == 400 and info.value.message == "body: not valid JSON (nested too deep)"


def test_the_nesting_limit_is_shiftbeds_the_same_on_every_python():
    """Python 3.13's parser takes 5000 levels that 3.11's refused: the limit is MAX_JSON_DEPTH on both."""
    from controller.scheduler import MAX_JSON_DEPTH, json_depth

    def nested(depth):
        return b'{"a": ' + b"[" * (depth - 1) + b"]" * (depth - 1) + b"}"

    assert json_depth(parse_body(nested(MAX_JSON_DEPTH))) == MAX_JSON_DEPTH
    with pytest.raises(ApiError) as info:
        parse_body(nested(MAX_JSON_DEPTH + 1))
    assert info.value.status == 400 and info.value.message == "body: not valid JSON (nested too deep)"


HUGE = 10**400  # beyond any float: float(HUGE) raises OverflowError


@pytest.mark.parametrize("field, value", [("period_ms", HUGE), ("comm_ms", HUGE), ("period_ms", -HUGE),
                                          ("dpid", HUGE), ("tcp_src", -HUGE), ("tcp_dst", HUGE)],
                         ids=["period", "comm", "-period", "dpid", "-tcp_src", "tcp_dst"])
def test_a_job_integer_beyond_any_float_is_out_of_range(field, value):
    doc = job(**{field: value}) if field.endswith("_ms") else \
        job(flows=[{**job()["flows"][0], field: value}])
    with pytest.raises(ApiError) as info:
        validate_job(doc)
    assert info.value.status == 400 and f".{field}: must be " in info.value.message
    assert "... (40" in info.value.message and len(info.value.message) < 200  # the number shortened


@pytest.mark.parametrize("field", ["epoch_s", "start_in_s", "seed", "floor_kbps", "floor_burst_ms", "guard_ms",
                                   "quantum_ms", "advance_ms"])
def test_a_policy_integer_beyond_any_float_is_out_of_range(field):
    for value in (HUGE, -HUGE):
        with pytest.raises(ApiError) as info:
            validate_policy({"policy": "gate", field: value}, NOW_S)
        assert info.value.status == 400 and info.value.message.startswith(f"policy.{field}: must be ")


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


def test_a_gate_whose_window_is_not_shorter_than_a_period_is_refused_naming_the_job():
    """The gate could never close such a window (``GateWindow``): refused before anything changes."""
    core = SchedulerCore()
    core.add_job(job())  # a: 200 ms, 60 ms burst
    core.add_job(job(name="b", period_ms=400, comm_ms=100, workers=["h2", "h4"]))
    core.set_policy({"policy": "shift"}, NOW_S)
    before = state_of(core)
    with pytest.raises(ApiError) as info:
        core.set_policy({"policy": "gate", "guard_ms": 140}, NOW_S)  # a: 60 + 140 = its period
    assert info.value.status == 400 and info.value.message.startswith("policy.guard_ms: job a's window")
    assert "comm_ms 60 + guard_ms 140 = 200 ms" in info.value.message and "period_ms 200" in info.value.message
    assert state_of(core) == before
    core.remove_job("a")
    with pytest.raises(ApiError) as info:
        core.set_policy({"policy": "gate", "guard_ms": 300}, NOW_S)  # b: 100 + 300 = its period
    assert "job b's window" in info.value.message and "= 400 ms" in info.value.message
    core.set_policy({"policy": "random", "guard_ms": 300}, NOW_S)  # no gate: the guard is only stored
    core.set_policy({"policy": "gate", "guard_ms": 299.5}, NOW_S)
    (window,) = started_gate(core).windows["b"]
    assert window.window_ms == 399.5


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


# -- bodies against the rules written out independently (tests/rest_rules.py) -------------------

FZ = {"fz": (200, 60)}  # a job registered under the name the generated bodies use
TWO = {"fz": (200, 60), "b": (400, 100)}
POLICY_FIELDS = ("policy", "epoch_s", "seed", "mode", "floor_kbps", "floor_burst_ms", "guard_ms", "quantum_ms",
                 "toggle", "advance_ms")


def core_with(registered: dict, gating: bool = False) -> SchedulerCore:
    core = SchedulerCore()
    for name, (period_ms, comm_ms) in registered.items():
        core.add_job(job(name=name, period_ms=period_ms, comm_ms=comm_ms))
    core.gating = gating
    return core


def outcome(call) -> tuple[int | None, object]:
    """(None, what ``call`` returned), or (the 4xx, None) after checking the refusal is one JSON line."""
    try:
        return None, call()
    except ApiError as exc:
        assert 400 <= exc.status < 500 and exc.message and "\n" not in exc.message
        json.dumps(exc.body())
        return exc.status, None


def stored_job(added) -> dict:
    return {"name": added.name, "period_ms": added.period_ms, "comm_ms": added.comm_ms,
            "workers": list(added.workers),
            "flows": [{"dpid": f.dpid, "src_ip": f.src_ip, "dst_ip": f.dst_ip, "tcp_src": f.tcp_src,
                       "tcp_dst": f.tcp_dst, "proto": f.proto} for f in added.flows]}


def check_job_post(raw: bytes, registered: dict, gating: bool = False) -> int | None:
    """POST /jobs with ``raw``: the core answers as the rules say, and stores what they say."""
    core = core_with(registered, gating)
    expected = rest_rules.job_verdict(raw, registered, gating)
    before = state_of(core)
    status, added = outcome(lambda: core.add_job(parse_body(raw)))
    assert status == expected.status, (raw[:300], expected.rule)
    if status is not None:
        assert state_of(core) == before  # refused: nothing changed
        return status
    assert stored_job(core.jobs[added.name]) == expected.stored
    assert sorted(core.jobs) == sorted([*registered, added.name])
    assert sorted(j.name for j in core.schedule.jobs) == sorted(core.jobs)
    assert core.schedule.quantum_ms == 1.0 and core.policy is None and core.offsets_ms == {}
    return None


def started_gate(core: SchedulerCore) -> WindowGate:
    """The gate as ``controller/scheduler_app.py`` starts it after an enforcing policy is accepted."""
    windows = {name: [GateWindow(*w) for w in arcs] for name, arcs in core.window_arcs_ms().items()}
    flows = {name: list(job.flows) for name, job in core.jobs.items()}
    gate = WindowGate(windows, flows, core.policy.epoch_s, mode=core.policy.mode,
                      floor_kbps=core.policy.floor_kbps, toggle=core.policy.toggle,
                      floor_burst_ms=core.policy.floor_burst_ms)
    assert gate.setup()
    return gate


def check_policy_post(raw: bytes, registered: dict, gating: bool = False) -> int | None:
    """POST /policy with ``raw``: the core answers as the rules say, and keeps the policy they say."""
    core = core_with(registered, gating)
    expected = rest_rules.policy_verdict(raw, registered, gating, NOW_S)
    before = state_of(core)
    status, _ = outcome(lambda: core.set_policy(parse_body(raw), NOW_S))
    assert status == expected.status, (raw[:300], expected.rule)
    if status is not None:
        assert state_of(core) == before
        return status
    want = expected.stored
    assert {key: getattr(core.policy, key) for key in POLICY_FIELDS} == {key: want[key] for key in POLICY_FIELDS}
    assert core.enforces_windows == want["enforces_windows"] and sorted(core.jobs) == sorted(registered)
    assert core.schedule.quantum_ms == want["quantum_ms"] and sorted(core.offsets_ms) == sorted(registered)
    for name, planned in core.schedule_doc()["jobs"].items():
        period_ms, comm_ms = registered[name]
        assert rest_rules.expected_offset_ms(want["policy"], period_ms, planned["shift_ms"],
                                             planned["offset_ms"], want["quantum_ms"]), planned
        assert planned["window_ms"] == comm_ms + want["guard_ms"]
    if core.enforces_windows:  # the live app starts the gate now: it must not fail
        assert sorted(started_gate(core).windows) == sorted(registered)
    return None


ARBITRARY_JSON = st.recursive(
    st.none() | st.booleans() | st.floats() | st.integers() | st.text(max_size=10),
    lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=10), c, max_size=5),
    max_leaves=20).map(lambda d: json.dumps(d).encode())
JOB_BODIES = rest_rules.bodies(rest_rules.job_docs(), st.binary(max_size=200) | ARBITRARY_JSON,
                               rest_rules.job_edges())
POLICY_BODIES = rest_rules.bodies(rest_rules.policy_docs(NOW_S), st.binary(max_size=200) | ARBITRARY_JSON,
                                  rest_rules.policy_edges(NOW_S))


@settings(max_examples=300, deadline=None)
@given(JOB_BODIES, st.sampled_from(["no job", "no job", "job b", "job b, gating"]))
def test_fuzzed_bodies_are_refused_or_accepted_never_crash(raw, state):
    registered = {"b": TWO["b"]} if state.startswith("job b") else {}  # one of the names bodies use
    status = check_job_post(raw, registered, gating="gating" in state)
    event(f"POST /jobs, {state}: {status or 'accepted'}")


@settings(max_examples=300, deadline=None)
@given(POLICY_BODIES, st.sampled_from(["no job", "fz", "fz", "fz, b", "fz, gating"]))
def test_fuzzed_policy_bodies_follow_the_rules(raw, state):
    registered = {"no job": {}, "fz, b": TWO}.get(state, FZ)
    status = check_policy_post(raw, registered, gating="gating" in state)
    event(f"POST /policy, {state}: {status or 'accepted'}")


@settings(max_examples=60, deadline=None)
@given(rest_rules.job_edges(), rest_rules.policy_edges(NOW_S))
def test_edge_bodies_are_refused_with_400(job_raw, policy_raw):
    """Nested past the parser's limit, integers beyond any float, gate windows that fill the
    period: the rules and the core refuse each with a 400 and change nothing."""
    assert rest_rules.job_verdict(job_raw).status == 400
    assert check_job_post(job_raw, {}) == 400
    assert rest_rules.policy_verdict(policy_raw, FZ, now_s=NOW_S).status == 400
    assert check_policy_post(policy_raw, FZ) == 400


def body(base: dict, **changes) -> bytes:
    return json.dumps({**base, **changes}).encode()


FLOW = rest_rules.GOOD_FLOW
DEEP = rest_rules.nested_too_deep("arrays")
GOOD = rest_rules.GOOD_JOB


def case(why: str, raw: bytes, registered: dict, gating: bool, status: int | None) -> pytest.param:
    """One hand-written body and its status derived by hand (None: accepted); ``why`` in one line."""
    return pytest.param(why, raw, registered, gating, status, id=why)


JOB_TABLE = [
    case("the good body", body(GOOD), {}, False, None),
    case("a 0.5 ms burst rounds half up to one quantum", body(GOOD, comm_ms=0.5), {}, False, None),
    case("a 0.4 ms burst rounds to zero quanta", body(GOOD, comm_ms=0.4), {}, False, 400),
    case("period 1.4, burst 0.6: one quantum each", body(GOOD, period_ms=1.4, comm_ms=0.6), {}, False, 400),
    case("the longest period", body(GOOD, period_ms=600_000), {}, False, None),
    case("past the longest period", body(GOOD, period_ms=600_000.5), {}, False, 400),
    case("a 32-character name", body(GOOD, name="n" * 32), {}, False, None),
    case("a name starting with '.'", body(GOOD, name=".fz"), {}, False, 400),
    case("one worker is enough here", body(GOOD, workers=["h1"]), {}, False, None),
    case("workers kept in the order sent", body(GOOD, workers=["h3", "h1", "h2"]), {}, False, None),
    case("a worker twice", body(GOOD, workers=["h1", "h1"]), {}, False, 400),
    case("udp, any port, extreme dpids",
         body(GOOD, flows=[{**FLOW, "proto": "udp", "tcp_dst": None, "dpid": 0}, {**FLOW, "dpid": 2**64 - 1}]),
         {}, False, None),
    case("proto null is not proto absent", body(GOOD, flows=[{**FLOW, "proto": None}]), {}, False, 400),
    case("a port written 5701.0", body(GOOD, flows=[{**FLOW, "tcp_src": 5701.0}]), {}, False, 400),
    case("an octet with a leading zero", body(GOOD, flows=[{**FLOW, "src_ip": "010.0.0.1"}]), {}, False, 400),
    case("256 flows", body(GOOD, flows=[FLOW] * 256), {}, False, None),
    case("257 flows", body(GOOD, flows=[FLOW] * 257), {}, False, 400),
    case("a misspelt field", body(GOOD, perod_ms=200), {}, False, 400),
    case("the name already registered", body(GOOD), FZ, False, 409),
    case("a second job that fits", body(GOOD, name="b", period_ms=400, comm_ms=100), FZ, False, None),
    case("a good job while the gate runs", body(GOOD, name="b"), FZ, True, 409),
    case("a 65th job", body(GOOD), {f"j{i}": (1000, 1) for i in range(64)}, False, 409),
    case("an empty body", b"", {}, False, 400),
    case("a body over 1 MiB", body(GOOD, workers=["h1"] * 300_000), {}, False, 413),
    case("nested 100 000 deep", b"[" * 100_000, {}, False, 400),
    case("a field nested 100 000 deep", body(GOOD)[:-1] + b', "x": ' + DEEP + b"}", {}, False, 400),
    case("a 400-digit period", body(GOOD).replace(b"200", b"9" * 400, 1), {}, False, 400),
    case("a 400-digit negative dpid", body(GOOD, flows=[{**FLOW, "dpid": -(10**400)}]), {}, False, 400),
]


POLICY_TABLE = [
    case("gate, starting in 2 s", b'{"policy": "gate"}', FZ, False, None),
    case("no job registered", b'{"policy": "gate"}', {}, False, 409),
    case("while the gate runs", b'{"policy": "none"}', FZ, True, 409),
    case("the latest epoch", body({"policy": "shift", "epoch_s": NOW_S + 3600}), FZ, False, None),
    case("the earliest epoch is excluded", body({"policy": "shift", "epoch_s": NOW_S - 3600}), FZ, False, 400),
    case("epoch and start both", body({"policy": "none", "epoch_s": NOW_S, "start_in_s": 1}), FZ, False, 400),
    case("start now", body({"policy": "random", "start_in_s": 0, "seed": 2**63 - 1}), TWO, False, None),
    case("a 60 ms burst on a 150 ms grid", body({"policy": "gate", "quantum_ms": 150}), FZ, False, 400),
    case("a half-millisecond grid", body({"policy": "gate", "quantum_ms": 0.5}), TWO, False, None),
    case("floor 0 kbit/s", body({"policy": "gate", "mode": "floor", "floor_kbps": 0}), FZ, False, 400),
    case("floor, modify, longest advance, a guard that fits",
         body({"policy": "gate", "mode": "floor", "floor_kbps": 10_000_000, "guard_ms": 139.5, "toggle": "modify",
               "advance_ms": 50}), FZ, False, None),
    case("the longest guard, no gate", body({"policy": "shift", "guard_ms": 1000}), FZ, False, None),
    case("a gate window as long as the period", body({"policy": "gate", "guard_ms": 140}), FZ, False, 400),
    case("a gate window longer than the second job's period",
         body({"policy": "gate", "guard_ms": 300}), {"b": (400, 100), "fz": (200, 60)}, False, 400),
    case("a gate window as long as a period off the grid", body({"policy": "gate", "guard_ms": 0.6}),
         {"fz": (10, 9.4)}, False, 400),
    case("a gate window just shorter than a period off the grid", body({"policy": "gate", "guard_ms": 0.5}),
         {"fz": (10, 9.4)}, False, None),
    case("a seed written 1.0", body({"policy": "random", "seed": 1.0}), FZ, False, 400),
    case("names are case-sensitive", b'{"policy": "Gate"}', FZ, False, 400),
    case("an unknown option", b'{"policy": "gate", "colour": "red"}', FZ, False, 400),
    case("a 400-digit seed", b'{"policy": "none", "seed": ' + b"9" * 400 + b"}", FZ, False, 400),
    case("a 400-digit guard", b'{"policy": "shift", "guard_ms": ' + b"9" * 400 + b"}", FZ, False, 400),
    case("a policy nested 100 000 deep", b'{"policy": ' + DEEP + b"}", FZ, False, 400),
]


@pytest.mark.parametrize("why, raw, registered, gating, status", JOB_TABLE)
def test_the_rules_give_the_hand_derived_job_status(why, raw, registered, gating, status):
    assert rest_rules.job_verdict(raw, registered, gating).status == status, why


@pytest.mark.parametrize("why, raw, registered, gating, status", POLICY_TABLE)
def test_the_rules_give_the_hand_derived_policy_status(why, raw, registered, gating, status):
    assert rest_rules.policy_verdict(raw, registered, gating, NOW_S).status == status, why


@pytest.mark.parametrize("why, raw, registered, gating, status", JOB_TABLE)
def test_hand_written_job_bodies(why, raw, registered, gating, status):
    assert check_job_post(raw, registered, gating) == status, why  # the core, state included


@pytest.mark.parametrize("why, raw, registered, gating, status", POLICY_TABLE)
def test_hand_written_policy_bodies(why, raw, registered, gating, status):
    assert check_policy_post(raw, registered, gating) == status, why


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


def test_jobs_that_say_which_links_they_cross_are_kept_apart_only_where_they_meet():
    """The chain: A meets B on leaf 2's links, B meets C on leaf 3's; A and C never meet. On one
    link 150 + 200 + 150 ms of bursts every 400 ms cannot be separated; told the links, the
    controller finds the fabric's schedule (A and C together, B between)."""
    core = SchedulerCore()
    links = {"A": ["leaf1->spine1", "spine1->leaf2", "leaf2->spine1", "spine1->leaf1"],
             "B": ["leaf2->spine1", "spine1->leaf3", "leaf3->spine1", "spine1->leaf2"],
             "C": ["leaf3->spine1", "spine1->leaf4", "leaf4->spine1", "spine1->leaf3"]}
    for name, comm in (("A", 150), ("B", 200), ("C", 150)):
        core.add_job(job(name=name, period_ms=400, comm_ms=comm, links=links[name]))
    doc = core.schedule_doc()
    assert doc["feasible"] is True and doc["overlap_ms"] == 0
    shifts = {n: j["shift_ms"] for n, j in doc["jobs"].items()}
    for a, b in (("A", "B"), ("B", "C")):  # each meeting pair apart: 150 + 200 of every 400 ms
        d = (shifts[b] - shifts[a]) % 400
        assert 150 <= d <= 200 or 200 <= (400 - d) % 400 <= 250
    # without the links all three meet on one link: no schedule separates them
    alone = SchedulerCore()
    for name, comm in (("A", 150), ("B", 200), ("C", 150)):
        alone.add_job(job(name=name, period_ms=400, comm_ms=comm))
    assert alone.schedule_doc()["feasible"] is False
    assert core.jobs["A"].as_dict()["links"] == links["A"]


@pytest.mark.parametrize("links, words", [
    ("leaf1->spine1", "must be a list of 1..1024 link names"),
    ([], "must be a list of 1..1024 link names"),
    ([3], "links[0]: must be a link name of 1..64 characters"),
    (["x" * 65], "links[0]: must be a link name of 1..64 characters"),
])
def test_a_jobs_links_are_checked(links, words):
    core = SchedulerCore()
    with pytest.raises(ApiError) as info:
        core.add_job(job(links=links))
    assert info.value.status == 400 and words in info.value.message and not core.jobs
