"""A job's iteration as phases: each collective it sends, where in the iteration it starts, how many bytes.

Real data-parallel training does not send one rectangle per iteration: PyTorch DDP all-reduces its
gradient buckets as backward proceeds, Horovod fuses ready tensors every cycle, a DLRM-like job adds
all-to-all for its embeddings, a pipeline stage sends activations to the next. A :class:`JobPattern` is
an iteration of ``iteration_ms`` and its :class:`Phase` s, each a collective of ``message_bytes`` (the
collective's message: a bucket's gradient bytes for an all-reduce) starting ``start_ms`` into the
iteration. Phases may overlap (collectives in flight together share the job's links).

What a phase puts on each worker's link follows from its collective (:func:`wire_bytes`): a ring
all-reduce among ``n`` workers sends ``2(n-1)/n`` of the message per worker (NCCL's bus-bandwidth
formula, as ``zoo.py``), an all-to-all ``(n-1)/n`` of it, a point-to-point send all of it. At a link
rate that is a time (:func:`busy_ms`), and on a quantum grid a busy pattern (:func:`as_pattern`, the
``arcs.Pattern`` the exact two-job theory takes). One phase at 0 is the classic job: ``period_ms`` and
``comm_ms``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

COLLECTIVES = ("allreduce", "alltoall", "p2p")


@dataclass(frozen=True)
class Phase:
    """One collective of an iteration: it starts ``start_ms`` after the iteration does."""

    start_ms: float
    message_bytes: int
    collective: str = "allreduce"
    name: str = ""  # what it is (``bucket 3``, ``embeddings``), for people

    def __post_init__(self):
        if not math.isfinite(self.start_ms) or self.start_ms < 0:
            raise ValueError(f"phase {self.name or '?'}: start_ms must be 0 or more, got {self.start_ms!r}")
        if int(self.message_bytes) != self.message_bytes or self.message_bytes <= 0:
            raise ValueError(f"phase {self.name or '?'}: message_bytes must be a whole number above 0, "
                             f"got {self.message_bytes!r}")
        if self.collective not in COLLECTIVES:
            raise ValueError(f"phase {self.name or '?'}: collective must be one of {', '.join(COLLECTIVES)}, "
                             f"got {self.collective!r}")


@dataclass(frozen=True)
class JobPattern:
    """One iteration of a job: ``iteration_ms`` long, its phases in order of start."""

    iteration_ms: float
    phases: tuple[Phase, ...]
    workers: int = 2
    # the computation after the last phase that waits for it (a profile's optimizer step); None: everything
    # after the phases' solo end waits for them (``patternfluid``'s dependency rule)
    tail_ms: float | None = None

    def __post_init__(self):
        if not math.isfinite(self.iteration_ms) or self.iteration_ms <= 0:
            raise ValueError(f"iteration_ms must be above 0, got {self.iteration_ms!r}")
        if not self.phases:
            raise ValueError("a job pattern needs at least one phase")
        if self.tail_ms is not None and not 0 <= self.tail_ms < self.iteration_ms:
            raise ValueError(f"tail_ms must be in [0, iteration_ms), got {self.tail_ms!r}")
        if self.workers < 2:
            raise ValueError(f"a collective needs at least two workers, got {self.workers}")
        late = [p for p in self.phases if p.start_ms >= self.iteration_ms]
        if late:
            raise ValueError(f"phase {late[0].name or '?'} starts at {late[0].start_ms:g} ms, past the "
                             f"iteration ({self.iteration_ms:g} ms)")
        object.__setattr__(self, "phases", tuple(sorted(self.phases, key=lambda p: p.start_ms)))

    @property
    def message_bytes(self) -> int:
        """Every phase's message together: the bytes one iteration communicates."""
        return sum(p.message_bytes for p in self.phases)


def wire_bytes(phase: Phase, workers: int) -> float:
    """The bytes each worker sends on its link for ``phase`` among ``workers`` workers."""
    share = {"allreduce": 2 * (workers - 1) / workers, "alltoall": (workers - 1) / workers, "p2p": 1.0}
    return phase.message_bytes * share[phase.collective]


def busy_ms(phase: Phase, workers: int, link_mbps: float) -> float:
    """How long ``phase`` keeps a worker's link busy at ``link_mbps`` (Mbit/s = 10^6 bit/s), alone."""
    return wire_bytes(phase, workers) * 8 / (link_mbps * 1000)


def busy_total_ms(pattern: JobPattern, link_mbps: float) -> float:
    """Every phase's time on a worker's link at ``link_mbps``, alone, added up: the link time one iteration
    needs (phases that overlap in time still need theirs one after another)."""
    return sum(busy_ms(phase, pattern.workers, link_mbps) for phase in pattern.phases)


def as_pattern(pattern: JobPattern, link_mbps: float, quantum_ms: float):
    """The job as the scheduler can know it, on a grid of ``quantum_ms``: its period rounded to the nearest
    quantum (``schedule.period_quanta``) and each phase's time on the link, alone, covered by whole quanta
    (its start rounded down, its end up), wrapped past the period as two arcs (``arcs.Pattern``). The
    link sends the phases one after another, as ``profiles.py`` times them and a collective library's
    ordered collectives go: a phase that starts while the one before it is still on the link begins
    when that one ends. The
    job itself keeps its true timing; only what the scheduler reasons about is on the grid."""
    from controller.theory.arcs import Pattern
    from controller.theory.schedule import period_quanta

    period_q = period_quanta(pattern.iteration_ms, quantum_ms)
    arcs = []
    free_ms = 0.0  # when the link is done with the phases before: a phase waits for them (in order)
    for phase in pattern.phases:
        start_ms = max(phase.start_ms, free_ms)
        free_ms = start_ms + busy_ms(phase, pattern.workers, link_mbps)
        start_q = math.floor(start_ms / quantum_ms + 1e-9)
        end_q = math.ceil(free_ms / quantum_ms - 1e-9)
        length_q = max(1, end_q - start_q)
        if length_q >= period_q:
            return Pattern(period_q, ((0, period_q),))  # busy the whole period
        start_q %= period_q
        head = min(length_q, period_q - start_q)
        arcs.append((start_q, head))
        if length_q > head:
            arcs.append((0, length_q - head))
    return Pattern(period_q, tuple(arcs))
