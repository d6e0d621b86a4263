"""How a job's flows travel: a fresh iperf3 test per burst, or standing connections.

A transport is called with one phase of a collective (``apps.dltjob.collective``),
runs its flows together and returns when every one is done; ``close`` ends
whatever it started, by PID. :func:`open_transport` picks one by the job's
``transport`` (``apps.dltjob.TRANSPORTS``).
"""

from __future__ import annotations

import os
import sys
import time

from apps.dltjob import JobSpec, Transfer, TransferResult, collective


def open_transport(spec: JobSpec, run_dir: str):
    """The transport ``spec.transport`` names, its servers or connections ready."""
    if spec.transport == "persistent":
        return StreamTransport(spec)
    return IperfTransport(spec, run_dir)


class IperfTransport:
    """Runs a phase's flows as real iperf3 clients; owns one server per flow (ended by PID)."""

    def __init__(self, spec: JobSpec, run_dir: str):
        from apps import iperf

        self._iperf = iperf
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
        self.clients = [self._iperf.Client(t.src.ip, t.port, t.cport, t.nbytes, t.dst.host_pid)
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
        self._iperf.stop_servers(self.servers)


class LineReader:
    """Whole lines from a child's stdout pipe, each waited for with a deadline."""

    def __init__(self, proc, what: str):
        self.proc, self.what, self._buffer = proc, what, b""

    def line(self, timeout_s: float) -> str:
        import select

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
FLOW_TIMEOUT_S = 60.0


class StreamTransport:
    """Runs a phase's flows over standing connections (``apps/stream.py``), opened once per job.

    Each flow has a receiver in its destination host and a sender in its source
    host, both this driver's children (ended by PID, and by themselves when it
    goes). A burst is a line to each sender; it is done when its receiver has
    every byte.
    """

    def __init__(self, spec: JobSpec, python: str = sys.executable):
        import subprocess

        from apps import iperf

        self._iperf = iperf
        self.procs: list = []
        self._flows: dict[int, tuple] = {}  # server port -> (sender, its reader, receiver's reader, retransmits)
        for worker in spec.workers:
            if worker.host_pid is not None:
                iperf.tune_host_tcp(worker.host_pid)
        try:
            for phase in collective(spec):
                for t in phase:
                    what = f"flow {t.src.name}->{t.dst.name}"
                    recv = subprocess.Popen(
                        iperf.in_host(t.dst.host_pid, [python, STREAM_SCRIPT, "recv", "--port", str(t.cport),
                                                       "--burst-bytes", str(t.nbytes)]),
                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.PIPE)
                    self.procs.append(recv)
                    recv_reader = LineReader(recv, f"{what} (receiver on {t.dst.name})")
                    recv_reader.line(10.0)  # listening
                    sender = subprocess.Popen(
                        iperf.in_host(t.src.host_pid, [python, STREAM_SCRIPT, "send", "--port", str(t.port),
                                                       "--to", t.dst.ip, "--to-port", str(t.cport),
                                                       "--burst-bytes", str(t.nbytes)]),
                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.PIPE)
                    self.procs.append(sender)
                    send_reader = LineReader(sender, f"{what} (sender on {t.src.name})")
                    send_reader.line(10.0)  # connected
                    self._flows[t.port] = [sender, send_reader, recv_reader, 0]
        except BaseException:
            self.close()
            raise

    def __call__(self, phase: list[Transfer]) -> list[TransferResult]:
        start_s = time.time()
        for t in phase:
            sender = self._flows[t.port][0]
            sender.stdin.write(b"go\n")
            sender.stdin.flush()
        out = []
        for t in phase:
            flow = self._flows[t.port]
            try:
                _, first_s, last_s = flow[2].line(FLOW_TIMEOUT_S).split()
                retransmits = int(flow[1].line(FLOW_TIMEOUT_S).split()[1])
            except (TimeoutError, RuntimeError, ValueError, IndexError) as exc:
                out.append(TransferResult(t, start_s, time.time(), 0, 0, str(exc)))
                continue
            out.append(TransferResult(t, start_s, float(last_s), t.nbytes, retransmits - flow[3], "",
                                      float(last_s) - float(first_s)))
            flow[3] = retransmits
        return out

    def close(self) -> None:
        """End every sender and receiver, by PID (closing a sender's input ends it first)."""
        for proc in self.procs:
            if proc.stdin:
                try:
                    proc.stdin.close()
                except OSError:
                    pass
        for proc in self.procs:
            try:
                proc.wait(timeout=1.0)
            except Exception:
                self._iperf.kill_pid(proc.pid, 1.0)
                proc.wait()
