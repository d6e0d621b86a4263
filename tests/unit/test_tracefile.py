"""Reading a PyTorch profiler (Kineto) trace into a job's phases (scenarios/tracefile.py).

The gloo fixture is a real trace of DDP on the CPU (tests/fixtures/traces/make_gloo_trace.py made it):
its phases must be DDP's buckets, whose sizes follow from the model's layers. The NCCL fixture is
hand-built with the fields NCCL's records carry. Bad input is one InputError line naming the file.
"""

import gzip
import importlib.util
import json
from pathlib import Path

import pytest

from scenarios.errors import InputError
from scenarios.tracefile import read_trace, render, scenario_job

TRACES = Path(__file__).resolve().parents[1] / "fixtures" / "traces"
GENERATOR = TRACES / "make_gloo_trace.py"
GLOO_TRACE = TRACES / "gloo_ddp_rank0.json.gz"
NCCL_TRACE = TRACES / "nccl_hand_built.json"
MIB = 1024 * 1024
FIRST_BUCKET_BYTES = 1 * MIB  # DDP's cap on its first bucket (torch.distributed._DEFAULT_FIRST_BUCKET_BYTES)


def generator():
    """The fixture's generator as a module (it imports torch only when run), for its model's sizes."""
    spec = importlib.util.spec_from_file_location("make_gloo_trace", GENERATOR)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def ddp_bucket_bytes(layers, bucket_cap_mb: float, bytes_per_element: int = 4) -> list[int]:
    """DDP's gradient buckets for a stack of Linear layers ((in, out) each), in the order they are
    all-reduced: parameters in reverse order, the first bucket capped at 1 MiB, the rest at
    ``bucket_cap_mb``; a bucket closes once it reaches its cap."""
    sizes = [n for fan_in, fan_out in layers for n in (fan_in * fan_out, fan_out)]  # weight, bias
    buckets, current, cap = [], 0, FIRST_BUCKET_BYTES
    for elements in reversed(sizes):
        current += elements * bytes_per_element
        if current >= cap:
            buckets.append(current)
            current, cap = 0, int(bucket_cap_mb * MIB)
    return buckets + ([current] if current else [])


def check_gloo_trace(job, layers, bucket_cap_mb) -> None:
    """A DDP-over-gloo trace's job: one all-reduce per bucket, of the bucket's bytes (1 %), in
    bucket order, every start within its iteration; the first step dropped as warm-up."""
    expected = ddp_bucket_bytes(layers, bucket_cap_mb)
    assert len(expected) >= 3
    assert job.warmup_steps[:1] == (0,) and len(job.step_numbers) >= 2
    assert job.workers == 2
    for pattern in (job.pattern, *job.steps):
        phases = pattern.phases
        assert [p.collective for p in phases] == ["allreduce"] * len(expected)
        assert [p.message_bytes for p in phases] == pytest.approx(expected, rel=0.01)
        starts = [p.start_ms for p in phases]
        assert starts == sorted(starts) and 0 <= starts[0] and starts[-1] < pattern.iteration_ms


def test_the_gloo_trace_gives_ddps_buckets_in_order_within_the_iteration():
    made = generator()
    job = read_trace(GLOO_TRACE)
    check_gloo_trace(job, made.LAYERS, made.BUCKET_CAP_MB)
    assert job.warmup_steps == (0,) and job.step_numbers == (1, 2, 3, 4, 5)
    assert any("broadcast" in note for note in job.notes)  # DDP's bucket rebuild syncs, left out


def test_the_bucket_rule_on_the_fixtures_model():
    # reversed: 10 + 2560 + 256 + 131072 + 512 + 262144 reaches 1 MiB of floats; then 512 + 524288; then the rest
    assert ddp_bucket_bytes(generator().LAYERS, 1) == [396554 * 4, 524800 * 4, 66560 * 4]


def test_the_nccl_trace_gives_its_collectives_bytes_and_group_size():
    assert "29, ...]" in NCCL_TRACE.read_text()  # a cut-short Process Group Ranks, which must not matter
    job = read_trace(NCCL_TRACE)
    phases = job.pattern.phases
    assert [p.collective for p in phases] == ["allreduce", "allreduce", "allreduce", "alltoall", "p2p"]
    # elements x dtype: two same-size Float buckets back to back (not merged), BFloat16, Half, Float;
    # the GPU kernel and GPU annotation of the first bucket are not counted again
    assert [p.message_bytes for p in phases] == [262144 * 4, 262144 * 4, 1_000_000 * 2, 65536 * 2, 1024 * 4]
    assert [p.start_ms for p in phases] == pytest.approx([20.0, 20.4, 35.0, 60.0, 80.0])  # medians of 3 steps
    assert job.pattern.iteration_ms == pytest.approx(100.0)
    assert job.workers == job.pattern.workers == 64
    assert job.warmup_steps == (10,) and job.step_numbers == (11, 12, 13)
    assert [len(s.phases) for s in job.steps] == [5, 5, 5]


def test_a_gzipped_trace_is_read_whatever_its_name(tmp_path):
    hidden = tmp_path / "trace.json"
    hidden.write_bytes(gzip.compress(NCCL_TRACE.read_bytes()))
    assert read_trace(hidden).pattern == read_trace(NCCL_TRACE).pattern


def test_render_and_scenario_job():
    job = read_trace(NCCL_TRACE)
    text = render(job)
    assert "3 steps used (ProfilerStep#11-#13), warm-up dropped: #10" in text
    assert "iteration 100.000 ms, 64 workers, 5 phases" in text
    assert "35.000      2.000  allreduce" in text and "60.000      0.131  alltoall" in text
    assert scenario_job(job, "dlrm", ["h1", "h2"]) == {
        "name": "dlrm", "period_ms": 100.0, "workers": ["h1", "h2"],
        "phases": [{"start_ms": 20.0, "message_bytes": 1048576, "collective": "allreduce"},
                   {"start_ms": 20.4, "message_bytes": 1048576, "collective": "allreduce"},
                   {"start_ms": 35.0, "message_bytes": 2000000, "collective": "allreduce"},
                   {"start_ms": 60.0, "message_bytes": 131072, "collective": "alltoall"},
                   {"start_ms": 80.0, "message_bytes": 4096, "collective": "p2p"}]}
    with pytest.raises(InputError, match="at least two workers"):
        scenario_job(job, "dlrm", ["h1"])


def step(n: int, start_us: float, dur_us: float = 10_000.0) -> dict:
    return {"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{n}", "pid": 1, "tid": 1,
            "ts": start_us, "dur": dur_us}


def allreduce(start_us: float, nelems: int = 1000, dtype: str = "Float") -> dict:
    return {"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 1, "tid": 1, "ts": start_us,
            "dur": 10.0, "args": {"Collective name": "allreduce", "In msg nelems": nelems,
                                  "Out msg nelems": nelems, "dtype": dtype, "Group size": 2}}


def trace(*events) -> str:
    return json.dumps({"traceEvents": list(events)})


BAD = {
    "broken JSON": ('{"traceEvents": [', "not JSON"),
    "not UTF-8": (b"\xff\xfe{", "not JSON (not UTF-8 text)"),
    "cut-off gzip": (gzip.compress(b'{"traceEvents": []}')[:15], "cannot read"),
    "no traceEvents": ('{"events": []}', "no traceEvents list"),
    "a list": ("[]", "no traceEvents list"),
    "no steps": (trace(allreduce(100)), "no ProfilerStep#N spans"),
    "no collectives": (trace(step(0, 0), step(1, 10_000), step(2, 20_000)), "no collectives"),
    "collectives in the warm-up only": (trace(step(0, 0), allreduce(100), step(1, 10_000), step(2, 20_000)),
                                        "no collectives in the profiler steps after the warm-up"),
    "one step after warm-up": (trace(step(0, 0), allreduce(100), step(1, 10_000), allreduce(10_100)),
                               "1 profiler step(s) after the warm-up"),
    "steps disagree": (trace(step(0, 0), allreduce(100), step(1, 10_000), allreduce(10_100),
                             step(2, 20_000), allreduce(20_100), allreduce(20_200),
                             step(3, 30_000), allreduce(30_100)),
                       "steps disagree on the number of collectives: ProfilerStep#1 has 1, ProfilerStep#2 has 2"),
    "unknown dtype": (trace(step(0, 0), step(1, 10_000), allreduce(10_100, dtype="Float4"),
                            step(2, 20_000), allreduce(20_100, dtype="Float4")), "dtype 'Float4' of unknown size"),
    "gloo without shapes": (trace(step(0, 0), *[e for n in (1, 2) for e in (
        step(n, n * 10_000), {"ph": "X", "cat": "user_annotation", "name": "gloo:all_reduce", "pid": 1, "tid": 2,
                              "ts": n * 10_000 + 100, "dur": 50})]),
                            "gloo:all_reduce in ProfilerStep#1: no Input Dims: profile with record_shapes=True"),
}


@pytest.mark.parametrize("content, problem", BAD.values(), ids=BAD.keys())
def test_bad_input_is_one_line_naming_the_file_and_the_problem(tmp_path, content, problem):
    path = tmp_path / "trace.json"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises(InputError) as caught:
        read_trace(path)
    message = str(caught.value)
    assert "\n" not in message and message.startswith(f"{path}: ") and problem in message


def test_a_missing_file_is_one_line(tmp_path):
    with pytest.raises(InputError, match=r"nope\.json: no such file$"):
        read_trace(tmp_path / "nope.json")
