"""Real models' traffic as phases: DDP's gradient buckets, DLRM's all-to-all, a pipeline's sends.

The zoo (``zoo.py``) gives each model one rectangle per iteration. Here a model's iteration is what
PyTorch DDP actually sends: one all-reduce per gradient bucket (``buckets.py``), each starting when
backward has produced that bucket's gradients. The parameter tensors come from each architecture's
definition (the torchvision or Hugging Face ``named_parameters`` layout, generated below and checked
against the published parameter totals); the timings from ``data/model_profiles.json``, where every
number names its measured source or is marked ``"estimate": true`` with its reason
(docs/references.md, "Model profiles").

Timing of one steady-state iteration (the first, whose buckets DDP rebuilds, is not modelled), of
``compute_ms`` of measured or estimated computation:

- forward, ``forward_share × compute_ms``: silent (a DLRM-like model exchanges its embeddings);
- backward, the next ``backward_share × compute_ms``: bucket ``k``'s all-reduce starts once backward
  has produced its gradients, taken as the share of the parameters' *elements* done by the end of the
  bucket (backward's work per tensor is not known layer by layer; elements are the simplest proxy), so
  ``start_ms = forward_ms + backward_ms × ready_share``; the last bucket's all-reduce starts as backward
  ends and is the exposed tail;
- the optimizer step, the rest: it waits for the last collective, so the iteration is
  ``max(backward end, the link's last byte) + optimizer_ms``, the link sending the phases one after
  another from their starts at ``link_mbps`` (work-conserving: fair sharing ends at the same time).

Bytes are what the real cluster sends (no emulation scaling). ``dtype`` is the gradients' type: under
PyTorch AMP (the measurements' "AMP") gradients stay fp32, so fp32 is the default.
"""

from __future__ import annotations

import json
import math
from functools import cache
from itertools import pairwise
from pathlib import Path

from controller.theory.buckets import DTYPE_BYTES, MIB, Bucket, ddp_buckets
from controller.theory.phases import JobPattern, Phase, busy_ms
from controller.theory.zoo import DEFAULT_MODEL_LINK_MBPS

PROFILES_JSON = Path(__file__).with_name("data") / "model_profiles.json"

# -- architectures: (name, shape) in ``named_parameters()`` order -----------------------------------


def _linear(name, out_features, in_features):
    return [(f"{name}.weight", (out_features, in_features)), (f"{name}.bias", (out_features,))]


def _norm(name, features):  # BatchNorm2d and LayerNorm alike: weight and bias
    return [(f"{name}.weight", (features,)), (f"{name}.bias", (features,))]


def resnet_parameters(blocks_per_stage, num_classes=1000):
    """torchvision ``resnet50``/``resnet101``: Bottleneck blocks, a 1×1 downsample in each stage's first."""
    params = [("conv1.weight", (64, 3, 7, 7)), *_norm("bn1", 64)]
    inplanes = 64
    for stage, (planes, count) in enumerate(zip((64, 128, 256, 512), blocks_per_stage, strict=True), start=1):
        out = planes * 4  # Bottleneck.expansion
        for block in range(count):
            pre = f"layer{stage}.{block}"
            params += [(f"{pre}.conv1.weight", (planes, inplanes, 1, 1)), *_norm(f"{pre}.bn1", planes),
                       (f"{pre}.conv2.weight", (planes, planes, 3, 3)), *_norm(f"{pre}.bn2", planes),
                       (f"{pre}.conv3.weight", (out, planes, 1, 1)), *_norm(f"{pre}.bn3", out)]
            if block == 0:
                params += [(f"{pre}.downsample.0.weight", (out, inplanes, 1, 1)), *_norm(f"{pre}.downsample.1", out)]
            inplanes = out
    return params + _linear("fc", num_classes, inplanes)


def vgg16_parameters(num_classes=1000):
    """torchvision ``vgg16`` (configuration D, no batch norm): ``features.i`` convs, three linear layers."""
    params, index, channels = [], 0, 3
    for width in (64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"):
        if width == "M":
            index += 1  # MaxPool2d
            continue
        params += [(f"features.{index}.weight", (width, channels, 3, 3)), (f"features.{index}.bias", (width,))]
        index += 2  # Conv2d, ReLU
        channels = width
    return (params + _linear("classifier.0", 4096, 512 * 7 * 7) + _linear("classifier.3", 4096, 4096)
            + _linear("classifier.6", num_classes, 4096))


def bert_parameters(layers, hidden, vocab=30522, max_positions=512, token_types=2):
    """Hugging Face ``BertModel``: embeddings, ``layers`` encoder layers (FFN 4× hidden), the pooler."""
    params = [("embeddings.word_embeddings.weight", (vocab, hidden)),
              ("embeddings.position_embeddings.weight", (max_positions, hidden)),
              ("embeddings.token_type_embeddings.weight", (token_types, hidden)),
              *_norm("embeddings.LayerNorm", hidden)]
    for i in range(layers):
        pre = f"encoder.layer.{i}"
        params += (_linear(f"{pre}.attention.self.query", hidden, hidden)
                   + _linear(f"{pre}.attention.self.key", hidden, hidden)
                   + _linear(f"{pre}.attention.self.value", hidden, hidden)
                   + _linear(f"{pre}.attention.output.dense", hidden, hidden)
                   + _norm(f"{pre}.attention.output.LayerNorm", hidden)
                   + _linear(f"{pre}.intermediate.dense", 4 * hidden, hidden)
                   + _linear(f"{pre}.output.dense", hidden, 4 * hidden)
                   + _norm(f"{pre}.output.LayerNorm", hidden))
    return params + _linear("pooler.dense", hidden, hidden)


def gpt2_parameters(layers, hidden, vocab=50257, positions=1024):
    """Hugging Face ``GPT2Model`` (its ``Conv1D`` weights are (in, out)); the LM head shares ``wte``."""
    params = [("wte.weight", (vocab, hidden)), ("wpe.weight", (positions, hidden))]
    for i in range(layers):
        pre = f"h.{i}"
        params += [*_norm(f"{pre}.ln_1", hidden),
                   (f"{pre}.attn.c_attn.weight", (hidden, 3 * hidden)), (f"{pre}.attn.c_attn.bias", (3 * hidden,)),
                   (f"{pre}.attn.c_proj.weight", (hidden, hidden)), (f"{pre}.attn.c_proj.bias", (hidden,)),
                   *_norm(f"{pre}.ln_2", hidden),
                   (f"{pre}.mlp.c_fc.weight", (hidden, 4 * hidden)), (f"{pre}.mlp.c_fc.bias", (4 * hidden,)),
                   (f"{pre}.mlp.c_proj.weight", (4 * hidden, hidden)), (f"{pre}.mlp.c_proj.bias", (hidden,))]
    return params + _norm("ln_f", hidden)


def mlp_parameters(name, widths):
    """An MLP as DLRM's ``create_mlp`` builds it: Linear, activation, Linear, … (``name.0``, ``name.2``, …)."""
    params = []
    for i, (w_in, w_out) in enumerate(pairwise(widths)):
        params += _linear(f"{name}.{2 * i}", w_out, w_in)
    return params


ARCHITECTURES = {
    "resnet50": lambda: resnet_parameters((3, 4, 6, 3)),
    "resnet101": lambda: resnet_parameters((3, 4, 23, 3)),
    "vgg16": vgg16_parameters,
    "bert-base": lambda: bert_parameters(12, 768),
    "bert-large": lambda: bert_parameters(24, 1024),
    "gpt2": lambda: gpt2_parameters(12, 768),
    "gpt2-medium": lambda: gpt2_parameters(24, 1024),
}


def parameter_shapes(architecture: str) -> list[tuple[str, tuple[int, ...]]]:
    """Every parameter tensor of ``architecture``, as ``(name, shape)`` in ``named_parameters()`` order."""
    if architecture not in ARCHITECTURES:
        raise ValueError(f"unknown architecture {architecture!r}; known: {', '.join(ARCHITECTURES)}")
    return ARCHITECTURES[architecture]()


def parameter_count(shapes) -> int:
    return sum(math.prod(shape) for _, shape in shapes)


# -- the data file --------------------------------------------------------------------------------


@cache
def _profiles() -> dict[str, dict]:
    with open(PROFILES_JSON) as f:
        profiles = json.load(f)["profiles"]
    for name, entry in profiles.items():
        for key, number in entry.items():
            if isinstance(number, dict) and not (number.get("estimate") is True and number.get("reason")
                                                 or number.get("estimate") is False and number.get("source")):
                raise ValueError(f"{PROFILES_JSON.name}: {name}.{key} needs a source, or estimate true and a reason")
    return profiles


def profile_names() -> list[str]:
    """Every profile's name, in the data file's order."""
    return list(_profiles())


def profile(name: str) -> dict:
    """A profile's entry in the data file: each number as ``{"value", "estimate", "source" or "reason"}``."""
    profiles = _profiles()
    if name not in profiles:
        raise ValueError(f"unknown profile {name!r}; known: {', '.join(profiles)}")
    return profiles[name]


def _value(entry: dict, key: str) -> float:
    return entry[key]["value"]


# -- patterns -------------------------------------------------------------------------------------


def _dtype_bytes(dtype: str) -> int:
    if dtype not in DTYPE_BYTES:
        raise ValueError(f"unknown dtype {dtype!r}; known: {', '.join(DTYPE_BYTES)}")
    return DTYPE_BYTES[dtype]


def _ddp_modules(entry: dict) -> list[list[tuple[str, tuple[int, ...]]]]:
    """The DDP-wrapped modules' parameters, in the order backward reaches them.

    One module for a data-parallel model; DLRM's reference code wraps its top and bottom MLPs in one
    DDP each (the embeddings are model-parallel), and backward runs the top MLP first.
    """
    if entry["kind"] == "dlrm":
        bottom, top = _value(entry, "bottom_mlp"), _value(entry, "top_mlp")
        return [mlp_parameters("top_l", top), mlp_parameters("bot_l", bottom)]
    return [parameter_shapes(entry["architecture"])]


def profile_buckets(name: str, bucket_cap_mb: float = 25, dtype: str = "fp32",
                    first_bucket_mb: float = 1.0) -> list[list[Bucket]]:
    """Each DDP module's buckets (tensors in backward order: the reverse of ``named_parameters()``)."""
    entry = profile(name)
    if entry["kind"] == "pipeline":
        raise ValueError(f"profile {name!r} is pipeline-parallel: it has no DDP buckets")
    size = _dtype_bytes(dtype)
    return [ddp_buckets([math.prod(shape) * size for _, shape in reversed(module)],
                        first_bucket_bytes=int(first_bucket_mb * MIB), cap_bytes=int(bucket_cap_mb * MIB))
            for module in _ddp_modules(entry)]


def _finish(phases, compute_end_ms, optimizer_ms, workers, link_mbps) -> float:
    """The iteration's length: the optimizer step runs once compute and every collective are done."""
    link_free_ms = 0.0
    for phase in sorted(phases, key=lambda p: p.start_ms):
        link_free_ms = max(link_free_ms, phase.start_ms) + busy_ms(phase, workers, link_mbps)
    return max(compute_end_ms, link_free_ms) + optimizer_ms


def _data_parallel(entry, workers, bucket_cap_mb, dtype, first_bucket_mb, link_mbps):
    compute_ms = _value(entry, "compute_ms")
    forward_ms = _value(entry, "forward_share") * compute_ms
    backward_ms = _value(entry, "backward_share") * compute_ms
    optimizer_ms = compute_ms - forward_ms - backward_ms
    modules = _ddp_modules(entry)
    module_elements = [parameter_count(m) for m in modules]
    total_elements = sum(module_elements)
    per_module = profile_buckets(entry["name"], bucket_cap_mb, dtype, first_bucket_mb)
    phases, done_elements = [], 0
    for buckets, elements in zip(per_module, module_elements, strict=True):
        for bucket in buckets:
            share = (done_elements + bucket.ready_share * elements) / total_elements
            phases.append(Phase(forward_ms + backward_ms * share, bucket.size_bytes, "allreduce",
                                f"bucket {len(phases)}"))
        done_elements += elements
    if entry["kind"] == "dlrm":  # each worker's embeddings for its local batch, both ways
        a2a_bytes = int(_value(entry, "batch_per_worker") * _value(entry, "embedding_tables")
                        * _value(entry, "embedding_dim") * _dtype_bytes(dtype))
        top_share = module_elements[0] / total_elements
        lookups_done_ms = forward_ms * _value(entry, "alltoall_forward_at")
        phases += [Phase(lookups_done_ms, a2a_bytes, "alltoall", "embeddings forward"),
                   Phase(forward_ms + backward_ms * top_share, a2a_bytes, "alltoall", "embeddings backward")]
    iteration_ms = _finish(phases, forward_ms + backward_ms, optimizer_ms, workers, link_mbps)
    return JobPattern(iteration_ms, tuple(phases), workers, optimizer_ms)


def _pipeline(entry, workers, dtype, link_mbps):
    """GPipe (all forwards, then all backwards) seen from stage 1 of ``workers`` stages.

    Stage ``s`` runs micro-batch ``m``'s forward in ``[(s + m)·t_f, (s + m + 1)·t_f]`` and sends its
    activations downstream when it ends; backward starts once the last stage has done every forward,
    ``(P + M - 1)·t_f``, and stage ``s``'s ``j``-th backward ends ``(P - s + j)·t_b`` later, when it
    sends that micro-batch's activation gradients upstream. Compute ends at ``(P + M - 1)·(t_f + t_b)``.
    Stage 1 both sends and receives (stage 0 sends only forward, the last stage only backward), so
    the template needs three stages or more. The sends are assumed not to delay the compute schedule
    (at the defaults one takes ~13 ms beside a 22 ms micro-batch forward); the optimizer step still
    waits for the last. ``dtype`` is the activations' type here.
    """
    stages = workers
    if stages < 3:
        raise ValueError(f"the pipeline template models a middle stage: it needs 3 workers (stages) or more, "
                         f"got {workers}")
    micro = int(_value(entry, "micro_batches"))
    t_f, t_b = _value(entry, "forward_ms_per_micro_batch"), _value(entry, "backward_ms_per_micro_batch")
    send_bytes = int(_value(entry, "micro_batch_size") * _value(entry, "sequence_length")
                     * _value(entry, "hidden_size") * _dtype_bytes(dtype))
    s = 1
    phases = [Phase((s + m + 1) * t_f, send_bytes, "p2p", f"activations {m}") for m in range(micro)]
    backward_start_ms = (stages + micro - 1) * t_f
    phases += [Phase(backward_start_ms + (stages - s + j) * t_b, send_bytes, "p2p", f"gradients {micro - 1 - j}")
               for j in range(micro)]
    compute_end_ms = (stages + micro - 1) * (t_f + t_b)
    optimizer_ms = _value(entry, "optimizer_ms")
    iteration_ms = _finish(phases, compute_end_ms, optimizer_ms, workers, link_mbps)
    return JobPattern(iteration_ms, tuple(phases), workers, optimizer_ms)


def profile_pattern(name: str, workers: int = 4, bucket_cap_mb: float = 25, dtype: str = "fp32",
                    link_mbps: float = DEFAULT_MODEL_LINK_MBPS, first_bucket_mb: float = 1.0) -> JobPattern:
    """One iteration of profile ``name`` on ``workers`` workers whose links run at ``link_mbps``.

    ``bucket_cap_mb`` and ``first_bucket_mb`` are DDP's bucket limits in MiB. Note: DDP keeps its 1 MiB
    first bucket only while ``bucket_cap_mb`` is left unset; set explicitly (even to 25), the first bucket's
    limit is the cap too (``torch/nn/parallel/distributed.py``), so pass ``first_bucket_mb=bucket_cap_mb``
    to model that. The pipeline template has no buckets: it ignores both.
    """
    entry = {**profile(name), "name": name}
    if entry["kind"] == "pipeline":
        return _pipeline(entry, workers, dtype, link_mbps)
    return _data_parallel(entry, workers, bucket_cap_mb, dtype, first_bucket_mb, link_mbps)
