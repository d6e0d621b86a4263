"""The model zoo: real models' gradient sizes and compute times, turned into job timings.

Timing model (the same one the fluid model and the schedule use): an iteration
is ``compute_ms`` of computation, then a ring all-reduce in which every worker
sends ``2(N-1)/N × gradient`` bytes over its own link at ``link_mbps`` (NCCL's
bus-bandwidth formula); nothing overlaps. So
``comm_ms = 2(N-1)/N × gradient_mb × 8 / link_mbps × 1000`` (MB = 10^6 bytes,
Mbit/s = 10^6 bit/s) and ``period_ms = compute_ms + comm_ms``.

Emulation scale: a real cluster's link (default 10 Gbit/s) is far faster than
an emulated one (tens of Mbit/s). We keep *times* (hence each job's
communication fraction and the schedule) and scale the *bytes* down by
``emulated_mbps / model_link_mbps``; ``time_scale`` (default 1) additionally
slows everything down (times × s, bytes × s) when bursts are too short to
emulate faithfully. Numbers and sources: ``data/model_zoo.csv`` (docs/references.md).
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from functools import cache
from pathlib import Path

ZOO_CSV = Path(__file__).with_name("data") / "model_zoo.csv"
DEFAULT_MODEL_LINK_MBPS = 10_000.0


@dataclass(frozen=True)
class Model:
    """One row of the zoo."""

    name: str
    params_m: float
    gradient_mb: float
    compute_ms: float
    compute_setting: str
    source: str


@dataclass(frozen=True)
class ZooTiming:
    """A model's job timing at a link rate and worker count (times already scaled)."""

    model: str
    workers: int
    period_ms: float
    comm_ms: float
    compute_ms: float
    bytes_per_worker_mb: float  # what each worker sends per iteration on the real link


@cache
def models() -> dict[str, Model]:
    """All zoo models by name."""
    with open(ZOO_CSV, newline="") as f:
        return {
            row["model"]: Model(row["model"], float(row["params_m"]), float(row["gradient_mb"]),
                                float(row["compute_ms"]), row["compute_setting"], row["source"])
            for row in csv.DictReader(f)
        }


def ring_bytes_factor(workers: int) -> float:
    """Bytes each worker sends in a ring all-reduce, as a multiple of the gradient: 2(N-1)/N."""
    if workers < 2:
        raise ValueError("a ring all-reduce needs at least 2 workers")
    return 2 * (workers - 1) / workers


def transfer_ms(megabytes: float, link_mbps: float) -> float:
    """Time to send ``megabytes`` (10^6 bytes) at ``link_mbps`` (10^6 bit/s)."""
    return megabytes * 8 / link_mbps * 1000


def job_timing(model: str, workers: int, model_link_mbps: float = DEFAULT_MODEL_LINK_MBPS,
               time_scale: float = 1.0) -> ZooTiming:
    """Period and burst of ``model`` trained by ``workers`` workers on ``model_link_mbps`` links."""
    m = models()[model]
    sent_mb = ring_bytes_factor(workers) * m.gradient_mb
    comm_ms = transfer_ms(sent_mb, model_link_mbps) * time_scale
    compute_ms = m.compute_ms * time_scale
    return ZooTiming(model, workers, compute_ms + comm_ms, comm_ms, compute_ms, sent_mb)


def emulated_gradient_mb(comm_ms: float, workers: int, emulated_mbps: float) -> float:
    """Gradient size that makes a ring all-reduce take ``comm_ms`` on the emulated links."""
    return comm_ms / 1000 * emulated_mbps / 8 / ring_bytes_factor(workers)
