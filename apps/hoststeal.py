"""How much of this machine's CPU its hypervisor took while something was measured.

On a virtual machine, ``steal`` in ``/proc/stat`` counts the time a virtual
CPU wanted to run and its host ran something else. The emulated network is
all software on two cores, so stolen time stretches every process start,
every burst and every packet's path through Open vSwitch: with 35 % stolen,
four 50-Mbit/s flows got 43-45 Mbit/s here, with 1-3 % they got 49.3-49.6;
in a classroom run with 7-13 % stolen during its policies, bursts took a
quarter longer than alone in calibration (docs/accuracy.md). A measurement taken while the host took more than
:data:`MAX_STEAL_PCT` says more about the host than about shiftbed.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

log = logging.getLogger(__name__)
T = TypeVar("T")

PROC_STAT = "/proc/stat"
# Quiet here: 0.5-3 % over a policy's run; disturbed: 7-13 % (measurements off by 5-60 %).
MAX_STEAL_PCT = 5.0
SAMPLE_S = 1.0
# A busy host stayed busy for tens of seconds to minutes (24 % stolen in two 2-s measurements
# in a row; on the CI machine 5-16 % over the three attempts at one 4-s flow): before measuring
# again, wait until one QUIET_SAMPLE_S has the host under MAX_STEAL_PCT, at least
# REMEASURE_PAUSE_S and at most QUIET_WAIT_S.
REMEASURE_PAUSE_S = 5.0
QUIET_SAMPLE_S = 2.0
QUIET_WAIT_S = 40.0


class HostBusy(RuntimeError):
    """Every attempt at a measurement was disturbed: what it measured is the host, not shiftbed."""

    def __init__(self, what: str, steal_pcts: list[float], result=None):
        self.what, self.steal_pcts, self.result = what, steal_pcts, result  # result: the last attempt's
        shares = ", ".join(f"{pct:.1f}" for pct in steal_pcts)
        super().__init__(f"the host took {shares} % of the CPU in the {len(steal_pcts)} attempts at {what} "
                         f"(more than {MAX_STEAL_PCT:g} % in each): the measurement says more about the host")


# How a run says the host disturbed a measurement (scenarios/experiment/drive.py, :func:`undisturbed`).
_MEASURED_AGAIN = re.compile(r"the host took ([0-9.]+) % of (?:this machine's CPU \(more than|the CPU; measuring again)")


def measured_again_pcts(output: str) -> list[float]:
    """The host's shares of the CPU (%) in the measurements it disturbed, from a run's output.

    A deadline set for a run on a quiet host can pass while it re-measures on a
    busy one: those shares make a test's timeout the host's, not shiftbed's."""
    return [float(pct) for pct in _MEASURED_AGAIN.findall(output)]


def cpu_ticks(text: str) -> tuple[int, int]:
    """(steal, total) ticks from the ``cpu`` line of ``/proc/stat``'s text (kernels without steal: 0)."""
    for line in text.splitlines():
        fields = line.split()
        if fields and fields[0] == "cpu":
            ticks = [int(x) for x in fields[1:]]
            # user nice system idle iowait irq softirq steal guest guest_nice; guest time is in user's
            return (ticks[7] if len(ticks) > 7 else 0), sum(ticks[:8])
    raise ValueError("no cpu line in /proc/stat")


def steal_pct(before: tuple[int, int], after: tuple[int, int]) -> float:
    """Stolen share (%) of the CPU time between two :func:`cpu_ticks` readings (0 if none passed)."""
    total = after[1] - before[1]
    return 100.0 * (after[0] - before[0]) / total if total > 0 else 0.0


@dataclass(frozen=True)
class Steal:
    """Stolen CPU over one measurement: the mean, and the worst :data:`SAMPLE_S` within it (%)."""

    mean_pct: float
    peak_pct: float

    @property
    def disturbed(self) -> bool:
        return self.mean_pct > MAX_STEAL_PCT

    def as_dict(self) -> dict:
        return {"mean_pct": round(self.mean_pct, 2), "peak_pct": round(self.peak_pct, 2)}


def read_ticks() -> tuple[int, int]:
    with open(PROC_STAT) as f:
        return cpu_ticks(f.read())


class StealMeter:
    """Samples ``/proc/stat`` every :data:`SAMPLE_S` in a thread, from :meth:`start` to :meth:`stop`."""

    def __init__(self, read=None, sample_s: float = SAMPLE_S):
        self._read, self._sample_s = read or read_ticks, sample_s
        self._stop = threading.Event()
        self._peak_pct = 0.0
        self._thread: threading.Thread | None = None

    def start(self) -> StealMeter:
        self._first = self._read()
        self._thread = threading.Thread(target=self._loop, name="steal-meter", daemon=True)
        self._thread.start()
        return self

    def _loop(self) -> None:
        last = self._first
        while not self._stop.wait(self._sample_s):
            now = self._read()
            self._peak_pct = max(self._peak_pct, steal_pct(last, now))
            last = now

    def stop(self) -> Steal:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        mean = steal_pct(self._first, self._read())
        return Steal(mean, max(self._peak_pct, mean))


def wait_until_quiet(pause_s: float = REMEASURE_PAUSE_S, max_wait_s: float = QUIET_WAIT_S,
                     sample_s: float = QUIET_SAMPLE_S, read=None, sleep=time.sleep) -> float:
    """Wait ``pause_s``, then until one ``sample_s`` has the host under :data:`MAX_STEAL_PCT`
    (at most ``max_wait_s`` in all); returns the last sample's stolen share (%)."""
    read = read or read_ticks
    sleep(pause_s)
    waited_s = pause_s
    while True:
        before = read()
        sleep(sample_s)
        pct = steal_pct(before, read())
        waited_s += sample_s
        if pct <= MAX_STEAL_PCT or waited_s >= max_wait_s:
            return pct
        log.info("the host took %.1f %% of the CPU over %g s; waiting for it to be quieter", pct, sample_s)


def undisturbed(measure: Callable[[int], T], what: str, attempts: int = 3, busy_raises: bool = False,
                wait: Callable[[], object] = wait_until_quiet) -> T:
    """``measure(attempt)`` (1, 2, ...), again (after ``wait()``: until the host is quiet)
    while the host took more than :data:`MAX_STEAL_PCT` of the CPU during it, up to ``attempts``
    times in all. The attempt number lets each attempt keep its own folder. If every attempt was
    disturbed, the last result is returned, or :class:`HostBusy` raised with ``busy_raises`` (a
    test's verdict on such a measurement would be the host's)."""
    steal_pcts = []
    for attempt in range(1, attempts + 1):
        meter = StealMeter().start()
        result = measure(attempt)
        steal = meter.stop()
        steal_pcts.append(steal.mean_pct)
        if not steal.disturbed:
            return result
        if attempt == attempts:
            if busy_raises:
                raise HostBusy(what, steal_pcts, result)
            return result
        log.warning("%s: the host took %.1f %% of the CPU; measuring again (attempt %d of %d)",
                    what, steal.mean_pct, attempt + 1, attempts)
        wait()
    raise AssertionError("unreachable")
