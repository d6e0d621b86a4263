"""How much disk a run needs, and the floor below which a running measurement stops.

A run's bulk is its packet captures: tcpdump keeps ``SNAPLEN`` bytes of every
packet on the shared link plus a 16-byte record header (``apps/capture.py``).
The estimate assumes every packet of a flow is a 1500-byte frame at the shared
link's full rate for every second the link is captured (calibration and each
policy), an upper bound: with jumbo frames a run writes about a sixth of it.
Before a run, ``shiftbed run`` refuses when the results folder's disk has less
than :func:`estimated_bytes` free; while it runs, a measurement stops when less
than :data:`DISK_FLOOR_BYTES` is left, and the run ends with what it measured
(the results writer keeps a reserve for the summary and the report:
``scenarios/results.py``).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from apps.capture import SNAPLEN
from scenarios.experiment.counts import (
    CALIBRATION_ITERATIONS,
    MODEL_CALIBRATION_ITERATIONS,
    PERIOD_CORRECTIONS,
    SIZING_ROUNDS,
)
from scenarios.results import RESERVE_BYTES

PCAP_RECORD_HEADER_BYTES = 16
SMALLEST_FULL_FRAME_BYTES = 1500  # frames per second are counted as if none were jumbo
# Tables, logs, the controller's log, plots and the report of one run: measured
# runs of the shipped scenarios wrote 1-5 MB besides their captures.
FIXED_BYTES = 20 * 2**20
# A running measurement stops below this much free space: tcpdump writes at most
# ~0.5 MB/s at 50 Mbit/s (1500-byte frames), and the watch looks every 0.2 s.
DISK_FLOOR_BYTES = 2 * 2**20


def calibration_seconds(periods_ms: list[float]) -> float:
    """Seconds of solo runs calibration may take: every sizing round and period correction."""
    iterations = (SIZING_ROUNDS * CALIBRATION_ITERATIONS
                  + (1 + PERIOD_CORRECTIONS) * MODEL_CALIBRATION_ITERATIONS)
    return sum(periods_ms) / 1000 * iterations


def estimated_bytes(link_mbps: float, periods_ms: list[float], policies: int, duration_s: float) -> int:
    """Disk one run needs at most (without the host-busy re-measurements, which add whole measurements)."""
    frames_per_s = link_mbps * 1e6 / 8 / SMALLEST_FULL_FRAME_BYTES
    capture_bytes_per_s = frames_per_s * (SNAPLEN + PCAP_RECORD_HEADER_BYTES)
    seconds = calibration_seconds(periods_ms) + policies * duration_s
    return int(capture_bytes_per_s * seconds) + FIXED_BYTES + RESERVE_BYTES


def free_bytes(path: str | Path) -> int:
    """Free bytes on the file system holding ``path`` (or its nearest existing parent)."""
    existing = next(p for p in (Path(path), *Path(path).absolute().parents) if p.exists())
    return shutil.disk_usage(existing).free
