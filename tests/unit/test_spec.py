"""Scenario validation: one test per bad-input class, one line naming file and field."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from scenarios import spec
from scenarios.errors import InputError

REPO = Path(__file__).resolve().parents[2]
SHIFTBED = REPO / ".venv" / "bin" / "shiftbed"
GOOD = """\
name: two
quantum_ms: 1
fabric: {spines: 1, leaves: 2, hosts_per_leaf: 2, host_link_mbps: 50, fabric_link_mbps: 50}
jobs:
  - {name: alpha, period_ms: 400, comm_ms: 150, workers: [h1, h3]}
  - {name: beta, period_ms: 800, comm_ms: 200, workers: [h2, h4]}
"""


def error_of(text: str) -> str:
    with pytest.raises(InputError) as exc:
        spec.parse(text, "s.yaml")
    message = str(exc.value)
    assert "\n" not in message and message.startswith("s.yaml: ")
    return message


def test_good_scenario_parses_into_typed_objects():
    s = spec.parse(GOOD, "s.yaml")
    assert s.fabric.hosts == ("h1", "h2", "h3", "h4")
    assert [j.name for j in s.jobs] == ["alpha", "beta"]
    assert s.timings()[1].comm_ms == 200
    s.require_runnable()
    assert s.fabric.queue_ms is None  # the fabric's own default


@pytest.mark.parametrize("pattern, n_workers, runnable", [
    ("ring", 10, True),  # a ring sends one flow per worker: 10 flows, the 10 ports a job has
    ("ring", 11, False),  # 11 flows: the 11th would take the next job's first port
    ("ps", 6, True),  # a parameter server: 5 pushes then 5 pulls, 2(n - 1) = 10 flows
    ("ps", 7, False),  # 12 flows
])
def test_a_job_has_ten_server_ports_so_at_most_ten_flows(pattern, n_workers, runnable):
    workers = ", ".join(f"h{k}" for k in range(1, n_workers + 1))
    s = spec.parse(f"""\
name: wide
fabric: {{spines: 1, leaves: 2, hosts_per_leaf: 8, host_link_mbps: 50, fabric_link_mbps: 50}}
jobs:
  - {{name: alpha, period_ms: 400, comm_ms: 150, pattern: {pattern}, workers: [{workers}]}}
""", "s.yaml")
    if runnable:
        s.require_runnable()
        return
    with pytest.raises(InputError) as exc:
        s.require_runnable()
    assert str(exc.value).startswith("s.yaml: jobs[0].workers: ") and "more than the 10 ports" in str(exc.value)


def test_fabric_queue_depth_is_optional_and_checked():
    deep = spec.parse(GOOD.replace("fabric_link_mbps: 50}", "fabric_link_mbps: 50, queue_ms: 25}"), "s.yaml")
    assert deep.fabric.queue_ms == 25.0
    assert "fabric.queue_ms: must be > 0" in error_of(GOOD.replace("fabric_link_mbps: 50}",
                                                                   "fabric_link_mbps: 50, queue_ms: 0}"))
    assert "fabric.queue_ms: must be in (0, 10000] ms" in error_of(GOOD.replace("fabric_link_mbps: 50}",
                                                                        "fabric_link_mbps: 50, queue_ms: 20000}"))


def test_hosts_minimum_rto_is_optional_and_checked():
    assert spec.parse(GOOD, "s.yaml").fabric.tcp_rto_min_ms is None  # the kernel's own (200 ms)
    datacentre = spec.parse(GOOD.replace("fabric_link_mbps: 50}", "fabric_link_mbps: 50, tcp_rto_min_ms: 10}"),
                            "s.yaml")
    assert datacentre.fabric.tcp_rto_min_ms == 10.0
    for bad in ("0.5", "5000", "true"):
        message = error_of(GOOD.replace("fabric_link_mbps: 50}", f"fabric_link_mbps: 50, tcp_rto_min_ms: {bad}}}"))
        assert message.startswith("s.yaml: fabric.tcp_rto_min_ms: "), message


def test_transport_is_optional_and_checked():
    assert spec.parse(GOOD, "s.yaml").transport == "iperf3"  # a fresh iperf3 test per burst
    assert spec.parse("transport: persistent\n" + GOOD, "s.yaml").transport == "persistent"
    for bad in ("udp", "1", "[persistent]"):
        message = error_of(f"transport: {bad}\n" + GOOD)
        assert message.startswith("s.yaml: transport: must be one of iperf3, persistent, got "), message


@pytest.mark.parametrize("text, field, words", [
    ("name: x\njobs: [\n", "line", "YAML syntax error"),
    ("", "(top level)", "empty file"),
    ("- a\n- b\n", "(top level)", "expected a mapping"),
    ("jobs:\n  - {name: a, period_ms: 10, comm_ms: 2}\n", "name", "missing required key"),
    (GOOD.replace("period_ms: 400", "perod_ms: 400"), "jobs[0].perod_ms", "did you mean 'period_ms'"),
    (GOOD.replace("period_ms: 400", "period_ms: fast"), "jobs[0].period_ms", "must be a number"),
    (GOOD.replace("period_ms: 400", "period_ms: 0"), "jobs[0].period_ms", "must be > 0"),
    (GOOD.replace("period_ms: 400", "period_ms: -5"), "jobs[0].period_ms", "must be > 0"),
    (GOOD.replace("period_ms: 400", "period_ms: .inf"), "jobs[0].period_ms", "finite"),
    (GOOD.replace("period_ms: 400", "period_ms: .nan"), "jobs[0].period_ms", "finite"),
    (GOOD.replace("comm_ms: 150", "comm_ms: 400"), "jobs[0].comm_ms", "less than period_ms"),
    (GOOD.replace("quantum_ms: 1", "quantum_ms: 0"), "quantum_ms", "must be > 0"),
    (GOOD.replace("quantum_ms: 1", "quantum_ms: 300"), "jobs[0].comm_ms", "rounds up"),
    (GOOD.replace("name: beta", "name: alpha"), "jobs[1].name", "duplicate job name"),
    (GOOD.replace("[h2, h4]", "[h2, h9]"), "jobs[1].workers[1]", "not a host of the fabric"),
    (GOOD.replace("[h2, h4]", "[h2, h2]"), "jobs[1].workers[1]", "used twice"),
    (GOOD.replace("spines: 1", "spines: two"), "fabric.spines", "whole number"),
    (GOOD.replace("jobs:", "policies: [shfit]\njobs:"), "policies[0]", "did you mean 'shift'"),
    (GOOD.replace("period_ms: 400, comm_ms: 150", "model: resnet5O"), "jobs[0].model", "did you mean"),
])
def test_each_bad_input_class_is_one_line_naming_the_field(text, field, words):
    message = error_of(text)
    assert f": {field}" in message and words in message, message


@pytest.mark.parametrize("name", ["a/b", "../up", "..", ".hidden", "a b", "x" * 33, "", "tab\there", "naïve",
                                  "line\nbreak", 7, None, ["a"]])
def test_job_names_outside_the_rule_are_refused(name):
    text = GOOD.replace("name: beta", "name: PLACEHOLDER").replace("PLACEHOLDER", json.dumps(name))
    message = error_of(text)
    assert message.startswith("s.yaml: jobs[1].name: must be 1-32 characters of letters, digits, '-', '_', '.', "
                              "not starting with '.', got "), message


@pytest.mark.parametrize("name", ["a", "job-1_x.y", "x" * 32, "1", "A.b."])
def test_job_names_inside_the_rule_are_kept(name):
    assert spec.parse(GOOD.replace("name: beta", f"name: {json.dumps(name)}"), "s.yaml").jobs[1].name == name


def test_the_rest_api_applies_the_same_name_rule():
    from controller.scheduler import ApiError, validate_job

    body = {"period_ms": 200, "comm_ms": 60, "workers": ["h1"],
            "flows": [{"dpid": 1, "src_ip": "10.0.0.1", "dst_ip": "10.0.0.2", "tcp_src": 5000}]}
    for name in ("../up", ".hidden", "x" * 33, "a\n"):
        with pytest.raises(ApiError) as info:
            validate_job({**body, "name": name})
        spec_message = error_of(GOOD.replace("name: beta", f"name: {json.dumps(name)}"))
        assert info.value.message == "job.name: " + spec_message.split("jobs[1].name: ", 1)[1]
    assert validate_job({**body, "name": "x" * 32}).name == "x" * 32


@pytest.mark.parametrize("change, field", [
    ({"host_link_mbps": 2000}, "host_link_mbps"),
    ({"fabric_link_mbps": 1000.5}, "fabric_link_mbps"),
    ({"leaves": 300}, "leaves"),
    ({"spines": 256}, "spines"),
    ({"hosts_per_leaf": 3000}, "hosts_per_leaf"),
    ({"queue_ms": 10_001}, "queue_ms"),
    ({"tcp_rto_min_ms": 1001}, "tcp_rto_min_ms"),
])
def test_fabric_bounds_are_the_fabric_builders(change, field):
    """The schema refuses exactly what FabricParams / the topology refuse, with their words."""
    from topo.wiring import FabricParamError, FabricParams, check_queue_ms, check_tcp_rto_min_ms

    fabric = {"spines": 1, "leaves": 2, "hosts_per_leaf": 2, "host_link_mbps": 50, "fabric_link_mbps": 50, **change}
    text = GOOD.replace(GOOD.splitlines()[2], "fabric: " + json.dumps(fabric))
    message = error_of(text)
    with pytest.raises(FabricParamError) as info:
        queue_ms = fabric.pop("queue_ms", 20)
        rto_min_ms = fabric.pop("tcp_rto_min_ms", 200)
        FabricParams(**fabric)
        check_queue_ms(float(queue_ms))
        check_tcp_rto_min_ms(float(rto_min_ms))
    assert message == f"s.yaml: fabric.{info.value}", (message, str(info.value))


def test_the_largest_fabric_inside_the_bounds_is_accepted():
    from topo.wiring import MAX_HOSTS, MAX_LINK_MBPS, MAX_QUEUE_MS, MAX_SWITCHES_PER_TIER

    fabric = {"spines": MAX_SWITCHES_PER_TIER, "leaves": 16, "hosts_per_leaf": MAX_HOSTS // 16,
              "host_link_mbps": MAX_LINK_MBPS, "fabric_link_mbps": MAX_LINK_MBPS, "queue_ms": MAX_QUEUE_MS}
    s = spec.parse(GOOD.replace(GOOD.splitlines()[2], "fabric: " + json.dumps(fabric)), "s.yaml")
    assert len(s.fabric.hosts) == MAX_HOSTS and isinstance(s.fabric, spec.FabricSpec)


@pytest.mark.parametrize("text, field, words", [
    (GOOD.replace("quantum_ms: 1", "quantum_ms: 1.0e-9"), "jobs[0].period_ms", "more than 5000000 quanta"),
    (GOOD.replace("quantum_ms: 1", f"quantum_ms: {10**400}"), "quantum_ms", "must be finite"),
    (GOOD.replace("period_ms: 400", "period_ms: 700000"), "jobs[0].period_ms", "must be <= 600000"),
    (GOOD.replace("jobs:", "duration_s: 1.0e+9\njobs:"), "duration_s", "must be <= 3600"),
    (GOOD.replace("period_ms: 400, comm_ms: 150", f"model: resnet50, model_workers: {10**400}"),
     "jobs[0].model_workers", "must be <= 100000"),
    (GOOD.replace("period_ms: 400, comm_ms: 150", "model: resnet50, time_scale: 1.0e+6"),
     "jobs[0].model", "more than the 600000 ms a job may have"),
    ("name: many\njobs:\n" + "".join(f"  - {{name: j{i}, period_ms: 10, comm_ms: 1}}\n" for i in range(65)),
     "jobs", "at most 64 jobs, got 65"),
    ("name: big\nquantum_ms: 0.1\njobs:\n"
     + "".join(f"  - {{name: j{i}, period_ms: 2000, comm_ms: 10}}\n" for i in range(40)),
     "jobs", "40 jobs with periods of 800000 quanta of 0.1 ms in all need 31200000 cells"),
])
def test_values_beyond_what_can_be_computed_are_refused(text, field, words):
    message = error_of(text)
    assert f"s.yaml: {field}: " in message and words in message, message


@pytest.mark.parametrize("key", ["\x1e", "a\u2028b", "line\nbreak", 7])
def test_an_unknown_key_is_named_on_one_line_whatever_it_holds(key):
    message = error_of(GOOD.replace("name: two", f"name: two\n{json.dumps(key)}: 1"))
    assert f"s.yaml: {key!r}: unknown key" in message and len(message.splitlines()) == 1, message


def test_missing_file_names_the_file(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        spec.load(tmp_path / "nope.yaml")


def test_model_job_gets_times_from_the_zoo():
    s = spec.parse(GOOD.replace("period_ms: 400, comm_ms: 150", "model: resnet50"), "s.yaml")
    alpha = s.jobs[0]
    # 2 workers: each sends 2(2-1)/2 = 1 gradient (102 MB) at 10 Gbit/s = 81.6 ms, + 213 ms compute
    assert alpha.comm_ms == pytest.approx(81.6) and alpha.period_ms == pytest.approx(294.6)


def shiftbed(*args):
    return subprocess.run([str(SHIFTBED), *args], capture_output=True, text=True, timeout=60, cwd=REPO)


@pytest.mark.parametrize("text, field", [
    ("name: x\njobs: [\n", "line"),
    (GOOD.replace("period_ms: 400", "perod_ms: 400"), "jobs[0].perod_ms"),
    (GOOD.replace("[h2, h4]", "[h2, h9]"), "jobs[1].workers[1]"),
    (GOOD.replace("comm_ms: 150", "comm_ms: 400"), "jobs[0].comm_ms"),
])
def test_cli_refuses_bad_scenarios_with_exit_2_and_one_line(tmp_path, text, field):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    done = shiftbed("plan", str(path), "--json")
    assert done.returncode == 2 and done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and str(path) in lines[0] and field in lines[0], done.stderr


def test_cli_missing_file_and_beyond_exact_method(tmp_path):
    done = shiftbed("plan", str(tmp_path / "missing.yaml"))
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1
    jobs = "".join(f"  - {{name: j{i}, period_ms: {p}, comm_ms: 3}}\n" for i, p in enumerate([11, 13, 17, 19, 23, 29, 31]))
    path = tmp_path / "big.yaml"
    path.write_text(f"name: big\njobs:\n{jobs}")
    done = shiftbed("plan", str(path))
    assert done.returncode == 2 and "beyond the exact method" in done.stderr and "heuristic" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    done = shiftbed("plan", str(path), "--heuristic", "--json")
    assert done.returncode == 0, done.stderr


def test_the_readme_scenario_example_is_valid():
    readme = (REPO / "README.md").read_text()
    example = readme.split("## Writing a scenario", 1)[1].split("```yaml\n", 1)[1].split("```", 1)[0]
    s = spec.parse(example, "README.md")
    s.require_runnable()
    assert [j.name for j in s.jobs] == ["alpha", "bert"] and s.fabric.queue_ms == 20


if __name__ == "__main__":
    sys.exit(pytest.main([__file__]))


KNOB_BASE = "name: k\njobs:\n  - {name: a, period_ms: 300, comm_ms: 100}\n  - {name: b, period_ms: 600, comm_ms: 150}\n"


def test_scenario_knobs_and_the_default_policies():
    from controller.theory.policies import DEFAULT_GUARD_MS, PolicyKnobs

    plain = spec.parse(KNOB_BASE, "k.yaml")
    assert plain.knobs == PolicyKnobs(DEFAULT_GUARD_MS, None)
    assert plain.policies == ("none", "shift", "gate", "random")  # not every registered policy
    set_ = spec.parse(KNOB_BASE + "guard_ms: 0\nrealign_s: 2.5\n", "k.yaml")
    assert set_.knobs == PolicyKnobs(0.0, 2.5)


@pytest.mark.parametrize("extra, field", [("guard_ms: -1", "guard_ms"), ("guard_ms: 200", "guard_ms"),
                                          ("guard_ms: abc", "guard_ms"), ("realign_s: 0", "realign_s"),
                                          ("realign_s: -3", "realign_s")])
def test_bad_knobs_are_one_line_naming_the_key(extra, field):
    with pytest.raises(InputError) as err:
        spec.parse(KNOB_BASE + extra + "\n", "k.yaml")
    msg = str(err.value)
    assert msg.startswith(f"k.yaml: {field}:") and "\n" not in msg
