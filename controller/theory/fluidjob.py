"""The fluid model's inputs: a job's figures (planned or measured) and its windows; and what it records of the link.

``controller/theory/fluid.py`` simulates these; a run's measured figures come from
``scenarios/experiment/prediction.py``.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

from controller.theory.windows import last_window_index, next_window_index, window_start_ms

EPS_MS = 1e-9  # times (ms) closer than this are the same instant
TOGETHER_MS = 10.0  # two jobs' bursts launched this close start busy (scenarios.analysis.tables.TOGETHER_S)


@dataclass(frozen=True)
class FluidJob:
    """A job's solo figures (measured or planned): period and burst length, ms."""

    name: str
    period_ms: float
    comm_ms: float
    link_headroom: float = 1.0  # link rate / this job's solo burst rate (>= 1)
    comm_samples_ms: tuple[float, ...] = ()  # measured bursts, drawn from when simulate() gets an rng
    busy_start_ms: float = 0.0  # a burst starting while another job's is on the link sends this much later
    # with each measured burst, how much longer than usual its job took after it (ms, may be < 0):
    # added to the computation that follows; used only when there is one per comm sample
    after_samples_ms: tuple[float, ...] = ()
    # measured busy starts' costs (ms, >= 0): with an rng, each busy start draws one instead of busy_start_ms
    busy_start_samples_ms: tuple[float, ...] = ()
    # measured extra time after bursts that were on the link beside other jobs' (ms, >= 0), by kind:
    # "shared" (beside a job it shares a link with) and "apart" (beside jobs on other links only).
    # With an rng, each such burst draws one of its kind and the computation that follows starts that
    # much later
    busy_after_samples_ms: tuple[tuple[str, tuple[float, ...]], ...] = ()
    # launch -> first data on the link (ms): a start is busy when another job's data was going at the
    # launch, or another job launched within TOGETHER_MS of it (as a run's bursts are judged)
    lead_ms: float = 0.0
    # with each measured burst, how much later than usual its data started (ms, may be < 0; part of its
    # comm sample); used only when there is one per comm sample
    late_samples_ms: tuple[float, ...] = ()
    # the job keeps its own clock: what a burst's start and end took beyond the usual (a late or busy
    # start, a longer after phase) comes off the computation that follows (apps.dltjob.JobDriver.compute_s)
    keeps_clock: bool = False

    def draw(self, rng: random.Random | None) -> tuple[float, float, float]:
        """The next burst: (its length alone on the link, the extra time after it, how much later than
        usual its data started), one measured burst's."""
        if rng is None or not self.comm_samples_ms:
            return self.comm_ms, 0.0, 0.0
        k = rng.randrange(len(self.comm_samples_ms))  # the stream rng.choice() draws from
        after = self.after_samples_ms[k] if len(self.after_samples_ms) == len(self.comm_samples_ms) else 0.0
        late = self.late_samples_ms[k] if len(self.late_samples_ms) == len(self.comm_samples_ms) else 0.0
        return self.comm_samples_ms[k], after, late

    def busy_start_cost(self, rng: random.Random | None) -> float:
        """What this burst's busy start costs: one measured busy start's, else ``busy_start_ms``."""
        if rng is None or not self.busy_start_samples_ms:
            return self.busy_start_ms
        return self.busy_start_samples_ms[rng.randrange(len(self.busy_start_samples_ms))]

    def busy_after_cost(self, kind: str | None, rng: random.Random | None) -> float:
        """How much longer than usual the job takes after a burst that met another job's: one measured
        burst's of that ``kind`` ("shared" or "apart"; None or no rng or none measured: 0)."""
        samples = dict(self.busy_after_samples_ms).get(kind, ())
        if rng is None or not samples:
            return 0.0
        return samples[rng.randrange(len(samples))]


@dataclass(frozen=True)
class FluidWindow:
    """The fluid model's windows for one job: ``[shift + k*period, shift + k*period + length)``, any k
    (``controller/theory/windows.py``).

    ``grace_ms``: a burst ready at most this long after a window's start still
    takes that window, late (the job driver's launch lead and tolerance). It is
    negative for a job that launches after its window opens (standing
    connections: its data follows its launch within a millisecond, less than
    ``scenarios.experiment.calibration.LAUNCH_GUARD_MS``): such a burst ready
    less than ``-grace_ms`` before a window's start misses that window, and one
    that waited for a window's start takes it (:meth:`takes`, :meth:`wait_start`).
    """

    shift_ms: float
    period_ms: float
    length_ms: float
    grace_ms: float = 0.0

    def next_start(self, t_ms: float) -> float:
        """Start of the first window that opens at or after ``t_ms``."""
        return window_start_ms(self.shift_ms, self.period_ms,
                               next_window_index(self.shift_ms, self.period_ms, t_ms, EPS_MS))

    def last_start(self, t_ms: float) -> float:
        """Start of the latest window that opened at or before ``t_ms``."""
        return window_start_ms(self.shift_ms, self.period_ms,
                               last_window_index(self.shift_ms, self.period_ms, t_ms, EPS_MS))

    def takes(self, t_ms: float) -> bool:
        """Does a burst ready at ``t_ms`` go at once: a window start, or within the grace after one?"""
        late_ms = max(self.grace_ms, 0.0)
        return t_ms - self.last_start(t_ms) <= late_ms + 1e-6 and self.end_of_current(t_ms) is not None

    def wait_start(self, t_ms: float) -> float:
        """Start of the window a burst ready at ``t_ms`` that does not go at once (:meth:`takes`) waits
        for: the next, or with a negative grace the first that opens at least ``-grace_ms`` later."""
        return self.next_start(t_ms - min(self.grace_ms, 0.0))

    def end_of_current(self, t_ms: float) -> float | None:
        """End of the window containing ``t_ms``, or None outside every window."""
        end = self.last_start(t_ms) + self.length_ms
        return end if t_ms < end - EPS_MS else None


@dataclass
class LinkTrace:
    """What the link carried, step by step, for a picture of it (``shiftbed explore``): each step with data
    moving as ``(start_ms, end_ms, {job: its speed relative to alone}, meeting)``, ``meeting`` where two or more
    bursts moved data on one link (what ``overlap_share`` counts), up to ``until_ms``; and the windows the
    jobs ran against (``fluid.simulate`` fills them in)."""

    until_ms: float = math.inf
    steps: list = field(default_factory=list)
    windows: dict = field(default_factory=dict)

    def record(self, t0_ms: float, t1_ms: float, moving: dict, links, windows: dict) -> None:
        """One step of ``fluid.simulate`` (``links``: its JobLinks, None for one link; ``windows``: its windows)."""
        self.windows = windows
        if moving and t0_ms < self.until_ms and t1_ms > t0_ms:
            meeting = len(moving) >= 2 and (links is None or bool(links.meeting(moving)))
            self.steps.append((t0_ms, t1_ms, moving, meeting))


def mean_iteration(ends: list[float], warmup: int, span: tuple[float, float] | None) -> tuple[int, float]:
    """(iterations counted, mean iteration ms): after ``warmup`` bursts, or over the bursts that end in
    ``span`` (at least two of them, taking the first after it if need be; infinite if there are none)."""
    if span is None:
        e = ends[warmup:]
        return len(e) - 1, (e[-1] - e[0]) / (len(e) - 1)
    inside = [k for k, x in enumerate(ends) if x >= span[0] - EPS_MS]
    if len(inside) < 2:
        return 0, math.inf
    a = inside[0]
    b = max([k for k in inside if ends[k] <= span[1] + EPS_MS] + [a + 1])
    return b - a, (ends[b] - ends[a]) / (b - a)
