"""Model profiles: DDP's bucket rule, the architectures' parameter tensors, and the patterns built from them."""

import json
import math
from itertools import pairwise

import pytest

from controller.theory import profiles
from controller.theory.buckets import MIB, ddp_buckets
from controller.theory.profiles import (
    parameter_count,
    parameter_shapes,
    profile,
    profile_buckets,
    profile_names,
    profile_pattern,
)

# Published totals: torchvision's model tables (ResNet, VGG) and Hugging Face's models
# (``sum(p.numel() for p in BertModel/GPT2Model(config).parameters())``).
PUBLISHED_PARAMETERS = {
    "resnet50": 25_557_032,
    "resnet101": 44_549_160,
    "vgg16": 138_357_544,
    "bert-base": 109_482_240,
    "bert-large": 335_141_888,
    "gpt2": 124_439_808,
    "gpt2-medium": 354_823_168,
}
# len(list(model.parameters())) of the same models
TENSOR_COUNTS = {"resnet50": 161, "resnet101": 314, "vgg16": 32, "bert-base": 199, "bert-large": 391,
                 "gpt2": 148, "gpt2-medium": 292}


@pytest.mark.parametrize("architecture", sorted(PUBLISHED_PARAMETERS))
def test_architectures_have_the_published_parameter_totals(architecture):
    shapes = parameter_shapes(architecture)
    assert parameter_count(shapes) == PUBLISHED_PARAMETERS[architecture]
    assert len(shapes) == TENSOR_COUNTS[architecture]
    assert len({name for name, _ in shapes}) == len(shapes)


def test_architectures_follow_the_named_parameters_layout():
    resnet = parameter_shapes("resnet50")
    assert resnet[:3] == [("conv1.weight", (64, 3, 7, 7)), ("bn1.weight", (64,)), ("bn1.bias", (64,))]
    assert resnet[-2:] == [("fc.weight", (1000, 2048)), ("fc.bias", (1000,))]
    assert ("layer1.0.downsample.0.weight", (256, 64, 1, 1)) in resnet
    assert parameter_shapes("vgg16")[-2] == ("classifier.6.weight", (1000, 4096))
    bert = parameter_shapes("bert-base")
    assert bert[0] == ("embeddings.word_embeddings.weight", (30522, 768))
    assert bert[-1] == ("pooler.dense.bias", (768,))
    gpt2 = parameter_shapes("gpt2")
    assert gpt2[:2] == [("wte.weight", (50257, 768)), ("wpe.weight", (1024, 768))]
    assert gpt2[4] == ("h.0.attn.c_attn.weight", (768, 2304))  # Conv1D: (in, out)
    assert gpt2[-1] == ("ln_f.bias", (768,))


# -- the bucket rule ------------------------------------------------------------------------------


def test_first_bucket_closes_at_one_mib_and_later_ones_at_the_cap():
    buckets = ddp_buckets([MIB // 4] * 8 + [5 * MIB] * 10)
    assert [(b.first_tensor, b.last_tensor) for b in buckets] == [(0, 3), (4, 12), (13, 17)]
    assert [b.size_bytes for b in buckets] == [MIB, MIB + 5 * 5 * MIB, 5 * 5 * MIB]  # reaching the limit closes


def test_a_large_tensor_closes_the_bucket_it_joins():
    buckets = ddp_buckets([2 * MIB, 10 * MIB, 30 * MIB, 5 * MIB])
    assert [(b.size_bytes // MIB, b.first_tensor, b.last_tensor) for b in buckets] == [(2, 0, 0), (40, 1, 2), (5, 3, 3)]
    assert ddp_buckets([MIB // 2, 100 * MIB])[0].size_bytes == MIB // 2 + 100 * MIB  # the first bucket too


def test_buckets_cover_every_tensor_once_and_ready_shares_grow_to_one():
    sizes = [3, 700_000, 12, 9 * MIB, 40 * MIB, 1, 2 * MIB, 8]
    buckets = ddp_buckets(sizes, first_bucket_bytes=MIB, cap_bytes=4 * MIB)
    assert buckets[0].first_tensor == 0 and buckets[-1].last_tensor == len(sizes) - 1
    assert all(a.last_tensor + 1 == b.first_tensor for a, b in pairwise(buckets))
    assert sum(b.size_bytes for b in buckets) == sum(sizes)
    shares = [b.ready_share for b in buckets]
    assert shares == sorted(shares) and shares[-1] == 1.0
    for b in buckets:
        assert b.ready_share == pytest.approx(sum(sizes[:b.last_tensor + 1]) / sum(sizes))


def test_a_large_model_of_small_tensors_has_about_one_bucket_per_cap_plus_the_first():
    sizes = [MIB // 2] * 1000  # 500 MiB: a 1 MiB first bucket, 19 full 25 MiB ones, a 24 MiB tail
    assert len(ddp_buckets(sizes)) == math.ceil(sum(sizes) / (25 * MIB)) + 1 == 21
    for name in ("resnet50", "resnet101"):  # many small tensors: the estimate holds exactly
        total_bytes = 4 * PUBLISHED_PARAMETERS[name]
        assert len(profile_buckets(name)[0]) == math.ceil(total_bytes / (25 * MIB)) + 1


def test_bucket_rule_refuses_nonsense():
    with pytest.raises(ValueError):
        ddp_buckets([])
    with pytest.raises(ValueError):
        ddp_buckets([4, 0])


# -- profiles -------------------------------------------------------------------------------------


def test_resnet50_fp32_has_five_buckets_at_the_default_cap():
    # ResNet-50's fp32 gradient is 102,228,128 B = 97.5 MiB. Backward order starts with fc.bias (4 kB) and
    # fc.weight (8.2 MB): the fc weight closes the 1 MiB first bucket at 7.8 MiB. Layer 4's 2-9 MiB convs
    # then fill 30.0 MiB (overshooting 25 MiB with the tensor that crosses it), then 25.0 and 25.3 MiB,
    # and the remaining 9.3 MiB (layers 1-2, the stem) go last: 5 buckets = ceil(97.5 / 25) + 1.
    (buckets,) = profile_buckets("resnet50")
    assert [round(b.size_bytes / MIB, 2) for b in buckets] == [7.82, 30.04, 25.04, 25.32, 9.27]
    assert sum(b.size_bytes for b in buckets) == 4 * 25_557_032
    pattern = profile_pattern("resnet50")
    assert [p.name for p in pattern.phases] == [f"bucket {k}" for k in range(5)]
    compute_ms = profile("resnet50")["compute_ms"]["value"]
    forward_ms, backward_ms = 0.32 * compute_ms, 0.64 * compute_ms
    for phase, bucket in zip(pattern.phases, buckets, strict=True):
        assert phase.start_ms == pytest.approx(forward_ms + backward_ms * bucket.ready_share)
        assert phase.message_bytes == bucket.size_bytes
    assert pattern.phases[-1].start_ms == pytest.approx(forward_ms + backward_ms)  # the tail after backward


@pytest.mark.parametrize("name", profile_names())
def test_every_profile_builds_with_phases_in_order_inside_the_iteration(name):
    for options in ({}, {"dtype": "fp16"}, {"bucket_cap_mb": 50, "workers": 8}, {"link_mbps": 100_000}):
        pattern = profile_pattern(name, **options)
        starts = [p.start_ms for p in pattern.phases]
        assert starts == sorted(starts) and 0 <= starts[0] and starts[-1] < pattern.iteration_ms
        buckets = [int(p.name.split()[1]) for p in pattern.phases if p.name.startswith("bucket")]
        assert buckets == list(range(len(buckets)))
        assert pattern.workers == options.get("workers", 4)


def test_there_are_at_least_eight_profiles_of_every_kind():
    names = profile_names()
    assert len(names) >= 8
    assert {profile(n)["kind"] for n in names} == {"ddp", "dlrm", "pipeline"}


@pytest.mark.parametrize("name", sorted(PUBLISHED_PARAMETERS))
def test_a_data_parallel_profile_sends_its_whole_gradient_in_the_chosen_dtype(name):
    params = PUBLISHED_PARAMETERS[name]
    assert profile_pattern(name).message_bytes == 4 * params
    assert profile_pattern(name, dtype="fp16").message_bytes == 2 * params


def test_an_explicit_first_bucket_limit_is_honoured():
    (buckets,) = profile_buckets("resnet50", first_bucket_mb=25)  # DDP given bucket_cap_mb explicitly
    assert buckets[0].size_bytes >= 25 * MIB
    assert len(buckets) == 4


def test_a_faster_link_shortens_the_iteration_down_to_the_compute_time():
    compute_ms = profile("gpt2")["compute_ms"]["value"]
    slow, fast = profile_pattern("gpt2", link_mbps=10_000), profile_pattern("gpt2", link_mbps=1e9)
    assert slow.iteration_ms > fast.iteration_ms
    assert fast.iteration_ms == pytest.approx(compute_ms, abs=1)


def test_dlrm_like_all_reduces_its_mlps_and_exchanges_embeddings_all_to_all():
    pattern = profile_pattern("dlrm")
    collectives = {p.name: p.collective for p in pattern.phases}
    assert collectives["embeddings forward"] == collectives["embeddings backward"] == "alltoall"
    a2a = next(p for p in pattern.phases if p.name == "embeddings forward")
    assert a2a.message_bytes == 2048 * 26 * 128 * 4
    # the top MLP (1 MiB first bucket, then the rest) and the bottom MLP (one bucket): two DDP modules
    assert [len(b) for b in profile_buckets("dlrm")] == [2, 1]
    assert sum(p.message_bytes for p in pattern.phases if p.collective == "allreduce") == 4 * (2_197_505 + 171_392)
    forward_end_ms = 0.32 * profile("dlrm")["compute_ms"]["value"]
    assert a2a.start_ms < forward_end_ms < next(p for p in pattern.phases if p.name == "bucket 0").start_ms


def test_pipeline_template_sends_activations_and_gradients_point_to_point():
    pattern = profile_pattern("pipeline", workers=4)
    assert {p.collective for p in pattern.phases} == {"p2p"}
    names = [p.name for p in pattern.phases]
    assert names[:8] == [f"activations {m}" for m in range(8)]
    assert sorted(names[8:]) == sorted(f"gradients {m}" for m in range(8))
    assert pattern.phases[0].message_bytes == 4 * 1024 * 1024 * 4  # micro-batch × sequence × hidden × fp32
    entry = profile("pipeline")
    t_f, t_b = entry["forward_ms_per_micro_batch"]["value"], entry["backward_ms_per_micro_batch"]["value"]
    assert pattern.iteration_ms >= (4 + 8 - 1) * (t_f + t_b) + entry["optimizer_ms"]["value"]
    with pytest.raises(ValueError, match="3 workers"):
        profile_pattern("pipeline", workers=2)
    with pytest.raises(ValueError, match="no DDP buckets"):
        profile_buckets("pipeline")


def test_unknown_names_and_dtypes_are_refused_in_one_line_naming_the_known_ones():
    with pytest.raises(ValueError) as error:
        profile_pattern("alexnet")
    message = str(error.value)
    assert "\n" not in message and "alexnet" in message and all(n in message for n in profile_names())
    with pytest.raises(ValueError, match="fp32"):
        profile_pattern("resnet50", dtype="int8")


# -- sources --------------------------------------------------------------------------------------


def numbers(entry):
    return {key: value for key, value in entry.items() if isinstance(value, dict)}


def test_every_number_has_a_source_or_is_a_flagged_estimate():
    for name in profile_names():
        entry = profile(name)
        assert {"compute_ms", "forward_share", "backward_share"} <= set(numbers(entry)) or entry["kind"] == "pipeline"
        for key, number in numbers(entry).items():
            assert number["estimate"] in (True, False), (name, key)
            assert number["reason" if number["estimate"] else "source"], (name, key)
            if key == "compute_ms" and not number["estimate"]:
                assert number["setting"], name  # GPU, precision, batch
    measured = {n for n in profile_names() if "compute_ms" in profile(n) and not profile(n)["compute_ms"]["estimate"]}
    assert measured == {"resnet50", "bert-large"}
    assert profile("vgg16")["compute_ms"]["estimate"] and profile("resnet50")["forward_share"]["estimate"]


def test_a_number_without_a_source_is_refused(tmp_path, monkeypatch):
    data = json.loads(profiles.PROFILES_JSON.read_text())
    del data["profiles"]["resnet50"]["compute_ms"]["source"]
    bad = tmp_path / "model_profiles.json"
    bad.write_text(json.dumps(data))
    monkeypatch.setattr(profiles, "PROFILES_JSON", bad)
    profiles._profiles.cache_clear()
    try:
        with pytest.raises(ValueError, match="resnet50.compute_ms"):
            profile_names()
    finally:
        monkeypatch.undo()
        profiles._profiles.cache_clear()
