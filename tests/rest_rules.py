"""The scheduler's REST validation rules written out again, as an oracle for the REST tests.

:func:`job_verdict` and :func:`policy_verdict` say what ``POST /shiftbed/jobs``
and ``POST /shiftbed/policy`` must answer to a raw body: refused with which
4xx, or accepted and then stored as what. They are written from the
documentation, not from the code under test: docs/reliability.md ("The
scheduler's REST API" and the schedule's bounds), docs/policies.md (the
built-in policies; only ``gate`` enforces its windows), docs/theory-rule.md (times
on the quantum grid) and the endpoint list in the docstring of
controller/scheduler.py. The docs state no bounds for the policy's options or
for a flow's fields; those were read from controller/scheduler.py and are
written below as plain numbers, so a change there fails the tests until this
table follows it. Nothing here calls controller/scheduler.py; the bounds of
controller/limits.py are imported as constants.

The hypothesis strategies at the end make bodies that are mostly a few
changes away from a good one, with valid alternatives more often than invalid
ones, so that a good share of the fuzzed bodies is accepted (in
tests/unit/test_scheduler_api.py, raw bytes, arbitrary JSON and the edge bodies included: about
a quarter of the job bodies and a sixth of the policy bodies). One body in seven is an edge body
(:func:`job_edges`, :func:`policy_edges`), which the rules always refuse.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass

from hypothesis import strategies as st

from controller.limits import MAX_JOB_NAME_CHARS, MAX_JOBS, MAX_PERIOD_MS, MAX_SCHEDULE_CELLS

# -- the rules ---------------------------------------------------------------------------------

MAX_BODY_BYTES = 1 << 20  # a larger body is 413 (Payload Too Large)
BUILT_IN_POLICIES = ("none", "shift", "gate", "random")  # docs/policies.md
WINDOW_POLICIES = ("gate",)  # enforces_windows: the controller starts the gate (docs/policies.md)
DEFAULT_QUANTUM_MS = 1.0  # a job set is scheduled on this grid; a policy may choose another
JOB_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9_.-]*")  # docs/reliability.md, the scenario rule
HOST_NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}")
IPV4 = re.compile(r"(0|[1-9][0-9]{0,2})\.(0|[1-9][0-9]{0,2})\.(0|[1-9][0-9]{0,2})\.(0|[1-9][0-9]{0,2})")
MAX_FLOWS = 256
PORTS = (1, 65535)
MAX_DPID = 2**64 - 1
# The policy's options: (low, high, low bound included, whole number, default)
POLICY_NUMBERS = {
    "seed": (0, 2**63 - 1, True, True, 0),
    "floor_kbps": (0, 10_000_000, False, True, 1000),
    "floor_burst_ms": (0.0, 60_000.0, False, False, 250.0),
    "guard_ms": (0.0, 1000.0, True, False, 0.0),
    "quantum_ms": (0.0, 10_000.0, False, False, 1.0),
    "advance_ms": (0.0, 50.0, True, False, 0.0),
}
POLICY_CHOICES = {"mode": ("block", "floor"), "toggle": ("meter", "delete", "modify")}  # the first is the default
MAX_EPOCH_SKEW_S = 3600.0  # epoch_s within (now - this, now + this]
MAX_START_IN_S = 600.0  # start_in_s within [0, this]; the default is 2 s
DEFAULT_START_IN_S = 2.0
JOB_KEYS = {"name", "period_ms", "comm_ms", "workers", "flows"}
FLOW_KEYS = {"dpid", "src_ip", "dst_ip", "tcp_src", "tcp_dst", "proto"}
POLICY_KEYS = {"policy", "epoch_s", "start_in_s", *POLICY_NUMBERS, *POLICY_CHOICES}


class Refused(Exception):
    """The body breaks a rule: the HTTP status it must get."""

    def __init__(self, status: int, rule: str):
        super().__init__(f"{status}: {rule}")
        self.status = status


@dataclass(frozen=True)
class Verdict:
    """``status`` None: accepted, and ``stored`` is what must then be kept; else the 4xx."""

    status: int | None
    stored: dict | None = None
    rule: str = ""


def decode(raw: bytes) -> dict:
    """A non-empty body of at most 1 MiB holding one JSON object (as Python's json reads it)."""
    if not raw:
        raise Refused(400, "empty body")
    if len(raw) > MAX_BODY_BYTES:
        raise Refused(413, "body over 1 MiB")
    try:
        doc = json.loads(raw)
    except ValueError:  # also undecodable bytes
        raise Refused(400, "not JSON") from None
    except RecursionError:  # nested deeper than json reads: still not a JSON object it can read
        raise Refused(400, "nested too deep") from None
    if not isinstance(doc, dict):
        raise Refused(400, "not a JSON object")
    return doc


def is_number(value) -> bool:
    """A finite JSON number; an integer literal of any size is one (its range decides)."""
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and math.isfinite(value))


def number(doc: dict, key: str, low: float, high: float, *, low_included=False, whole=False,
           default=None):
    """``doc[key]``: a finite JSON number (an integer literal if ``whole``) in the range."""
    if key not in doc:
        if default is None:
            raise Refused(400, f"{key} missing")
        return default
    value = doc[key]
    if not is_number(value) or (whole and not isinstance(value, int)):
        raise Refused(400, f"{key} not a {'whole ' if whole else ''}number")
    above_low = value >= low if low_included else value > low
    if not (above_low and value <= high):
        raise Refused(400, f"{key} out of range")
    return value


def only_keys(doc: dict, allowed: set, where: str) -> None:
    if set(doc) - allowed:
        raise Refused(400, f"unknown field in {where}")


def quanta(ms: float, quantum_ms: float) -> int:
    """A time on the grid: the nearest whole number of quanta, halves up (docs/reliability.md:
    a burst can round to zero quanta)."""
    return math.floor(ms / quantum_ms + 0.5)


def check_schedulable(times: Mapping[str, tuple[float, float]], quantum_ms: float) -> None:
    """Refused (400) unless every job fits the grid and the schedule is within the bounds."""
    periods = []
    for period_ms, comm_ms in times.values():
        if period_ms / quantum_ms > MAX_SCHEDULE_CELLS:
            raise Refused(400, "period has too many quanta")
        period_q, comm_q = quanta(period_ms, quantum_ms), quanta(comm_ms, quantum_ms)
        if not 1 <= comm_q < period_q:
            raise Refused(400, "burst not 1 quantum .. period on the grid")
        periods.append(period_q)
    if (len(periods) - 1) * sum(periods) > MAX_SCHEDULE_CELLS:
        raise Refused(400, "schedule too big")


def flow_as_stored(flow) -> dict:
    if not isinstance(flow, dict):
        raise Refused(400, "flow not an object")
    only_keys(flow, FLOW_KEYS, "flow")
    proto = flow.get("proto", "tcp")
    if not (isinstance(proto, str) and proto in ("tcp", "udp")):
        raise Refused(400, "proto")
    stored = {"dpid": number(flow, "dpid", 0, MAX_DPID, low_included=True, whole=True)}
    for key in ("src_ip", "dst_ip"):
        ip = flow.get(key)
        if not (isinstance(ip, str) and IPV4.fullmatch(ip) and all(int(p) <= 255 for p in ip.split("."))):
            raise Refused(400, f"{key} not a dotted IPv4 address")
        stored[key] = ip
    stored["tcp_src"] = number(flow, "tcp_src", *PORTS, low_included=True, whole=True)
    stored["tcp_dst"] = None  # null or absent: any destination port
    if flow.get("tcp_dst") is not None:
        stored["tcp_dst"] = number(flow, "tcp_dst", *PORTS, low_included=True, whole=True)
    stored["proto"] = proto
    return stored


def job_as_stored(doc: dict) -> dict:
    """The job a valid ``POST /jobs`` object registers; 400 for any field that breaks a rule."""
    only_keys(doc, JOB_KEYS, "job")
    name = doc.get("name")
    if not (isinstance(name, str) and len(name) <= MAX_JOB_NAME_CHARS and JOB_NAME.fullmatch(name)):
        raise Refused(400, "name")
    period_ms = number(doc, "period_ms", 0.0, MAX_PERIOD_MS)
    comm_ms = number(doc, "comm_ms", 0.0, MAX_PERIOD_MS)
    if comm_ms >= period_ms:
        raise Refused(400, "comm_ms not below period_ms")
    workers = doc.get("workers")
    if not (isinstance(workers, list) and workers
            and all(isinstance(w, str) and HOST_NAME.fullmatch(w) for w in workers)
            and len(set(workers)) == len(workers)):
        raise Refused(400, "workers: 1+ distinct host names")
    flows = doc.get("flows")
    if not (isinstance(flows, list) and 1 <= len(flows) <= MAX_FLOWS):
        raise Refused(400, f"flows: 1..{MAX_FLOWS}")
    return {"name": name, "period_ms": float(period_ms), "comm_ms": float(comm_ms),
            "workers": list(workers), "flows": [flow_as_stored(f) for f in flows]}


def job_verdict(raw: bytes, registered: Mapping[str, tuple[float, float]] | None = None,
                gating: bool = False) -> Verdict:
    """``POST /shiftbed/jobs`` with ``raw`` while ``registered`` (name -> (period_ms, comm_ms))
    are registered: 400 for a bad body; 409 for a name already registered, a 65th job or a
    running gate; 400 if the new job set cannot be scheduled on the default grid."""
    registered = dict(registered or {})
    try:
        job = job_as_stored(decode(raw))
        if job["name"] in registered or len(registered) >= MAX_JOBS or gating:
            raise Refused(409, "conflict: duplicate, full or gating")
        check_schedulable({**registered, job["name"]: (job["period_ms"], job["comm_ms"])},
                          DEFAULT_QUANTUM_MS)
    except Refused as refusal:
        return Verdict(refusal.status, rule=str(refusal))
    return Verdict(None, job)


def policy_as_stored(doc: dict, now_s: float) -> dict:
    """The policy a valid ``POST /policy`` object sets (``epoch_s`` absolute); 400 otherwise."""
    only_keys(doc, POLICY_KEYS, "policy")
    policy = doc.get("policy")
    if not (isinstance(policy, str) and policy in BUILT_IN_POLICIES):
        raise Refused(400, "policy: not a built-in policy")
    if "epoch_s" in doc and "start_in_s" in doc:
        raise Refused(400, "epoch_s and start_in_s both given")
    stored = {"policy": policy, "start_in_s": None}
    if "epoch_s" in doc:
        stored["epoch_s"] = float(number(doc, "epoch_s", now_s - MAX_EPOCH_SKEW_S, now_s + MAX_EPOCH_SKEW_S))
    else:
        stored["start_in_s"] = float(number(doc, "start_in_s", 0.0, MAX_START_IN_S, low_included=True,
                                            default=DEFAULT_START_IN_S))
        stored["epoch_s"] = now_s + stored["start_in_s"]
    for key, (low, high, low_included, whole, default) in POLICY_NUMBERS.items():
        stored[key] = number(doc, key, low, high, low_included=low_included, whole=whole, default=default)
    for key, choices in POLICY_CHOICES.items():
        value = doc.get(key, choices[0])
        if not (isinstance(value, str) and value in choices):
            raise Refused(400, f"{key}: not one of {choices}")
        stored[key] = value
    stored["enforces_windows"] = policy in WINDOW_POLICIES
    return stored


def policy_verdict(raw: bytes, registered: Mapping[str, tuple[float, float]], gating: bool = False,
                   now_s: float = 0.0) -> Verdict:
    """``POST /shiftbed/policy`` with ``raw`` at ``now_s`` while ``registered`` (name ->
    (period_ms, comm_ms)) are registered: 400 for a bad body; 409 with no job or while the gate
    runs; 400 if the jobs cannot be scheduled on the policy's grid (``quantum_ms``), or if the
    policy enforces windows and a job's window, its burst widened by ``guard_ms``
    (docs/gate.md), would not be shorter than its period: the gate could never close it."""
    try:
        policy = policy_as_stored(decode(raw), now_s)
        if not registered or gating:
            raise Refused(409, "no jobs, or gating")
        check_schedulable(registered, policy["quantum_ms"])
        if policy["enforces_windows"] and any(comm_ms + policy["guard_ms"] >= period_ms
                                              for period_ms, comm_ms in registered.values()):
            raise Refused(400, "a gate window (comm_ms + guard_ms) as long as the period")
    except Refused as refusal:
        return Verdict(refusal.status, rule=str(refusal))
    return Verdict(None, policy)


def expected_offset_ms(policy: str, period_ms: float, shift_ms: float, offset_ms: float,
                       quantum_ms: float) -> bool:
    """Is ``offset_ms`` the first-burst offset ``policy`` gives a job (docs/policies.md)?"""
    if policy == "none":
        return offset_ms == 0.0
    if policy in ("shift", "gate"):
        return offset_ms == shift_ms
    steps = offset_ms / quantum_ms  # random: on the grid, within the period
    return 0.0 <= offset_ms < period_ms and abs(steps - round(steps)) < 1e-6


# -- bodies that exercise the rules ------------------------------------------------------------


def choose(valid: list, invalid: list):
    """A valid alternative three times as often as an invalid one."""
    return st.one_of(st.sampled_from(valid), st.sampled_from(valid), st.sampled_from(valid),
                     st.sampled_from(invalid))


GOOD_FLOW = {"dpid": 0x101, "src_ip": "10.0.0.1", "dst_ip": "10.0.0.2", "tcp_src": 5701}
GOOD_JOB = {"name": "fz", "period_ms": 200, "comm_ms": 60, "workers": ["h1", "h2"], "flows": [GOOD_FLOW]}
FLOW_FIELDS = {
    "dpid": choose([0, 1, 0x101, MAX_DPID], [-1, MAX_DPID + 1, 1.0, "1", True, None]),
    "src_ip": choose(["10.0.0.1", "0.0.0.0", "255.255.255.255"],
                     ["10.0.0.256", "010.0.0.1", "10.0.0", " 10.0.0.1", "10.0.0.1\n", 167772161, "::1"]),
    "dst_ip": choose(["10.0.0.2", "192.168.10.20"], ["10.0.0.2.", "", None]),
    "tcp_src": choose([1, 5701, 65535], [0, 65536, 5701.0, "5701", False]),
    "tcp_dst": choose([None, 1, 5201, 65535], [0, 70000, 5201.5, "any"]),
    "proto": choose(["tcp", "udp"], ["TCP", "icmp", None, ["tcp"]]),
}
JOB_FIELDS = {
    "name": choose(["b", "job-1", "J_2.x", "x" * 32, "0", "fz"], [".x", "x" * 33, "a b", "", "a/b", 7, None]),
    "period_ms": choose([200, 250.5, 1000, 2.5, 600_000, 600_000.0],
                        [0, -1, 0.4, 600_000.5, "200", True, None, [200]]),
    "comm_ms": choose([60, 0.5, 1, 99.9, 150], [0.4, 0, -3, 1e9, "60", None]),
    "workers": choose([["h1"], ["h3", "h1", "h2"], ["leaf-1.h_2"], ["w" * 64]],
                      [[], ["h1", "h1"], ["w" * 65], [""], "h1", [1], ["h 1"]]),
}
ONCE_IN_TWELVE = st.sampled_from([False] * 11 + [True])


@st.composite
def flows(draw):
    """1-3 flows, each a good flow with up to two fields replaced or dropped; sometimes none."""
    count = draw(st.sampled_from([1, 1, 1, 2, 3, 0]))
    out = []
    for _ in range(count):
        flow = dict(GOOD_FLOW)
        for key in draw(st.lists(st.sampled_from(sorted(FLOW_FIELDS)), max_size=2, unique=True)):
            if draw(ONCE_IN_TWELVE) and key in flow:
                del flow[key]
            else:
                flow[key] = draw(FLOW_FIELDS[key])
        if draw(ONCE_IN_TWELVE):
            flow["vlan"] = 7  # not a flow field
        out.append(flow)
    return out


@st.composite
def job_docs(draw) -> dict:
    """A good job with up to three of its fields replaced (or dropped), as a JSON object."""
    doc = dict(GOOD_JOB)
    for key in draw(st.lists(st.sampled_from([*sorted(JOB_FIELDS), "flows"]), max_size=3, unique=True)):
        if draw(ONCE_IN_TWELVE):
            del doc[key]
        elif key == "flows":
            doc[key] = draw(st.one_of(flows(), flows(), flows(), st.sampled_from(["x", {}, [7]])))
        else:
            doc[key] = draw(JOB_FIELDS[key])
    if draw(ONCE_IN_TWELVE):
        doc["perod_ms"] = 200  # not a job field
    return doc


def policy_fields(now_s: float, exact_bounds: bool) -> dict:
    """Each option's alternatives; ``exact_bounds`` adds epochs on the bounds (for a fixed clock)."""
    epochs_ok = [now_s - 3000, now_s - 1, now_s, now_s + 5.5, now_s + 3000]
    epochs_bad = [now_s - 3900, now_s + 3900, 0, "now", None]
    if exact_bounds:
        epochs_ok.append(now_s + MAX_EPOCH_SKEW_S)
        epochs_bad.append(now_s - MAX_EPOCH_SKEW_S)
    return {
        "policy": choose(list(BUILT_IN_POLICIES), ["fast", "Gate", "", 1, None]),
        "epoch_s": choose(epochs_ok, epochs_bad),
        "start_in_s": choose([0, 0.5, 2, 600], [-0.1, 600.1, "2", None]),
        "seed": choose([0, 7, 2**63 - 1], [-1, 2**63, 1.5, "1"]),
        "mode": choose(["block", "floor"], ["half", None, "BLOCK"]),
        "floor_kbps": choose([1, 1000, 10_000_000], [0, 10_000_001, 1000.0, -5]),
        "floor_burst_ms": choose([0.5, 250, 1000, 60_000], [0, -250, 60_000.5, "250"]),
        # 140 and 1000: valid, but with the 200 ms job of GOOD_JOB (60 ms burst) a gate window is
        # not shorter than the period, so a gate is refused
        "guard_ms": choose([0, 2.5, 100, 139.5, 140, 1000], [-0.1, 1000.1, "0"]),
        # 150: a 60 ms burst rounds to 0 quanta; 10 000 and 1e-5: valid, but unschedulable
        "quantum_ms": choose([1, 0.5, 2, 10, 0.25, 150, 10_000, 1e-5], [0, -1, 10_000.5, "1"]),
        "toggle": choose(["meter", "delete", "modify"], ["flip", True]),
        "advance_ms": choose([0, 1.5, 50], [50.5, -1, None]),
    }


@st.composite
def policy_docs(draw, now_s: float, exact_bounds: bool = True) -> dict:
    """A good policy with up to four options set to alternatives (or the policy dropped)."""
    fields = policy_fields(now_s, exact_bounds)
    doc = {"policy": draw(st.sampled_from(BUILT_IN_POLICIES))}
    for key in draw(st.lists(st.sampled_from(sorted(fields)), max_size=4, unique=True)):
        if key == "policy" and draw(ONCE_IN_TWELVE):
            del doc[key]
        else:
            doc[key] = draw(fields[key])
    if draw(ONCE_IN_TWELVE):
        doc["colour"] = "red"  # not a policy option
    return doc


def encoded(docs) -> st.SearchStrategy[bytes]:
    return docs.map(lambda doc: json.dumps(doc).encode())


# -- bodies at the edges of the parser and the gate: always refused (400, or 409 for a good gate) --

HUGE = 10**400  # an integer literal beyond any float: out of every range


def signed_huge(negative: bool) -> int:
    return -HUGE if negative else HUGE


HUGE_INTEGERS = st.booleans().map(signed_huge)
NESTING = 100_000  # levels: far past the parser's recursion limit (about 1000)


def nested_too_deep(where: str) -> bytes:
    """Valid JSON nested ``NESTING`` levels deep: bare arrays or objects, or as a field's value."""
    arrays = b"[" * NESTING + b"]" * NESTING
    return {"arrays": arrays, "objects": b'{"a": ' * NESTING + b"1" + b"}" * NESTING,
            "period_ms": b'{"name": "fz", "period_ms": ' + arrays + b"}",
            "mode": b'{"policy": "gate", "mode": ' + arrays + b"}"}[where]


NESTED_TOO_DEEP = st.sampled_from(["arrays", "objects", "period_ms", "mode"]).map(nested_too_deep)
JOB_NUMBERS = ("period_ms", "comm_ms")
FLOW_NUMBERS = ("dpid", "tcp_src", "tcp_dst")


@st.composite
def with_huge_number(draw, docs, keys: tuple, flow_keys: tuple = ()) -> dict:
    """A document from ``docs`` with one number field (of its only flow, for ``flow_keys``)
    set to an integer beyond any float, of either sign."""
    doc = draw(docs)
    value = draw(HUGE_INTEGERS)
    key = draw(st.sampled_from([*keys, *flow_keys]))
    if key in flow_keys:
        doc["flows"] = [{**GOOD_FLOW, key: value}]
    else:
        doc[key] = value
    return doc


@st.composite
def long_gate_windows(draw) -> dict:
    """A gate whose window for GOOD_JOB (200 ms period, 60 ms burst), widened by ``guard_ms``,
    is not shorter than the period; the other options good."""
    doc = {"policy": "gate", "guard_ms": draw(st.sampled_from([140, 140.0, 140.5, 500, 1000]))}
    if draw(st.booleans()):
        doc["mode"] = "floor"
    if draw(st.booleans()):
        doc["toggle"] = draw(st.sampled_from(["delete", "modify"]))
    return doc


def job_edges() -> st.SearchStrategy[bytes]:
    return NESTED_TOO_DEEP | encoded(with_huge_number(job_docs(), JOB_NUMBERS, FLOW_NUMBERS))


def policy_edges(now_s: float, exact_bounds: bool = True) -> st.SearchStrategy[bytes]:
    numbers = ("epoch_s", "start_in_s", *POLICY_NUMBERS)
    return (NESTED_TOO_DEEP | encoded(with_huge_number(policy_docs(now_s, exact_bounds), numbers))
            | encoded(long_gate_windows()))


@st.composite
def bodies(draw, docs, others, edges):
    """Mostly (four in seven) an encoded document from ``docs``, else a body from ``others``
    (two in seven) or from ``edges`` (one in seven)."""
    kind = draw(st.sampled_from(["doc"] * 4 + ["other"] * 2 + ["edge"]))
    if kind == "doc":
        return draw(encoded(docs))
    return draw(others if kind == "other" else edges)
