"""Standing TCP connections for a job's bursts: one sender and one receiver process per flow.

Collective libraries (NCCL's socket transport, Gloo) open their connections
once and keep them for the whole of training, so every burst after the first
goes out on an established connection: no process to start, no handshake,
and two bursts that meet start alike. iperf3 cannot do that: each test is a
new connection and a new process. This module is the other way to run a job's flows
(``transport: persistent`` in a scenario; ``apps.transports.StreamTransport``):

- ``recv --port CPORT --burst-bytes N``, in the receiving host: listens on
  ``CPORT``, prints ``listening``, accepts one connection and, every time
  another ``N`` bytes have arrived, prints ``<burst> <first byte> <last byte>``
  (unix seconds);
- ``send --port P --to IP --to-port CPORT --burst-bytes N``, in the sending
  host: binds ``P``, connects, prints ``connected``, then writes ``N`` bytes
  for every line on its standard input and prints ``<burst> <retransmits so
  far>`` once they are handed to the kernel.

``--burst-bytes N1,N2,...`` (a pattern job's phases, one burst each): burst
``k`` is ``N[k mod len]`` bytes on both sides, so the connection carries every
phase of an iteration in turn.

The data flows ``P -> CPORT`` as iperf3's reverse-mode bursts do, so the
fabric's port plan, gate and captures see the same flows. Both sides end by
themselves at the end of their standard input, which the job's driver holds
open: so they go with it, however it ends (and the receiver also when the
sender's connection closes).

Standard library only: it runs under ``mnexec`` in a host's namespace.
"""

from __future__ import annotations

import argparse
import select
import socket
import struct
import sys
import time

CONGESTION = b"cubic"  # as the iperf3 bursts (apps/iperf.py says why)
CHUNK_BYTES = 1 << 18
CONNECT_TIMEOUT_S = 5.0
# struct tcp_info: tcpi_total_retrans is the 32-bit field at byte 100 (linux/tcp.h).
TCPI_TOTAL_RETRANS = struct.Struct("=I")
TCPI_TOTAL_RETRANS_OFFSET = 100


def total_retransmits(sock: socket.socket) -> int:
    """Segments this connection has retransmitted so far (``TCP_INFO``)."""
    info = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 104)
    return TCPI_TOTAL_RETRANS.unpack_from(info, TCPI_TOTAL_RETRANS_OFFSET)[0]


def say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def ready_unless_stdin_closed(sock: socket.socket) -> bool:
    """Wait until ``sock`` is readable (True) or standard input has ended (False)."""
    while True:
        readable = select.select([sock, sys.stdin], [], [])[0]
        if sys.stdin in readable and not sys.stdin.buffer.raw.read(4096):
            return False
        if sock in readable:
            return True


def receive(port: int, burst_bytes: list[int]) -> int:
    """Accept one connection on ``port`` and report each burst received (burst ``k``:
    ``burst_bytes[k mod len]`` bytes)."""
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("", port))
    server.listen(1)
    say("listening")
    if not ready_unless_stdin_closed(server):
        return 0
    conn, _ = server.accept()
    server.close()
    burst, got, first_s = 0, 0, None
    while True:
        if not ready_unless_stdin_closed(conn):
            return 0
        data = conn.recv(CHUNK_BYTES)
        if not data:
            return 0
        if first_s is None:
            first_s = time.time()
        got += len(data)
        size = burst_bytes[burst % len(burst_bytes)]
        while got >= size:  # a burst ends exactly at its byte count; the rest is the next one's
            say(f"{burst} {first_s:.6f} {time.time():.6f}")
            burst, got = burst + 1, got - size
            size = burst_bytes[burst % len(burst_bytes)]
            first_s = time.time() if got else None


def send(port: int, to_ip: str, to_port: int, burst_bytes: list[int]) -> int:
    """Connect from ``port`` to ``to_ip:to_port`` and send a burst for each line read (burst ``k``:
    ``burst_bytes[k mod len]`` bytes)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, CONGESTION)
    sock.bind(("", port))
    sock.settimeout(CONNECT_TIMEOUT_S)
    sock.connect((to_ip, to_port))
    sock.settimeout(None)
    say("connected")
    payload = memoryview(bytes(max(burst_bytes)))
    burst = 0
    for _ in sys.stdin:
        sock.sendall(payload[:burst_bytes[burst % len(burst_bytes)]])
        say(f"{burst} {total_retransmits(sock)}")
        burst += 1
    sock.shutdown(socket.SHUT_WR)
    sock.close()
    return 0


def byte_counts(text: str) -> list[int]:
    """``N`` or ``N1,N2,...``: each a positive whole number of bytes."""
    try:
        counts = [int(part) for part in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected N or N1,N2,... bytes, got {text!r}") from None
    if not counts or min(counts) <= 0:
        raise argparse.ArgumentTypeError("--burst-bytes must be positive")
    return counts


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="apps/stream.py", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="side", required=True)
    recv = sub.add_parser("recv", help="the receiving end of one flow")
    recv.add_argument("--port", type=int, required=True)
    recv.add_argument("--burst-bytes", type=byte_counts, required=True)
    snd = sub.add_parser("send", help="the sending end of one flow")
    snd.add_argument("--port", type=int, required=True)
    snd.add_argument("--to", required=True)
    snd.add_argument("--to-port", type=int, required=True)
    snd.add_argument("--burst-bytes", type=byte_counts, required=True)
    args = parser.parse_args(argv)
    if args.side == "recv":
        return receive(args.port, args.burst_bytes)
    return send(args.port, args.to, args.to_port, args.burst_bytes)


if __name__ == "__main__":
    sys.exit(main())
