"""How a job's flows travel: a fresh iperf3 test per burst, or standing connections.

A transport is called with one phase of a collective (``apps.jobmodel.collective``),
runs its flows together and returns when every one is done; ``close`` ends
whatever it started, by PID. :func:`open_transport` picks one by the job's
``transport`` (``apps.jobmodel.TRANSPORTS``).
"""

from __future__ import annotations

import os
import select
import subprocess
import sys
import time
from dataclasses import dataclass

from apps import iperf
from apps.jobmodel import JobSpec, Transfer, TransferResult, collective, flow_burst_bytes


def open_transport(spec: JobSpec, run_dir: str):
    """The transport ``spec.transport`` names, its servers or connections ready."""
    if spec.transport == "persistent":
        return StreamTransport(spec)
    return IperfTransport(spec, run_dir)


class IperfTransport:
    """Runs a phase's flows as real iperf3 clients; owns one server per flow (ended by PID)."""

    def __init__(self, spec: JobSpec, run_dir: str):
        self.servers = []
        self.clients: list = []
        os.makedirs(run_dir, exist_ok=True)
        for worker in spec.workers:
            if worker.host_pid is not None:
                iperf.tune_host_tcp(worker.host_pid)
        for phase in collective(spec):
            for t in phase:
                pidfile = os.path.join(run_dir, f"iperf3-{spec.name}-{t.port}.pid")
                self.servers.append(iperf.start_server(t.port, pidfile, t.src.host_pid))

    def __call__(self, phase: list[Transfer]) -> list[TransferResult]:
        self.clients = [iperf.Client(t.src.ip, t.port, t.cport, t.nbytes, t.dst.host_pid)
                        for t in phase]
        out = []
        for t, c in zip(phase, self.clients, strict=True):
            r = c.wait(timeout_s=60)
            error = (f"flow {t.src.name}->{t.dst.name} (iperf3 client on {t.dst.name}): {r.error.rstrip(': ')}"
                     if r.error else "")
            out.append(TransferResult(t, r.launch_s, r.exit_s, r.bytes_sent, r.retransmits, error, r.seconds))
        self.clients = []
        return out

    def close(self) -> None:
        """End clients in flight and every server, by PID."""
        for c in self.clients:
            c.kill()
        iperf.stop_servers(self.servers)


class LineReader:
    """Whole lines from a child's stdout pipe, each waited for with a deadline."""

    def __init__(self, proc, what: str):
        self.proc, self.what, self._buffer = proc, what, b""

    def line(self, timeout_s: float) -> str:
        deadline = time.monotonic() + timeout_s
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.proc.stdout], [], [], left)[0]:
                raise TimeoutError(f"{self.what}: nothing after {timeout_s:.0f} s")
            chunk = os.read(self.proc.stdout.fileno(), 4096)
            if not chunk:
                err = self.proc.stderr.read().decode(errors="replace").strip()[-200:] if self.proc.stderr else ""
                raise RuntimeError(f"{self.what} exited {self.proc.wait()}: {err}")
            self._buffer += chunk
        text, self._buffer = self._buffer.split(b"\n", 1)
        return text.decode()


STREAM_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "stream.py")
START_TIMEOUT_S = 10.0  # a receiver listening, a sender connected
FLOW_TIMEOUT_S = 60.0  # one burst


@dataclass
class StreamFlow:
    """One flow's two processes, what they say, and the sender's retransmits counted so far."""

    sender: subprocess.Popen
    sent: LineReader
    received: LineReader
    retransmits: int = 0


class StreamTransport:
    """Runs a phase's flows over standing connections (``apps/stream.py``), opened once per job.

    Each flow has a receiver in its destination host and a sender in its source
    host, both this driver's children (ended by PID, and by themselves when it
    goes). A burst is a line to each sender; it is done when its receiver has
    every byte.
    """

    def __init__(self, spec: JobSpec, python: str = sys.executable):
        self.procs: list[subprocess.Popen] = []
        self._flows: dict[int, StreamFlow] = {}  # by server port
        for worker in spec.workers:
            if worker.host_pid is not None:
                iperf.tune_host_tcp(worker.host_pid)
        sizes = flow_burst_bytes(spec)  # a pattern job's flow carries one burst per phase, in turn
        try:
            for phase in collective(spec):
                for t in phase:
                    self._flows[t.port] = self._open(t, python, sizes[t.port])
        except BaseException:
            self.close()
            raise

    def _start(self, host_pid: int | None, python: str, argv: list[str]) -> subprocess.Popen:
        proc = subprocess.Popen(iperf.in_host(host_pid, [python, STREAM_SCRIPT, *argv]),
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.procs.append(proc)
        return proc

    def _open(self, t: Transfer, python: str, sizes: list[int]) -> StreamFlow:
        """Start ``t``'s receiver, then its sender, and wait until it has connected; ``sizes``: its
        bursts' bytes, in the order they are sent (``apps/stream.py``)."""
        what = f"flow {t.src.name}->{t.dst.name}"
        nbytes = ["--burst-bytes", ",".join(map(str, sizes))]
        receiver = self._start(t.dst.host_pid, python, ["recv", "--port", str(t.cport), *nbytes])
        received = LineReader(receiver, f"{what} (receiver on {t.dst.name})")
        received.line(START_TIMEOUT_S)  # listening
        sender = self._start(t.src.host_pid, python,
                             ["send", "--port", str(t.port), "--to", t.dst.ip, "--to-port", str(t.cport), *nbytes])
        sent = LineReader(sender, f"{what} (sender on {t.src.name})")
        sent.line(START_TIMEOUT_S)  # connected
        return StreamFlow(sender, sent, received)

    def __call__(self, phase: list[Transfer]) -> list[TransferResult]:
        start_s = time.time()
        failed = {}
        for t in phase:
            try:
                self._flows[t.port].sender.stdin.write(b"go\n")
                self._flows[t.port].sender.stdin.flush()
            except OSError as exc:  # the sender is gone
                failed[t.port] = f"{self._flows[t.port].sent.what}: {exc}"
        out = []
        for t in phase:
            flow = self._flows[t.port]
            try:
                if t.port in failed:
                    raise RuntimeError(failed[t.port])
                _, first_s, last_s = flow.received.line(FLOW_TIMEOUT_S).split()
                retransmits = int(flow.sent.line(FLOW_TIMEOUT_S).split()[1])
            except (TimeoutError, RuntimeError, ValueError, IndexError) as exc:
                out.append(TransferResult(t, start_s, time.time(), 0, 0, str(exc)))
                continue
            out.append(TransferResult(t, start_s, float(last_s), t.nbytes, retransmits - flow.retransmits, "",
                                      float(last_s) - float(first_s)))
            flow.retransmits = retransmits
        return out

    def close(self) -> None:
        """End every sender and receiver, by PID (closing their input ends them first)."""
        for proc in self.procs:
            try:
                proc.stdin.close()
            except OSError:
                pass
        for proc in self.procs:
            try:
                proc.wait(timeout=1.0)
            except subprocess.TimeoutExpired:
                iperf.kill_pid(proc.pid, 1.0)
                proc.wait()
