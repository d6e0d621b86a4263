"""Packet capture at a link with tcpdump, tracked by PID.

docs/platform.md: scapy's live sniffer keeps up with ~3 000 packets/s, tcpdump
(``-s 96 -B 16384 -w``) with 100 % at 30 000 packets/s; so capture with
tcpdump to a pcap and parse offline (``scenarios/analysis/pcap.py``). Switch ports live
in the root namespace, so the shared link is captured on its switch-side
interface (e.g. ``leaf1-eth3``); a host's interface needs ``host_pid``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time

from apps.iperf import in_host, kill_pid

SNAPLEN = 96  # Ethernet + IPv4 + TCP headers with options; payload is not needed
BUFFER_KIB = 16384


def tcpdump_argv(interface: str, pcap_path: str, bpf: str = "ip") -> list[str]:
    """tcpdump writing headers only, no name resolution, a big kernel buffer."""
    argv = ["tcpdump", "-i", interface, "-s", str(SNAPLEN), "-B", str(BUFFER_KIB), "-n", "-U",
            "--immediate-mode", "-w", pcap_path]
    return argv + ([bpf] if bpf else [])


class Capture:
    """``tcpdump`` on ``interface`` into ``pcap_path`` until :meth:`stop` (by PID).

    ``on_start(pid)`` lets the caller record the PID (e.g. ``fabric.track``).
    """

    def __init__(self, interface: str, pcap_path: str, bpf: str = "ip", host_pid: int | None = None,
                 on_start=None, log_path: str | None = None):
        self.interface, self.pcap_path = interface, pcap_path
        self._log = open(log_path or os.devnull, "wb")
        self.proc = subprocess.Popen(in_host(host_pid, tcpdump_argv(interface, pcap_path, bpf)),
                                     stdout=subprocess.DEVNULL, stderr=self._log)
        self.pid = self.proc.pid
        if on_start:
            on_start(self.pid)
        self._wait_started()

    def _wait_started(self, timeout_s: float = 5.0) -> None:
        """tcpdump writes the pcap header once it listens; wait for it."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"tcpdump on {self.interface} exited with {self.proc.returncode}")
            if os.path.exists(self.pcap_path) and os.path.getsize(self.pcap_path) >= 24:
                time.sleep(0.05)
                return
            time.sleep(0.02)
        self.stop()
        raise RuntimeError(f"tcpdump on {self.interface} did not start within {timeout_s} s")

    def stop(self) -> str:
        """SIGINT (tcpdump flushes and exits), then by PID if it lingers; returns the pcap path."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=3)
            except subprocess.TimeoutExpired:
                kill_pid(self.proc.pid)
                self.proc.wait()
        self._log.close()
        return self.pcap_path

    def __enter__(self):
        return self

    def __exit__(self, *_exc):
        self.stop()
