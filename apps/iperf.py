"""iperf3 3.12 helpers: one server per flow, clients with a pinned data port.

Why this shape (see docs/platform.md):

- an iperf3 server serves one test at a time, so every concurrent flow gets its
  own server port;
- servers are daemons (``-D``) that outlive a Mininet host's namespace, so each
  one writes a pid file and is ended by that PID, never by name;
- ``--cport`` pins the client's *data* stream port while the control
  connection stays ephemeral: the gate matches the data flow's two ports and
  never cuts iperf3's control channel (which ports mean what: the port plan,
  ``topo/tcp_ports.py``);
- bursts run in **reverse mode** (``-R``: the server sends, the client
  receives): measured on the fabric, a forward ``-n`` client declares the
  test done once the bytes are in its socket buffer and the server then
  resets the connection, so only ~40 % of a 700 KB burst reached the wire;
  with ``-R`` the receiving client ends the test after it has *received*
  every byte (checked by capture: 704 512 of 704 512 bytes). So the sender of
  a transfer runs the server and the receiver runs the client;
- a fresh client per burst costs ~19 ms (process start + control connection);
  :func:`burst_overhead_ms` measures it from a client's own JSON.

Commands run inside a Mininet host's network namespace by prefixing
``mnexec -a <host pid>`` (:func:`in_host`); with ``host_pid=None`` they run in
the caller's namespace (tests on the loopback).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from dataclasses import dataclass

from topo.tcp_ports import EPHEMERAL_PORT_MIN, RECEIVER_PORT_MIN, check_server_port

IPERF3 = "iperf3"
# From 3.16 (threads), an iperf3 client ends a test only at its next report tick: a -n burst lasts
# its data plus up to the whole interval (1 s by default, 0.1 s at the least; measured with 3.18,
# Debian 13's). Bursts of a fresh test each can then no longer keep a job's time.
ENDS_AT_REPORT_TICK_FROM = (3, 16)


def installed_version() -> tuple[int, int] | None:
    """``(major, minor)`` of the ``iperf3`` on the PATH, or None where it does not answer."""
    try:
        out = subprocess.run([IPERF3, "--version"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    words = out.split()
    if len(words) < 2 or words[0] != "iperf":
        return None
    try:
        major, minor = words[1].split(".")[:2]
        return int(major), int(minor)
    except ValueError:
        return None


def in_host(host_pid: int | None, argv: list[str]) -> list[str]:
    """Prefix ``argv`` so it runs in the network namespace of Mininet host ``host_pid``."""
    if host_pid is None:
        return list(argv)
    return ["mnexec", "-a", str(int(host_pid)), *argv]


def server_argv(port: int, pidfile: str) -> list[str]:
    """A daemonised iperf3 server on ``port`` that writes its PID to ``pidfile``."""
    return [IPERF3, "-s", "-D", "-p", str(int(port)), "-I", pidfile, "--logfile", os.devnull]


BLOCK_BYTES = 16384  # iperf3 -n rounds up to whole blocks: small blocks keep bursts exact
# Bursts run with TCP_NODELAY (``-N``), as NCCL's socket transport does:
# with Nagle, the 7 436-byte remainder of each 16 KiB block (MSS 8 948) waited
# for an ACK. And with one congestion control (``-C``; the sending server
# applies both) instead of the machine's default, which may be bbr (cubic on
# Debian). The fluid model hands a finished burst's share of the link to the
# others at once; loss-based cubic takes it up within a round trip, bbr probes
# for it over several. Measured in docs/accuracy.md.
CONGESTION = "cubic"


def client_argv(server_ip: str, port: int, cport: int, nbytes: int, reverse: bool = True) -> list[str]:
    """A client for ``nbytes`` (rounded up to 16 KiB) with ``server_ip:port``, data on local port ``cport``.

    ``reverse`` (default): the server sends and this client receives (see the module docstring).
    """
    if nbytes <= 0:
        raise ValueError(f"nbytes must be positive, got {nbytes}")
    check_server_port(port)
    lowest, highest = (RECEIVER_PORT_MIN, EPHEMERAL_PORT_MIN - 1) if reverse else (1, RECEIVER_PORT_MIN - 1)
    if not lowest <= cport <= highest:
        raise ValueError(f"cport must be in {lowest}..{highest} for a {'receiving' if reverse else 'sending'} "
                         f"client (the fabric's priority class tells ports apart by range), got {cport}")
    argv = [IPERF3, "-c", server_ip, "-p", str(int(port)), "--cport", str(int(cport)),
            "-n", str(int(nbytes)), "-l", str(BLOCK_BYTES), "-N", "-C", CONGESTION, "-J",
            "--connect-timeout", "2000"]
    return argv + (["-R"] if reverse else [])


def probe_argv(server_ip: str, port: int, cport: int, rate_mbps: float, seconds: float,
               length_bytes: int = 200) -> list[str]:
    """A constant-rate UDP stream (reverse: the server sends) for measuring gate edges.

    TCP hides window edges behind its retransmission timers; a paced UDP stream
    shows each edge to within one packet gap (``length_bytes * 8 / rate``).
    """
    return [IPERF3, "-c", server_ip, "-p", str(int(port)), "--cport", str(int(cport)), "-u", "-R",
            "-b", f"{rate_mbps}M", "-l", str(int(length_bytes)), "-t", str(seconds), "-J",
            "--pacing-timer", "100"]


# Bytes of a socket's send queue that may wait unsent before select() calls it
# writable again. iperf3 3.12's server keeps a finished (``-n``) stream in its
# select() write set until the client reports the end, so from its last
# write to the end of the test it spins (one select() per ~30 µs). With the
# kernel's default (no limit) it writes the whole autotuned send buffer early
# and spins for the rest: measured on a 50 Mbit/s veth, a 3 MiB burst's last
# write came at 351 of 503 ms and 1 668 selects followed; at 16 KiB the last
# write came at 476 of 506 ms and 582 followed, at the same rate (docs/accuracy.md).
# The spin takes a core from the single-threaded userspace switch.
NOTSENT_LOWAT_BYTES = 16384


def host_tcp_settings() -> list[str]:
    """The ``sysctl`` settings :func:`tune_host_tcp` writes in an emulated host.

    - ``tcp_max_tw_buckets = 0`` (no TIME_WAIT), so a pinned ``--cport`` can be
      bound every iteration. Measured: the receiving client closes first, its
      ``(cport, server)`` socket sits in TIME_WAIT for 60 s and the next burst
      fails with "unable to connect stream: Address already in use" (iperf3
      binds without SO_REUSEADDR).
    - ``tcp_notsent_lowat``: :data:`NOTSENT_LOWAT_BYTES`.

    Standing connections (``apps/stream.py``) keep the kernel's
    ``tcp_slow_start_after_idle`` (1): with 0 the twin's jobs ran the same
    (docs/accuracy.md, "Standing connections").
    """
    return ["net.ipv4.tcp_max_tw_buckets=0", f"net.ipv4.tcp_notsent_lowat={NOTSENT_LOWAT_BYTES}"]


def tune_host_tcp(host_pid: int | None) -> None:
    """Write :func:`host_tcp_settings` in host ``host_pid``'s network namespace; refused for the
    root namespace. The settings are per namespace, so this never touches the machine's own."""
    if host_pid is None:
        raise ValueError("refusing to change TCP settings in the root namespace")
    for setting in host_tcp_settings():
        subprocess.run(in_host(host_pid, ["sysctl", "-q", "-w", setting]),
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=5)


@dataclass
class Server:
    """A running iperf3 server daemon, known by its PID (from its pid file)."""

    port: int
    pid: int
    pidfile: str

    def stop(self, timeout_s: float = 2.0) -> None:
        """End this server by PID (SIGTERM, then SIGKILL) and remove its pid file."""
        kill_pid(self.pid, timeout_s)
        try:
            os.unlink(self.pidfile)
        except FileNotFoundError:
            pass


def stop_servers(servers, timeout_s: float = 2.0) -> None:
    """End several servers at once: signal all, then wait for each."""
    for server in servers:
        try:
            os.kill(server.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    for server in servers:
        server.stop(timeout_s)


def running(pid: int) -> bool:
    """Whether ``pid`` still runs. An exited process waiting to be reaped (a zombie) has closed its
    sockets and files, so it counts as gone: a daemon's parent is PID 1, which reaps it when it
    will (on the reference machine up to 1.7 s later, paid at the end of every measurement)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state not in ("Z", "X")


def kill_pid(pid: int, timeout_s: float = 2.0) -> None:
    """SIGTERM ``pid``, wait up to ``timeout_s`` for it to go, then SIGKILL. Gone is fine."""
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not running(pid):
            return
        time.sleep(0.01)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def start_server(port: int, pidfile: str, host_pid: int | None = None,
                 timeout_s: float = 3.0) -> Server:
    """Start a server daemon (in host ``host_pid``'s namespace) and wait for its pid file."""
    try:
        os.unlink(pidfile)
    except FileNotFoundError:
        pass
    subprocess.run(in_host(host_pid, server_argv(port, pidfile)), check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=timeout_s)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            with open(pidfile) as f:
                text = f.read().strip().strip("\x00")
            if text:
                return Server(port=port, pid=int(text), pidfile=pidfile)
        except (FileNotFoundError, ValueError):
            pass
        time.sleep(0.01)
    raise RuntimeError(f"iperf3 server on port {port} wrote no pid file {pidfile}")


@dataclass(frozen=True)
class BurstResult:
    """What one client burst did, from iperf3's JSON and the launcher's clock."""

    launch_s: float  # unix time the client process was started
    exit_s: float  # unix time the client process was seen to exit
    test_start_s: float  # iperf3's start timestamp (whole seconds only in 3.12)
    bytes_sent: int  # bytes the sender put on the wire (iperf3's sum_sent; the capture agrees)
    seconds: float  # iperf3's own duration of the data phase
    retransmits: int
    error: str = ""

    @property
    def overhead_ms(self) -> float:
        """Launcher time not spent moving data: process start, control setup, teardown."""
        return (self.exit_s - self.launch_s - self.seconds) * 1000.0


def parse_client_json(text: str) -> dict:
    """Extract delivered bytes, seconds, retransmits, start time and error from client ``-J`` output.

    Raises ValueError when the text is not iperf3 JSON.
    """
    doc = json.loads(text)
    if not isinstance(doc, dict):
        raise ValueError("iperf3 JSON is not an object")
    error = str(doc.get("error", ""))
    end = doc.get("end", {}) or {}
    sent = end.get("sum_sent", {}) or {}
    received = end.get("sum_received", {}) or {}
    start = doc.get("start", {}) or {}
    timestamp = (start.get("timestamp", {}) or {}).get("timesecs", 0)
    return {
        # sum_sent is what the sending side wrote, which is what crosses the
        # wire: measured on loopback, 262 144 sent and captured for ``-n
        # 200000`` while the receiving client counted 237 568 when it stopped.
        "bytes_sent": int(sent.get("bytes", received.get("bytes", 0))),
        "seconds": float(received.get("seconds", sent.get("seconds", 0.0))),
        "retransmits": int(sent.get("retransmits", 0)),
        "test_start_s": float(timestamp),
        "error": error,
    }


class Client:
    """One burst in flight: a client process launched now, collected with :meth:`wait`."""

    def __init__(self, server_ip: str, port: int, cport: int, nbytes: int,
                 host_pid: int | None = None, clock=time.time, reverse: bool = True):
        self._clock = clock
        argv = in_host(host_pid, client_argv(server_ip, port, cport, nbytes, reverse))
        self.launch_s = clock()
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.pid = self.proc.pid

    def wait(self, timeout_s: float | None = None) -> BurstResult:
        """Wait for the client to exit and parse its JSON (an unparsable run has ``error`` set)."""
        out, err = self.proc.communicate(timeout=timeout_s)
        exit_s = self._clock()
        try:
            fields = parse_client_json(out.decode(errors="replace"))
        except ValueError:
            fields = {"bytes_sent": 0, "seconds": 0.0, "retransmits": 0, "test_start_s": 0.0,
                      "error": f"iperf3 exited {self.proc.returncode}: "
                               f"{err.decode(errors='replace').strip()[:200]}"}
        if self.proc.returncode != 0 and not fields["error"]:
            fields["error"] = f"iperf3 exited {self.proc.returncode}"
        return BurstResult(launch_s=self.launch_s, exit_s=exit_s, **fields)

    def kill(self) -> None:
        """End this client by PID."""
        if self.proc.poll() is None:
            kill_pid(self.proc.pid, 1.0)
            self.proc.wait()


def burst_overhead_ms(results: list[BurstResult]) -> dict:
    """Summarise client overhead (ms): launch → exit minus iperf3's data seconds."""
    values = sorted(r.overhead_ms for r in results if not r.error)
    if not values:
        return {"n": 0}
    n = len(values)
    return {"n": n, "mean_ms": sum(values) / n, "p50_ms": values[n // 2],
            "p95_ms": values[min(n - 1, int(0.95 * n))], "max_ms": values[-1]}
