"""PyTorch DDP's gradient buckets: which tensors it all-reduces together, in the order it sends them.

DDP does not all-reduce each gradient alone, nor the whole gradient at once: it packs gradients into
buckets and starts a bucket's all-reduce as soon as backward has produced all of its gradients, so
communication overlaps the rest of backward. The rule (``compute_bucket_assignment_by_size`` in
torch/csrc/distributed/c10d/reducer.cpp, as ``Reducer::rebuild_buckets`` applies it after the first
iteration): walk the tensors in the order their gradients become ready in backward (roughly the reverse
of ``model.parameters()``), add each to the open bucket, and close the bucket as soon as its size
reaches (``>=``) its limit. The first bucket's limit is ``kDefaultFirstBucketBytes`` (1 MiB), so the
first all-reduce starts early; every later one's is ``bucket_cap_mb`` (25 MiB by default). A tensor is
never split, so a large tensor closes the bucket it joins and a bucket may exceed its cap.

Only the steady state is modelled: the first iteration uses the buckets DDP guessed from
``model.parameters()`` before it saw a backward pass, and rebuilds them once after it.
"""

from __future__ import annotations

from dataclasses import dataclass

MIB = 1024 * 1024
DEFAULT_FIRST_BUCKET_BYTES = 1 * MIB  # kDefaultFirstBucketBytes (reducer.hpp)
DEFAULT_CAP_BYTES = 25 * MIB  # kDefaultBucketBytesCap, DDP's bucket_cap_mb=25
DTYPE_BYTES = {"fp32": 4, "fp16": 2, "bf16": 2}


@dataclass(frozen=True)
class Bucket:
    """One all-reduce: tensors ``first_tensor..last_tensor`` (indices in backward order) together.

    ``ready_share`` is the share of all the tensors' bytes (= of their elements, one dtype) produced
    once this bucket's last tensor is: the point of backward where its all-reduce can start.
    """

    size_bytes: int
    first_tensor: int
    last_tensor: int
    ready_share: float


def ddp_buckets(tensor_bytes_in_backward_order, first_bucket_bytes: int = DEFAULT_FIRST_BUCKET_BYTES,
                cap_bytes: int = DEFAULT_CAP_BYTES) -> list[Bucket]:
    """DDP's buckets for gradients of these sizes, given in the order backward produces them."""
    sizes = [int(b) for b in tensor_bytes_in_backward_order]
    if not sizes:
        raise ValueError("no tensors to put in buckets")
    if any(b <= 0 for b in sizes):
        raise ValueError("every tensor needs a size above 0 bytes")
    if first_bucket_bytes <= 0 or cap_bytes <= 0:
        raise ValueError(f"bucket limits must be above 0, got {first_bucket_bytes} and {cap_bytes}")
    total = sum(sizes)
    buckets: list[Bucket] = []
    first, size, done = 0, 0, 0
    for i, b in enumerate(sizes):
        size += b
        done += b
        limit = first_bucket_bytes if not buckets else cap_bytes
        if size >= limit:
            buckets.append(Bucket(size, first, i, done / total))
            first, size = i + 1, 0
    if size:
        buckets.append(Bucket(size, first, len(sizes) - 1, 1.0))
    return buckets
