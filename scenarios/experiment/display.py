"""The run's display on standard error: a live status on a terminal (rich), plain lines in a log.

Thin adapter over ``progressview.py`` (what to show, when a log gets a line)
and ``estimate.py`` (what is left). While it shows, the run's log records (the
stage lines of ``progress.stages``, warnings, ``-v`` detail) pass through it:
on a terminal they are printed above the live status, in a log they are
written as lines, each stage's with the time so far and what is left.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import threading
import time

from scenarios.experiment import progressview as view
from scenarios.experiment.estimate import Timeline
from scenarios.experiment.progress import stages

SAMPLE_INTERVAL_S = 1.0  # how often a measurement's iterations and link load are read
REFRESH_PER_S = 4  # how often the terminal's status is redrawn


class RunDisplay:
    """One display for a whole run (or the demo's runs): :meth:`showing` around each run,
    :meth:`begin` at each stage, :meth:`start_measure` / :meth:`update` / :meth:`end_measure` around
    each measurement, :meth:`finish` at the end."""

    def __init__(self, stream, timeline: Timeline, intro: str, *, terminal: bool | None = None,
                 clock=time.monotonic, interval_s: float = view.PLAIN_INTERVAL_S):
        self.stream, self.timeline, self.intro, self.clock = stream, timeline, intro, clock
        self.terminal = _isatty(stream) if terminal is None else terminal
        self.log = view.PlainLog(interval_s)
        self._lock = threading.RLock()
        self._measure: tuple[str, float, float] | None = None  # label, total_s, started (clock)
        self._sample: tuple[dict[str, int], float | None] = ({}, None)
        self._console = self._live = None
        self._introduced = False
        self.note = ""  # a line the terminal's status keeps under the clock (a batch's scenarios done)

    # -- the run's events ------------------------------------------------------

    @contextlib.contextmanager
    def showing(self):
        """Show the display while a run goes; its log records pass through it meanwhile."""
        self.timeline.start()
        handler = _Handler(self)
        root = logging.getLogger()
        moved = [h for h in root.handlers if _writes_to(h, self.stream)]
        for h in moved:
            root.removeHandler(h)
        handler.setLevel(min((h.level for h in moved), default=logging.NOTSET))
        if moved and moved[0].formatter:
            handler.setFormatter(moved[0].formatter)
        root.addHandler(handler)
        try:
            if self.terminal:
                self._start_live()
            self.introduce()
            yield self
        finally:
            self.end_measure()
            self._stop_live()
            root.removeHandler(handler)
            for h in moved:
                root.addHandler(h)

    def introduce(self) -> None:
        """The estimate of the whole run, once, before anything is built."""
        if not self._introduced:
            self._introduced = True
            self._write([self.intro])

    def begin(self, key) -> None:
        self.timeline.begin(key)

    def start_measure(self, label: str, total_s: float) -> None:
        with self._lock:
            self._measure, self._sample = (label, total_s, self.clock()), ({}, None)

    def update(self, iterations: dict[str, int], link_share: float | None) -> None:
        """A measurement's iterations so far per job and the link's load (a share of its rate)."""
        with self._lock:
            self._sample = (dict(iterations), link_share)
            if self.terminal or self._measure is None:
                return
            lines = self.log.progress(self._measure_text(self._measure, self._sample), self.clock(),
                                      self.timeline.elapsed_s(), self.timeline.left_s())
            self._write(lines)

    def end_measure(self) -> None:
        with self._lock:
            self._measure = None

    def finish(self) -> None:
        """The whole run is over: how long it took against the estimate."""
        self.timeline.end()
        self._write([view.finished_line(self.timeline.elapsed_s(), self.timeline.estimate_s)])

    # -- what reaches the stream -------------------------------------------------

    def record(self, text: str, is_stage: bool) -> None:
        """A log record: a stage's line (with the clock) or a message (as it is)."""
        with self._lock:
            if is_stage:  # a stage's line is said when the stage is done (the plan's, before any began)
                self.timeline.complete()
                lines = self.log.stage(text, self.clock(), self.timeline.elapsed_s(), self.timeline.left_s())
            else:
                lines = self.log.message(text, self.clock())
            self._write(lines)

    def _write(self, lines: list[str]) -> None:
        with self._lock:
            if self._console is not None:
                for line in lines:
                    self._console.print(line, markup=False, highlight=False, soft_wrap=True)
                return
            for line in lines:
                for part in view.fit(line):
                    self.stream.write(part + "\n")
            self.stream.flush()

    def _measure_text(self, measure, sample) -> str:
        label, total_s, started = measure
        iterations, share = sample
        return view.measure_text(label, self.clock() - started, total_s, iterations, share)

    # -- the terminal (rich) -----------------------------------------------------

    def _start_live(self) -> None:
        from rich.console import Console
        from rich.live import Live

        self._console = Console(file=self.stream)
        self._live = Live(_Status(self), console=self._console, refresh_per_second=REFRESH_PER_S,
                          transient=True, redirect_stdout=False, redirect_stderr=True)
        self._live.start()

    def _stop_live(self) -> None:
        if self._live is not None:
            self._live.stop()
        self._live = self._console = None


class _Status:
    """The terminal's live status, drawn afresh at each refresh: the whole run, then the measurement."""

    def __init__(self, display: RunDisplay):
        self.display = display

    def __rich__(self):
        from rich.console import Group
        from rich.progress_bar import ProgressBar
        from rich.table import Table
        from rich.text import Text

        d = self.display
        elapsed, left = d.timeline.elapsed_s(), d.timeline.left_s()
        row = Table.grid(padding=(0, 1))
        row.add_row(ProgressBar(total=max(elapsed + left, 1e-9), completed=elapsed, width=30),
                    Text(f"{view.minutes_text(elapsed)}, about {view.minutes_text(left)} left"),
                    Text(d.timeline.stage_name(), style="bold"))
        measure, sample = d._measure, d._sample  # no lock: the refresh must never wait on a writer
        measuring = d._measure_text(measure, sample) if measure is not None else None
        lines = [row, *([Text("  " + d.note)] if d.note else []), *([Text("  " + measuring)] if measuring else [])]
        return Group(*lines) if len(lines) > 1 else row


class _Handler(logging.Handler):
    """Log records through the display: stage lines with the clock, the rest as they are."""

    def __init__(self, display: RunDisplay):
        super().__init__()
        self.display = display

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.display.record(self.format(record), record.name == stages.name)
        except Exception:
            self.handleError(record)


class Sampler:
    """During one measurement: every :data:`SAMPLE_INTERVAL_S`, each job's iterations (rows of its
    drivers' CSV, per worker) and the captured port's load, to the display."""

    def __init__(self, display: RunDisplay, interface: str, link_mbps: float,
                 csv_paths: dict[str, tuple[str, int]]):
        self.display, self.interface, self.link_mbps, self.csv_paths = display, interface, link_mbps, csv_paths
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self, label: str, total_s: float) -> None:
        self.display.start_measure(label, total_s)
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join()
        self.display.end_measure()

    def _loop(self) -> None:
        last_bytes, last_t = _tx_bytes(self.interface), time.monotonic()
        while not self._stop.wait(SAMPLE_INTERVAL_S):
            now, now_bytes = time.monotonic(), _tx_bytes(self.interface)
            share = (now_bytes - last_bytes) * 8 / 1e6 / max(now - last_t, 1e-3) / self.link_mbps
            last_bytes, last_t = now_bytes, now
            done = {job: _count_rows(path) // workers for job, (path, workers) in self.csv_paths.items()}
            self.display.update(done, share)


def _isatty(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _writes_to(handler: logging.Handler, stream) -> bool:
    """A handler that writes to the display's stream (or to standard error, which it usually is)."""
    target = getattr(handler, "stream", None)
    return isinstance(handler, logging.StreamHandler) and target is not None and target in (stream, sys.stderr)


def _tx_bytes(interface: str) -> int:
    try:
        with open(f"/sys/class/net/{interface}/statistics/tx_bytes") as f:
            return int(f.read())
    except (OSError, ValueError):
        return 0


def _count_rows(path: str) -> int:
    try:
        with open(path) as f:
            return max(0, sum(1 for _ in f) - 1)
    except OSError:
        return 0
