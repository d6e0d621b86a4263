"""The gate: schedule + epoch + time -> window edges and the OpenFlow messages for each, as data.

Faucet style: :class:`WindowGate` never touches a socket and imports no Ryu;
``controller/openflow.py`` turns its :class:`GateFlowMod` / :class:`MeterMod`
values into OpenFlow 1.3 messages, and ``controller/scheduler_app.py`` sends
them at each edge's time from a ``hub`` timer and follows each edge with a
barrier. A job's windows are computed in ``controller/theory/windows.py``.

Job ``j`` may send during ``[epoch + shift_j + k·T_j, … + window_j)``,
``window_j = comm_j`` (+ ``guard_ms``); a pattern job has one such window per busy
arc of its period (``controller/theory/patternwindows.py``), each opened and closed
by its own edges. Outside, its *data* flows (matched
exactly: IPv4 TCP, ``ipv4_src``, ``ipv4_dst``, ``tcp_src`` and ``tcp_dst`` —
iperf3's server port and the client's ``--cport``, which only the data
connection has) at the ingress leaf, where the job enters the shared links, are
either

- ``mode="block"``: dropped; or
- ``mode="floor"``: policed to ``floor_kbps`` (drop band, burst ``floor_burst_ms`` at that
  rate, by default :data:`FLOOR_BURST_MS`, a quarter of a second, which TCP needs:
  docs/platform.md; a run at time scale K asks for K times as long, so the bucket holds the
  same bytes at a K times lower floor).

How an edge changes the gate (``toggle``):

- ``"meter"`` (default): the job's rule at priority ``GATE_PRIORITY`` (>= 10000,
  above all forwarding) always sends its data through a per-job meter and
  ``goto_table:1``, where the fabric keeps a copy of forwarding; an edge only
  modifies the meter's drop band: :data:`OPEN_METER_KBPS` when open, the floor
  or :data:`CLOSED_METER_KBPS` (a bucket smaller than one full-sized segment) when closed;
- ``"delete"``: the closed state is that rule (no instructions = drop, or the
  floor meter); opening deletes it (strict), closing adds it back;
- ``"modify"``: the rule stays and is flipped between closed and ``goto_table:1``.

Why (measurements in docs/gate.md): a flow-mod makes Open vSwitch revalidate
its datapath flows before packets see the change; a meter-mod replaces the
datapath's meter at once. With four gated jobs on two switches of the
userspace datapath, edges by flow-mod landed 2.2-2.6 ms late on average (p95
4-6.6 ms; the controller sends within 0.3-0.6 ms), edges by meter-mod 0.0-0.6
ms late (p95 0.9-2.4 ms, idle and loaded). ``ovs-ofctl`` per edge is ~27 ms late and
``set_queue`` is ignored by the userspace datapath, so neither is used. Gating
matches the data ports only, so iperf3's control connection is never cut; a
crashed controller leaves at worst gate rules and meters that teardown removes
by cookie and id.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from controller.forwarding import (
    ETH_TYPE_IPV4,
    IP_PROTOS,
    SCHEDULER_MIN_PRIORITY,
)
from controller.theory.windows import last_window_index, window_start_ms, windows_between

GATE_PRIORITY = SCHEDULER_MIN_PRIORITY + 100  # 10100: above all forwarding
GATE_TABLE = 0
MODES = ("block", "floor")
# open = raise the rate of the meter the job's rule always goes through (the default), delete the
# closing rule, or modify it to pass
TOGGLES = ("meter", "delete", "modify")
OPEN_METER_KBPS = 100_000_000  # an open meter: 100 Gbit/s, far above any emulated link, never drops
OPEN_METER_BURST_KBIT = 100_000  # room for a whole receive batch of jumbo frames within one ms
FLOOR_BURST_MS = 250  # the floor's bucket: this long at the floor's rate (a quarter of a second, see above)
CLOSED_METER_KBPS = 1  # a closed meter (block mode): a 1-kbit bucket, less than one full-sized data segment


@dataclass(frozen=True)
class DataFlow:
    """One data flow of a job, gated at ``dpid`` (the sender's leaf)."""

    dpid: int
    src_ip: str
    dst_ip: str
    tcp_src: int  # source port (UDP too, when proto is "udp")
    tcp_dst: int | None = None  # destination port; None: any
    proto: str = "tcp"  # "udp" for constant-rate probes (bench/gate.py)

    def match(self) -> dict:
        """The match in Ryu ``OFPMatch`` keyword names."""
        l4 = "udp" if self.proto == "udp" else "tcp"
        match = {"eth_type": ETH_TYPE_IPV4, "ip_proto": IP_PROTOS[l4], "ipv4_src": self.src_ip,
                 "ipv4_dst": self.dst_ip, f"{l4}_src": self.tcp_src}
        if self.tcp_dst is not None:
            match[f"{l4}_dst"] = self.tcp_dst
        return match


@dataclass(frozen=True)
class GateFlowMod:
    """Add, modify or delete (all strict) one gate rule.

    Instructions: ``meter_id`` set → meter + goto_table 1 (floor); ``pass_through`` →
    goto_table 1 (open, ``toggle="modify"``); neither → none, i.e. drop.
    """

    command: str  # "add" | "modify" | "delete"
    dpid: int
    match: dict
    priority: int = GATE_PRIORITY
    table: int = GATE_TABLE
    meter_id: int | None = None
    pass_through: bool = False


@dataclass(frozen=True)
class MeterMod:
    """Add, modify or delete a KBPS|BURST|STATS meter with one drop band."""

    command: str  # "add" | "modify" | "delete"
    dpid: int
    meter_id: int
    rate_kbps: int = 0
    burst_kbit: int = 0


@dataclass(frozen=True)
class GateWindow:
    """When the gate lets a job send: from ``shift_ms`` after the epoch, every ``period_ms``, for
    ``window_ms`` (``controller/theory/windows.py``). The fields are in the order of
    ``SchedulerCore.windows_ms()``."""

    period_ms: float
    shift_ms: float
    window_ms: float

    def __post_init__(self):
        if not 0 < self.window_ms < self.period_ms:
            raise ValueError(f"need 0 < window_ms < period_ms, got {self.window_ms}, {self.period_ms}")


@dataclass(frozen=True)
class Edge:
    """At unix time ``time_s`` job ``job`` opens (``opening``) or closes: send ``mods``, then a barrier."""

    time_s: float
    job: str
    opening: bool
    mods: tuple


class WindowGate:
    """Window edges and their messages for a set of jobs, an epoch (unix s) and a mode."""

    def __init__(self, windows: dict[str, GateWindow | Sequence[GateWindow]], flows: dict[str, list[DataFlow]],
                 epoch_s: float, mode: str = "block", floor_kbps: int = 1000, toggle: str = "meter",
                 floor_burst_ms: float = FLOOR_BURST_MS):
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        if toggle not in TOGGLES:
            raise ValueError(f"toggle must be one of {TOGGLES}, got {toggle!r}")
        self.toggle = toggle
        if mode == "floor" and (floor_kbps <= 0 or floor_burst_ms <= 0):
            raise ValueError("floor_kbps and floor_burst_ms must be positive")
        missing = sorted(set(windows) - set(flows))
        if missing:
            raise ValueError(f"no data flows for job(s) {', '.join(missing)}")
        self.windows = {job: (w,) if isinstance(w, GateWindow) else tuple(w) for job, w in windows.items()}
        self.flows = {job: list(flows[job]) for job in windows}
        self.epoch_s = float(epoch_s)
        self.mode = mode
        self.floor_kbps = int(floor_kbps)
        self.floor_burst_ms = float(floor_burst_ms)
        self.meter_ids = {job: i + 1 for i, job in enumerate(sorted(windows))}

    @classmethod
    def from_schedule(cls, schedule, flows: dict[str, list[DataFlow]], epoch_s: float,
                      guard_ms: float = 0.0, **kwargs) -> WindowGate:
        """Windows from a ``controller.theory.schedule.Schedule``: shift from ``shifts_ms``, length ``comm_ms + guard_ms``."""
        windows = {j.name: GateWindow(j.period_ms, schedule.shifts_ms[j.name], j.comm_ms + guard_ms)
                   for j in schedule.jobs}
        return cls(windows, flows, epoch_s, **kwargs)

    # -- state -----------------------------------------------------------------------------
    def is_open(self, job: str, t_s: float) -> bool:
        """Is one of ``job``'s windows open at unix time ``t_s``? (Before the epoch: closed.)"""
        since_ms = (t_s - self.epoch_s) * 1000
        for w in self.windows[job]:
            k = last_window_index(w.shift_ms, w.period_ms, since_ms)
            if k >= 0 and since_ms < window_start_ms(w.shift_ms, w.period_ms, k) + w.window_ms:
                return True
        return False

    def _uses_meters(self) -> bool:
        return self.mode == "floor" or self.toggle == "meter"

    def _rule_mods(self, job: str, command: str) -> tuple:
        meter = self.meter_ids[job] if self._uses_meters() else None
        return tuple(GateFlowMod(command, f.dpid, f.match(), meter_id=meter) for f in self.flows[job])

    def _meter_mods(self, job: str, command: str, opened: bool = False) -> tuple:
        """One meter per job and switch it is gated on: open, or closed (the floor, or nothing)."""
        if opened:
            rate, burst = OPEN_METER_KBPS, OPEN_METER_BURST_KBIT
        elif self.mode == "floor":
            rate, burst = self.floor_kbps, max(1, int(self.floor_kbps * self.floor_burst_ms / 1000))
        else:
            rate, burst = CLOSED_METER_KBPS, 1
        return tuple(MeterMod(command, dpid, self.meter_ids[job], rate, burst)
                     for dpid in sorted({f.dpid for f in self.flows[job]}))

    def close_mods(self, job: str) -> tuple:
        if self.toggle == "meter":
            return self._meter_mods(job, "modify")
        if self.toggle == "modify":
            return self._rule_mods(job, "modify")
        return self._rule_mods(job, "add")

    def open_mods(self, job: str) -> tuple:
        if self.toggle == "meter":
            return self._meter_mods(job, "modify", opened=True)
        if self.toggle == "modify":
            return tuple(GateFlowMod("modify", f.dpid, f.match(), pass_through=True) for f in self.flows[job])
        return self._rule_mods(job, "delete")

    def setup(self) -> list:
        """Messages before the first edge: meters (floor mode or meter toggle), then every job closed."""
        out: list = []
        if self._uses_meters():
            for job in self.windows:
                out.extend(self._meter_mods(job, "add"))
        for job in self.windows:
            out.extend(self._rule_mods(job, "add"))
        return out

    def teardown(self) -> list:
        """Messages that remove every trace of the gate (rules, then meters)."""
        out: list = [m for job in self.windows for m in self._rule_mods(job, "delete")]
        if self._uses_meters():
            for job in self.windows:
                out.extend(self._meter_mods(job, "delete"))
        return out

    # -- edges -----------------------------------------------------------------------------
    def edges(self, t0_s: float, t1_s: float) -> list[Edge]:
        """Every edge with ``t0_s <= time < t1_s``, in time order; at equal times closes come first."""
        out = []
        t0_ms = (t0_s - self.epoch_s) * 1000
        t1_ms = (t1_s - self.epoch_s) * 1000
        for job, mine in self.windows.items():
            # edge times in ms after the epoch, so equal instants compare equal
            for open_ms, close_ms in (edge for w in mine for edge in
                                      windows_between(w.shift_ms, w.period_ms, w.window_ms, t0_ms, t1_ms)):
                if t0_ms <= open_ms:
                    out.append((round(open_ms, 9), True, job))
                if close_ms < t1_ms:
                    out.append((round(close_ms, 9), False, job))
        out.sort()
        return [Edge(self.epoch_s + t_ms / 1000, job, opening,
                     self.open_mods(job) if opening else self.close_mods(job))
                for t_ms, opening, job in out]

    def next_edges(self, now_s: float, horizon_s: float = 1.0) -> list[Edge]:
        """The edges due from ``now_s`` for the next ``horizon_s`` seconds."""
        return self.edges(now_s, now_s + horizon_s)
