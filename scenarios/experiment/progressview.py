"""What the run's display shows, and when a log gets a line: decisions only, no terminal.

On a terminal the display (``display.py``) redraws one status in place. Into a
log (standard error not a terminal: CI, ``tee``, a file) it writes each stage's
line as it comes, prefixed with the time so far and an estimate of what is
left, and a progress line at most every :data:`PLAIN_INTERVAL_S`; no line is
longer than :data:`MAX_LINE_CHARS`.
"""

from __future__ import annotations

import textwrap

MAX_LINE_CHARS = 200
PLAIN_INTERVAL_S = 5.0  # at most one progress line this often in a log
CONTINUATION = "    "  # a line too long for a log goes on, indented, on the next


def minutes_text(seconds: float) -> str:
    """``75`` → ``1:15``; ``3725`` → ``1:02:05``."""
    whole = max(0, round(seconds))
    hours, rest = divmod(whole, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"


def duration_text(seconds: float) -> str:
    """``400`` → ``6 min 40 s``; ``45`` → ``45 s``."""
    whole = max(0, round(seconds))
    return f"{whole // 60} min {whole % 60} s" if whole >= 60 else f"{whole} s"


def clock_text(elapsed_s: float, left_s: float) -> str:
    """The time so far and the estimate of what is left: ``[1:05, about 5:20 left]``."""
    return f"[{minutes_text(elapsed_s)}, about {minutes_text(left_s)} left]"


def estimate_line(names: list[str], policies: int, duration_s: float, estimate_s: float) -> str:
    """Said once, before anything is built: how long the whole run should take."""
    what = ", ".join(names)
    return (f"{what}: about {duration_text(estimate_s)} in all (fabric, calibration, "
            f"{policies} {'policy' if policies == 1 else 'policies'} of {duration_s:g} s, reports)")


def finished_line(elapsed_s: float, estimate_s: float) -> str:
    """Said once, at the end: how long it took against the estimate made before it started."""
    return f"done in {duration_text(elapsed_s)} (estimated {duration_text(estimate_s)} before it started)"


def measure_text(label: str, elapsed_s: float, total_s: float, iterations: dict[str, int],
                 link_share: float | None) -> str:
    """One measurement as it runs: ``gate 7/14 s  iterations alpha:21 beta:10  link 63%`` (before its
    first sample, its label and time alone)."""
    jobs = "  iterations " + " ".join(f"{job}:{n}" for job, n in iterations.items()) if iterations else ""
    link = f"  link {link_share:.0%}" if link_share is not None else ""
    return f"{label} {min(elapsed_s, total_s):.0f}/{total_s:.0f} s{jobs}{link}"


def fit(text: str, width: int = MAX_LINE_CHARS) -> list[str]:
    """``text`` as lines of at most ``width`` characters: its own lines, each wrapped at spaces,
    continued on the next line indented."""
    lines = []
    for line in text.splitlines() or [""]:
        lines.extend(textwrap.wrap(line, width, subsequent_indent=CONTINUATION, break_long_words=True,
                                   break_on_hyphens=False, drop_whitespace=True) or [""])
    return lines


class PlainLog:
    """Which lines a log gets: every stage line and message, and a progress line only when
    ``interval_s`` has passed since the last line written."""

    def __init__(self, interval_s: float = PLAIN_INTERVAL_S):
        self.interval_s = interval_s
        self.last_line_s: float | None = None

    def stage(self, text: str, now_s: float, elapsed_s: float, left_s: float) -> list[str]:
        """A stage's line, with the time so far and what is left."""
        self.last_line_s = now_s
        return fit(f"{clock_text(elapsed_s, left_s)} {text}")

    def message(self, text: str, now_s: float) -> list[str]:
        """Anything else the run logs (a warning, ``-v`` detail), as it is."""
        self.last_line_s = now_s
        return fit(text)

    def progress(self, text: str, now_s: float, elapsed_s: float, left_s: float) -> list[str]:
        """The live status, if its turn has come; else nothing."""
        if self.last_line_s is not None and now_s - self.last_line_s < self.interval_s:
            return []
        self.last_line_s = now_s
        return fit(f"{clock_text(elapsed_s, left_s)}   {text}")
