"""Scenario validation: one test per bad-input class (issue 6), one line naming file and field."""

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


def test_fabric_queue_depth_is_optional_and_checked():
    deep = spec.parse(GOOD.replace("fabric_link_mbps: 50}", "fabric_link_mbps: 50, queue_ms: 25}"), "s.yaml")
    assert deep.fabric.queue_ms == 25.0
    assert "fabric.queue_ms: must be > 0" in error_of(GOOD.replace("fabric_link_mbps: 50}",
                                                                   "fabric_link_mbps: 50, queue_ms: 0}"))
    assert "fabric.queue_ms: must be <= 10000" in error_of(GOOD.replace("fabric_link_mbps: 50}",
                                                                        "fabric_link_mbps: 50, queue_ms: 20000}"))


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
