"""Generated scenario files: `plan`, and `run` up to the point where it needs root, answer every one
with exit 0 (or run's "needs root") or with exit 2 and one line naming the field — never a traceback.

The scenarios are YAML-ish documents mixing good values, numbers out of bounds (the fabric
builder's, the schedule's), wrong types, bad job names, unknown and missing keys. `run` is
called in-process with the root check answering "not root", so no fabric is ever built,
and a guard fails the test if the run got past its input checks anyway.
"""

import math

import pytest
import yaml
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from scenarios import cli
from scenarios.experiment import session

JUNK = st.one_of(st.none(), st.booleans(), st.text(max_size=6), st.lists(st.integers(), max_size=2),
                 st.dictionaries(st.text(max_size=3), st.integers(), max_size=1))
HUGE = st.sampled_from([10**400, 1e300, -1e300, math.inf, math.nan])
COUNTS = st.one_of(st.integers(1, 4), st.integers(1, 4), st.integers(-2, 0), st.integers(250, 5000), HUGE, JUNK,
                   st.floats(0.5, 3))
RATES = st.one_of(st.floats(1, 200), st.floats(1, 200), st.floats(900, 3000), st.integers(-3, 3), HUGE, JUNK)
TIMES_MS = st.one_of(st.floats(20, 2000), st.floats(20, 2000), st.integers(1, 10**6), st.floats(-5, 1e-3),
                     st.sampled_from([0, 1e-9, 600_001]), HUGE, JUNK)
JOB_NAMES = st.one_of(st.sampled_from(["a", "b", "c", "job-1.x"]), st.sampled_from(["a", "b", "c"]),
                      st.sampled_from(["../up", ".hidden", "a/b", "a b", "x" * 33, ""]), st.text(max_size=40), JUNK)
HOSTS = st.sampled_from([f"h{i}" for i in range(1, 10)])
WORKERS = st.one_of(st.lists(HOSTS, max_size=4), st.lists(HOSTS, min_size=2, max_size=3, unique=True),
                    st.lists(st.one_of(st.text(max_size=4), st.integers()), max_size=3), JUNK)


def optional(required: dict, extra: dict) -> st.SearchStrategy:
    """A mapping with the ``required`` keys (now and then one missing), some ``extra`` keys and,
    rarely, an unknown key."""
    def shape(doc: dict, missing: str | None, unknown: bool) -> dict:
        doc = {key: value for key, value in doc.items() if key != missing}
        return {**doc, "perod_ms": 1} if unknown else doc

    missing = st.one_of(st.none(), st.none(), st.none(), st.sampled_from(sorted(required)))
    return st.builds(shape, st.fixed_dictionaries(required, optional=extra), missing,
                     st.sampled_from([False] * 9 + [True]))


FABRIC = optional(
    {"spines": COUNTS, "leaves": COUNTS, "hosts_per_leaf": COUNTS, "host_link_mbps": RATES, "fabric_link_mbps": RATES},
    {"queue_ms": st.one_of(st.floats(1, 100), st.floats(5000, 20000), HUGE, JUNK),
     "tcp_rto_min_ms": st.one_of(st.floats(1, 200), st.floats(-5, 0.99), st.floats(1001, 1e6), HUGE, JUNK)})
JOB_VALUES = {
    "name": JOB_NAMES, "period_ms": TIMES_MS, "comm_ms": TIMES_MS, "workers": WORKERS,
    "pattern": st.sampled_from(["ring", "ps", "mesh", 3]), "pin_spine": st.one_of(st.integers(-1, 5), JUNK),
    "gradient_mb": st.one_of(st.floats(0.1, 50), HUGE, JUNK),
    "jitter_ms": st.one_of(st.floats(0, 5), st.floats(-5, 0), HUGE, JUNK),
    "model": st.one_of(st.sampled_from(["resnet50", "bert-large", "vgg16"]), JUNK),
    "model_workers": st.one_of(st.integers(-1, 64), st.just(10**400), JUNK),
    "model_link_mbps": st.one_of(st.floats(100, 100_000), st.floats(1e-12, 1e-3), HUGE, JUNK),
    "time_scale": st.one_of(st.floats(0.01, 10), st.floats(1e3, 1e9), HUGE, JUNK),
    "perod_ms": TIMES_MS,
}
TOP_VALUES = {
    "name": st.one_of(st.sampled_from(["s", "demo/../x"]), JUNK),
    "quantum_ms": st.one_of(st.floats(1, 10), st.floats(1e-12, 1e-3), st.floats(500, 1e6), HUGE, JUNK),
    "fabric": st.one_of(FABRIC, JUNK),
    "jobs": st.one_of(st.lists(optional({"name": JOB_NAMES, "period_ms": TIMES_MS, "comm_ms": TIMES_MS},
                                        {"workers": WORKERS}), max_size=3), JUNK),
    "policies": st.one_of(st.lists(st.sampled_from(["none", "shift", "gate", "random", "shfit"]), max_size=3), JUNK),
    "policy_files": st.one_of(st.just([]), st.lists(st.text(max_size=8), max_size=1), JUNK),
    "duration_s": st.one_of(st.floats(1, 60), st.floats(3600, 1e9), HUGE, JUNK),
    "description": st.one_of(st.text(max_size=20), JUNK),
}
FABRIC_VALUES = {"spines": COUNTS, "leaves": COUNTS, "hosts_per_leaf": COUNTS, "host_link_mbps": RATES,
                 "fabric_link_mbps": RATES, "queue_ms": st.one_of(st.floats(1, 100), st.floats(5000, 20000), HUGE, JUNK),
                 "spine": COUNTS}


@st.composite
def runnable(draw) -> dict:
    """A scenario `run` accepts up to its root check: every job crosses leaf1's uplink to spine1."""
    hosts_per_leaf = draw(st.integers(1, 3))
    doc = {"name": "s", "quantum_ms": draw(st.sampled_from([1, 2, 5])),
           "fabric": {"spines": draw(st.integers(1, 2)), "leaves": draw(st.integers(2, 3)),
                      "hosts_per_leaf": hosts_per_leaf, "host_link_mbps": draw(st.floats(10, 100)),
                      "fabric_link_mbps": draw(st.floats(10, 100))},
           "jobs": []}
    for i in range(draw(st.integers(1, 3))):
        workers = [f"h{1 + i % hosts_per_leaf}", f"h{hosts_per_leaf + 1 + i % hosts_per_leaf}"]
        if draw(st.booleans()):
            period_ms = draw(st.integers(100, 2000))
            job = {"period_ms": period_ms, "comm_ms": draw(st.integers(10, period_ms // 3))}
        else:
            job = {"model": draw(st.sampled_from(["resnet50", "bert-large"]))}
        doc["jobs"].append({"name": f"j{i}", **job, "workers": workers})
    return doc


@st.composite
def mutated(draw) -> dict:
    """A runnable scenario with up to two fields replaced (any value, in bounds or not) or removed."""
    doc = draw(runnable())
    for _ in range(draw(st.integers(0, 2))):
        where = draw(st.sampled_from(["top", "fabric", "job"]))
        jobs = [job for job in doc.get("jobs") or () if isinstance(job, dict)] if isinstance(doc.get("jobs"), list) else []
        if where == "top":
            target, values = doc, TOP_VALUES
        elif where == "fabric" and isinstance(doc.get("fabric"), dict):
            target, values = doc["fabric"], FABRIC_VALUES
        elif where == "job" and jobs:
            target, values = draw(st.sampled_from(jobs)), JOB_VALUES
        else:
            continue  # an earlier change removed what this one would edit
        key = draw(st.sampled_from(sorted(values)))
        if draw(st.integers(0, 4)) == 0:
            target.pop(key, None)
        else:
            target[key] = draw(values[key])
    return doc


ANY_SCENARIO = optional({"name": TOP_VALUES["name"], "jobs": TOP_VALUES["jobs"]},
                        {key: values for key, values in TOP_VALUES.items() if key not in ("name", "jobs")})
DOCUMENTS = st.one_of(mutated(), mutated(), mutated(), ANY_SCENARIO, JUNK)


@pytest.fixture
def not_root(monkeypatch):
    """`run` stops at its root check (exit 1); getting past it would build a fabric: fail instead."""
    monkeypatch.setattr(session.os, "geteuid", lambda: 1000)

    def no_fabric():
        raise AssertionError("run got past its input checks to preflight")
    monkeypatch.setattr(session, "preflight", no_fabric)


def outcome(capsys, argv: list[str]) -> tuple[int, list[str]]:
    capsys.readouterr()  # what earlier examples left
    status = cli.main(argv)
    return status, capsys.readouterr().err.splitlines()


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(DOCUMENTS)
def test_plan_and_run_answer_every_generated_scenario_in_one_line(tmp_path, capsys, not_root, doc):
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(doc))
    status, err = outcome(capsys, ["plan", str(path)])
    event(f"plan: exit {status}")
    assert (status, err) == (0, []) or (status == 2 and len(err) == 1 and err[0].startswith("shiftbed plan: ")), \
        (status, err)

    out = tmp_path / "results"
    status, err = outcome(capsys, ["run", str(path), "--out", str(out)])
    event(f"run: exit {status}")
    assert status in (1, 2) and len(err) == 1, (status, err)
    expected = "shiftbed run: building a fabric needs root" if status == 1 else "shiftbed run: "
    assert err[0].startswith(expected), (status, err)
    assert not out.exists()
