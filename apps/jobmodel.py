"""An emulated job as data: its spec, its collective's flows, its plan and its results.

The driver (``apps/dltjob.py``), the transports (``apps/transports.py``) and the
run all read these; none of them runs anything, so each can import them.

Burst size: a flow moves ``fill × comm_ms × link rate`` bytes, so a solo burst
(start-up overhead included) fits in ``comm_ms``; ring all-reduce sends
``2(N−1)/N × gradient`` bytes per worker to its successor (all flows on
disjoint host links, each at full rate); the parameter-server pattern
(``workers[0]`` is the server) pushes then pulls, the ``N−1`` flows sharing
the server's link, each phase taking half of ``comm_ms``.

A *pattern job* (``JobSpec.phases``) sends its iteration as several collectives
(DDP's gradient buckets, ``controller/theory/phases.py``), each a ring over the
job's standing connections, started at its own offset from the iteration's
origin (the end of its compute phase). Each phase keeps its time as the real
cluster's: its bytes are what the fabric moves in ``fill`` of the phase's
link time at the model's rate (:func:`pattern_phases`), as a ``model:`` job's
burst is.
"""

from __future__ import annotations

from dataclasses import dataclass

from controller.theory.phases import JobPattern, busy_ms
from topo.tcp_ports import FIRST_SERVER_PORT, receiver_port

PATTERNS = ("ring", "ps")
# How a job's flows travel: a fresh iperf3 test per burst, or standing connections
# opened once (apps/stream.py), as collective libraries keep them.
TRANSPORTS = ("iperf3", "persistent")
CSV_FIELDS = ("job", "worker", "iteration", "start", "comm_start", "comm_end", "end", "bytes",
              "policy", "retransmits", "error", "launch_overhead_ms")
# a pattern job's phases, one row per phase per iteration (``<job>.phases.csv``): when it was due (its
# offset from the iteration's origin), when it went (later if the phase before it was still in flight),
# when its last byte arrived, its bytes (every flow's)
PHASE_CSV_FIELDS = ("job", "iteration", "phase", "policy", "due", "launch", "end", "bytes", "error")


@dataclass(frozen=True)
class Worker:
    """A worker on a Mininet host: its name, IP and the host's shell PID (None: caller's netns)."""

    name: str
    ip: str
    host_pid: int | None = None


@dataclass(frozen=True)
class JobSpec:
    """One emulated job. ``fill`` is the share of ``comm_ms`` the solo burst's data takes."""

    name: str
    period_ms: float
    comm_ms: float
    workers: tuple[Worker, ...]
    pattern: str = "ring"
    link_mbps: float = 100.0
    fill: float = 0.8
    base_port: int = FIRST_SERVER_PORT  # its flows' server ports count up from here (topo/tcp_ports.py)
    jitter_ms: float = 0.0
    seed: int = 0
    transport: str = "iperf3"  # one of TRANSPORTS
    # a pattern job: each phase's (start_ms from the iteration's origin, share of comm_ms its data takes at
    # fill 1); comm_ms runs from the origin to the last phase's end alone (:func:`pattern_phases`). Empty:
    # one burst per iteration
    phases: tuple[tuple[float, float], ...] = ()

    def __post_init__(self):
        if not 0 < self.comm_ms < self.period_ms:
            raise ValueError(f"job {self.name}: need 0 < comm_ms < period_ms")
        if self.pattern not in PATTERNS:
            raise ValueError(f"job {self.name}: pattern must be one of {PATTERNS}")
        if len(self.workers) < 2:
            raise ValueError(f"job {self.name}: needs at least two workers")
        if not 0 < self.fill <= 1:
            raise ValueError(f"job {self.name}: fill must be in (0, 1]")
        if self.transport not in TRANSPORTS:
            raise ValueError(f"job {self.name}: transport must be one of {TRANSPORTS}")
        if self.phases:
            self._check_phases()

    def _check_phases(self) -> None:
        if self.transport != "persistent":
            raise ValueError(f"job {self.name}: a pattern job's phases need standing connections "
                             "(transport persistent), not a fresh iperf3 test per phase")
        if self.pattern != "ring":
            raise ValueError(f"job {self.name}: a pattern job's phases are rings (pattern ring), got {self.pattern}")
        starts = [start for start, _ in self.phases]
        if starts != sorted(starts) or starts[0] < 0 or starts[-1] >= self.comm_ms:
            raise ValueError(f"job {self.name}: phase starts must ascend from 0 and lie within comm_ms")
        if any(not 0 < share <= 1 for _, share in self.phases):
            raise ValueError(f"job {self.name}: each phase's share of comm_ms must be in (0, 1]")

    @property
    def compute_ms(self) -> float:
        return self.period_ms - self.comm_ms

    @classmethod
    def from_dict(cls, doc: dict) -> JobSpec:
        doc = dict(doc)
        doc["workers"] = tuple(Worker(**w) for w in doc["workers"])
        doc["phases"] = tuple(tuple(p) for p in doc.get("phases", ()))
        return cls(**doc)


@dataclass(frozen=True)
class Transfer:
    """One iperf3 flow of a collective phase: ``src`` sends ``nbytes`` to ``dst``.

    The sender runs the iperf3 server on ``port`` and the receiver a reverse-mode
    client whose data socket is bound to ``cport`` (apps/iperf.py says why), so on
    the wire the data flows ``src:port -> dst:cport``; the gate matches both ports.
    """

    src: Worker
    dst: Worker
    port: int  # iperf3 server port on src (data source port)
    cport: int  # client data port on dst (data destination port): topo.tcp_ports.receiver_port(port)
    nbytes: int


def burst_bytes(comm_ms: float, link_mbps: float, fill: float) -> int:
    """Bytes one flow moves at ``link_mbps`` in ``fill × comm_ms``."""
    return max(1, int(link_mbps * 1e6 / 8 * comm_ms / 1000 * fill))


def pattern_phases(pattern: JobPattern, model_link_mbps: float) -> tuple[float, tuple[tuple[float, float], ...]]:
    """A pattern's iteration as a :class:`JobSpec` takes it: ``(comm_ms, phases)``. ``comm_ms`` runs from
    the iteration's origin to its last phase's end alone at ``model_link_mbps``, the phases sent one after
    another from their starts (a phase waits for the one before it, as a collective library's ordered
    collectives do); each phase is ``(start_ms, share)``, its link time at that rate over ``comm_ms``."""
    end_ms, busy = 0.0, []
    for phase in pattern.phases:
        busy.append(busy_ms(phase, pattern.workers, model_link_mbps))
        end_ms = max(end_ms, phase.start_ms) + busy[-1]
    return end_ms, tuple((phase.start_ms, b / end_ms) for phase, b in zip(pattern.phases, busy, strict=True))


def gradient_bytes(spec: JobSpec) -> int:
    """The model's gradient size implied by ``comm_ms`` and the link rate."""
    n = len(spec.workers)
    per_flow = burst_bytes(spec.comm_ms, spec.link_mbps, spec.fill)
    if spec.pattern == "ring":
        return int(per_flow * n / (2 * (n - 1)))
    return burst_bytes(spec.comm_ms / 2, spec.link_mbps, spec.fill) // (n - 1)


def phase_pairs(workers: tuple, pattern: str) -> list[list[tuple]]:
    """Who sends to whom: the (src, dst) pairs of each phase of a collective over ``workers``.

    Ring: one phase, each worker to its successor. Parameter server (``workers[0]``):
    the others push to it, then it sends to each of them.
    """
    n = len(workers)
    if pattern == "ring":
        return [[(workers[i], workers[(i + 1) % n]) for i in range(n)]]
    ps, others = workers[0], workers[1:]
    return [[(o, ps) for o in others], [(ps, o) for o in others]]


def collective(spec: JobSpec) -> list[list[Transfer]]:
    """The phases of one collective; flows in a phase run together, phases one after another. A pattern
    job's: its ring with one iteration's bytes (every phase's; :func:`iteration_phases` splits them)."""
    n = len(spec.workers)
    grad = gradient_bytes(spec)
    nbytes = int(2 * (n - 1) / n * grad) if spec.pattern == "ring" else grad
    if spec.phases:  # one iteration's bytes per flow, every phase's together
        nbytes = sum(phase_bytes(spec))
    out, port = [], spec.base_port
    for phase in phase_pairs(spec.workers, spec.pattern):
        row = []
        for src, dst in phase:
            row.append(Transfer(src, dst, port, receiver_port(port), nbytes))
            port += 1
        out.append(row)
    return out


def phase_bytes(spec: JobSpec) -> list[int]:
    """A pattern job's bytes per flow for each phase: ``fill`` of the phase's share of ``comm_ms`` at the
    link's rate (so :func:`calibration.with_phase`, which keeps ``fill × comm_ms``, keeps them)."""
    return [burst_bytes(spec.comm_ms * share, spec.link_mbps, spec.fill) for _, share in spec.phases]


def iteration_phases(spec: JobSpec) -> list[tuple[float, list[list[Transfer]]]]:
    """What one iteration sends, as ``(start_ms after the origin, steps)``, each step's flows together and
    the steps one after another: a classic job, its collective at 0; a pattern job, one ring per phase over
    the same flows (its standing connections), with that phase's bytes."""
    if not spec.phases:
        return [(0.0, collective(spec))]
    (ring,) = collective(spec)
    return [(start_ms, [[Transfer(t.src, t.dst, t.port, t.cport, nbytes) for t in ring]])
            for (start_ms, _), nbytes in zip(spec.phases, phase_bytes(spec), strict=True)]


def flow_burst_bytes(spec: JobSpec) -> dict[int, list[int]]:
    """Each flow's (by server port) bursts in the order an iteration sends them: one for a classic job,
    one per phase for a pattern job."""
    out: dict[int, list[int]] = {}
    for _, steps in iteration_phases(spec):
        for step in steps:
            for t in step:
                out.setdefault(t.port, []).append(t.nbytes)
    return out


def data_flows(spec: JobSpec) -> list[dict]:
    """The job's data flows as the scheduler registers them (ingress dpid added by the caller)."""
    return [{"src_host": t.src.name, "src_ip": t.src.ip, "dst_ip": t.dst.ip, "tcp_src": t.port,
             "tcp_dst": t.cport} for phase in collective(spec) for t in phase]


@dataclass(frozen=True)
class JobPlan:
    """What the controller says this job does: policy, epoch (unix s), offset and windows."""

    policy: str
    epoch_s: float
    offset_ms: float
    period_ms: float
    window_ms: float
    padding_ms: float = 0.0  # added to every compute phase (the policy pads the period: ``align``)

    def waits_for_window(self, iteration: int) -> bool:
        """Does this iteration's burst wait for the next window start? (The registered policy decides.)"""
        from controller.theory.policies import get_policy

        return get_policy(self.policy).waits_for_window(iteration)

    @property
    def gated(self) -> bool:
        """Does the first burst wait for its window (it then launches ``launch_lead_ms`` early)?"""
        return self.waits_for_window(0)

    @classmethod
    def from_schedule(cls, doc: dict, job: str) -> JobPlan:
        """Read this job's plan from the scheduler's ``GET /shiftbed/schedule`` answer."""
        entry = doc["jobs"][job]
        if doc.get("epoch_s") is None:
            raise ValueError("the scheduler has no epoch yet: POST /shiftbed/policy first")
        return cls(policy=doc["policy"], epoch_s=float(doc["epoch_s"]),
                   offset_ms=float(entry["offset_ms"]), period_ms=float(entry["period_ms"]),
                   window_ms=float(entry["window_ms"]), padding_ms=float(entry.get("padding_ms") or 0.0))


@dataclass(frozen=True)
class TransferResult:
    """One finished flow: launch/exit times (unix s), bytes and retransmits, error text."""

    transfer: Transfer
    start_s: float
    end_s: float
    bytes_sent: int
    retransmits: int = 0
    error: str = ""
    data_s: float = 0.0  # how long its data took (iperf3's own count; 0: unknown)
