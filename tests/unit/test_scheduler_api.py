"""REST validation of the window scheduler, without Ryu: every bad request is a 4xx with a message."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.scheduler import (
    ApiError,
    SchedulerCore,
    parse_body,
    validate_job,
    validate_policy,
)

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
    {"name": 7}, {"name": ""}, {"name": "x" * 65}, {"name": "a b"},
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


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.binary(max_size=200),
                 st.recursive(st.none() | st.booleans() | st.floats() | st.integers() | st.text(max_size=10),
                              lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=10), c, max_size=5),
                              max_leaves=20).map(lambda d: json.dumps(d).encode())))
def test_fuzzed_bodies_are_refused_or_accepted_never_crash(raw):
    core = SchedulerCore()
    for handler in (lambda d: core.add_job(d), lambda d: validate_policy(d, NOW_S)):
        try:
            handler(parse_body(raw))
        except ApiError as exc:
            assert 400 <= exc.status < 500
