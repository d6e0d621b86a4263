"""An emulated job as data: its spec, its collective's flows, its plan and its results.

The driver (``apps/dltjob.py``), the transports (``apps/transports.py``) and the
run all read these; none of them runs anything, so each can import them.

Burst size: a flow moves ``fill × comm_ms × link rate`` bytes, so a solo burst
(start-up overhead included) fits in ``comm_ms``; ring all-reduce sends
``2(N−1)/N × gradient`` bytes per worker to its successor (all flows on
disjoint host links, each at full rate); the parameter-server pattern
(``workers[0]`` is the server) pushes then pulls, the ``N−1`` flows sharing
the server's link, each phase taking half of ``comm_ms``.
"""

from __future__ import annotations

from dataclasses import dataclass

from topo.tcp_ports import FIRST_SERVER_PORT, receiver_port

PATTERNS = ("ring", "ps")
# How a job's flows travel: a fresh iperf3 test per burst, or standing connections
# opened once (apps/stream.py), as collective libraries keep them.
TRANSPORTS = ("iperf3", "persistent")
CSV_FIELDS = ("job", "worker", "iteration", "start", "comm_start", "comm_end", "end", "bytes",
              "policy", "retransmits", "error", "launch_overhead_ms")


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

    @property
    def compute_ms(self) -> float:
        return self.period_ms - self.comm_ms

    @classmethod
    def from_dict(cls, doc: dict) -> JobSpec:
        doc = dict(doc)
        doc["workers"] = tuple(Worker(**w) for w in doc["workers"])
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
    """The phases of one collective; flows in a phase run together, phases one after another."""
    n = len(spec.workers)
    grad = gradient_bytes(spec)
    nbytes = int(2 * (n - 1) / n * grad) if spec.pattern == "ring" else grad
    out, port = [], spec.base_port
    for phase in phase_pairs(spec.workers, spec.pattern):
        row = []
        for src, dst in phase:
            row.append(Transfer(src, dst, port, receiver_port(port), nbytes))
            port += 1
        out.append(row)
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
