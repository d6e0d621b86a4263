"""`shiftbed trace FILE`: a profiler trace's phases, its busy strip, --json, --out, one-line errors.

The command runs as a subprocess with the venv's `shiftbed`, as a user runs it.
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

TRACES = Path(__file__).resolve().parents[1] / "fixtures" / "traces"
GLOO_TRACE = TRACES / "gloo_ddp_rank0.json.gz"
NCCL_TRACE = TRACES / "nccl_hand_built.json"
SHIFTBED = Path(sys.executable).with_name("shiftbed")


def shiftbed_trace(*args):
    return subprocess.run([str(SHIFTBED), "trace", *map(str, args)], capture_output=True, text=True, timeout=120)


def strip_of(stdout: str) -> str:
    """The strip line of the text output: ``  |...##...|``."""
    lines = [line.strip() for line in stdout.splitlines() if line.strip().startswith("|")]
    assert len(lines) == 1, stdout
    return lines[0].strip("|")


@pytest.mark.parametrize("trace, phases", [(GLOO_TRACE, ["gloo:all_reduce #1", "gloo:all_reduce #2",
                                                          "gloo:all_reduce #3"]),
                                           (NCCL_TRACE, ["nccl:all_reduce #1", "nccl:all_to_all #4",
                                                         "nccl:send 0->1 #5"])])
def test_prints_the_phases_and_a_strip_of_busy_and_idle_cells(trace, phases):
    result = shiftbed_trace(trace)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    assert "steps used" in result.stdout and "start_ms" in result.stdout
    for phase in phases:
        assert phase in result.stdout
    strip = strip_of(result.stdout)
    assert len(strip) == 60 and set(strip) == {"#", "."}


def test_the_nccl_strip_is_busy_where_its_phases_start():
    # 100 ms in 60 cells of 1.667 ms: the buckets at 20-20.4 ms (cell 12), 35 ms (21), 60 ms (36), 80 ms (48)
    strip = strip_of(shiftbed_trace(NCCL_TRACE).stdout)
    assert all(strip[cell] == "#" for cell in (12, 21, 36, 48))
    assert strip[:12] == "." * 12 and strip[-5:] == "." * 5


def test_a_slow_link_is_busy_the_whole_iteration_and_says_so():
    result = shiftbed_trace(GLOO_TRACE, "--link-mbps", 50)
    assert result.returncode == 0, result.stderr
    assert strip_of(result.stdout) == "#" * 60
    assert "busy the whole iteration" in result.stdout


def test_quantum_sets_the_cells():
    result = shiftbed_trace(NCCL_TRACE, "--quantum-ms", 5)
    assert result.returncode == 0, result.stderr
    assert len(strip_of(result.stdout)) == 20


def test_json_is_one_object_with_the_job_steps_notes_and_strip():
    result = shiftbed_trace(GLOO_TRACE, "--json")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    job = doc["job"]
    assert len(job["phases"]) == 3
    assert [p["collective"] for p in job["phases"]] == ["allreduce"] * 3
    assert job["name"] == "gloo_ddp_rank0" and job["workers"] == ["h1", "h2"]
    assert job["period_ms"] == pytest.approx(22.49, abs=0.01)
    assert doc["steps"] == [1, 2, 3, 4, 5] and doc["warmup_steps"] == [0]
    assert any("broadcast" in note for note in doc["notes"])
    assert set(doc["strip"]) == {"#", "."} and len(doc["strip"]) == doc["cells"] == 60
    assert doc["out"] is None


def test_out_writes_a_yaml_holding_the_job(tmp_path):
    out = tmp_path / "dlrm.yaml"
    result = shiftbed_trace(NCCL_TRACE, "--out", out, "--name", "dlrm", "--workers", "h1,h3")
    assert result.returncode == 0, result.stderr
    assert str(out) in result.stdout
    doc = yaml.safe_load(out.read_text())
    assert doc["name"] == "dlrm"
    [job] = doc["jobs"]
    assert job["name"] == "dlrm" and job["workers"] == ["h1", "h3"] and job["period_ms"] == 100.0
    assert [p["collective"] for p in job["phases"]] == ["allreduce", "allreduce", "allreduce", "alltoall", "p2p"]
    assert [p["message_bytes"] for p in job["phases"]] == [1048576, 1048576, 2000000, 131072, 4096]


def test_json_and_out_together_name_the_file(tmp_path):
    out = tmp_path / "gloo.yaml"
    result = shiftbed_trace(GLOO_TRACE, "--json", "--out", out)
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["out"] == str(out)
    assert yaml.safe_load(out.read_text())["jobs"] == [doc["job"]]


@pytest.mark.parametrize("case", ["missing file", "broken JSON", "no traceEvents", "negative link rate",
                                  "one worker", "zero quantum", "out in no folder"])
def test_bad_input_is_one_line_on_stderr_and_exit_2(tmp_path, case):
    broken = tmp_path / "broken.json"
    broken.write_text('{"traceEvents": [')
    no_events = tmp_path / "events.json"
    no_events.write_text('{"events": []}')
    args, expected = {
        "missing file": ([tmp_path / "absent.json"], "absent.json: no such file"),
        "broken JSON": ([broken], "broken.json: not JSON"),
        "no traceEvents": ([no_events], "events.json: no traceEvents list"),
        "negative link rate": ([NCCL_TRACE, "--link-mbps", "-1"], "--link-mbps"),
        "one worker": ([NCCL_TRACE, "--workers", "h1"], "--workers"),
        "zero quantum": ([NCCL_TRACE, "--quantum-ms", "0"], "--quantum-ms"),
        "out in no folder": ([NCCL_TRACE, "--out", tmp_path / "nowhere" / "x.yaml"], "--out"),
    }[case]
    result = shiftbed_trace(*args)
    assert result.returncode == 2
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("shiftbed trace: ") and expected in lines[0]


def test_bad_options_are_refused_before_the_trace_is_read(tmp_path):
    # the file is missing too, but the option is what is named
    result = shiftbed_trace(tmp_path / "absent.json", "--link-mbps", "-1")
    assert result.returncode == 2 and "--link-mbps" in result.stderr and "no such file" not in result.stderr
