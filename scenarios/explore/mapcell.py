"""Where a point of the explorer lies on the map (``docs/figures/map``, drawn by ``make map``).

The map varies one factor at a time around a default point (2 jobs, quantum
1 ms, medium communication share, periods 100-1000 ms; ``controller/theory/mapping.py``);
its job-mix panels give, for 2 and 3 jobs, how often each policy helps as
the share of *harmonic* jobs (a period identical to, or 2 or 3 times, another
job's) grows. A point of the explorer has a harmonic share of its own
(``mapping.harmonic_jobs``); :func:`cell` finds the map's cell with its
number of jobs and the nearest share, read from the map's CSV files as
``make map`` wrote them (nothing is computed here).
"""

from __future__ import annotations

import csv
import functools
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from controller.theory.mapping import harmonic_jobs

MAP_DIR = Path(__file__).resolve().parents[2] / "docs" / "figures" / "map"
NEAR_SHARE = 0.02  # a cell this close to the point's share is its own; farther, the page says how far


@dataclass(frozen=True)
class Cell:
    """One cell of the map: its number of jobs and harmonic share, and per policy the fraction of
    combinations it helped (with the 95 % interval) and the mean gain over ``none``."""

    n_jobs: int
    mix: float
    samples: int
    policies: dict  # policy -> {"helps": (x, lo, hi), "hurts": x, "mean_gain": x}
    source: str  # the CSV it came from, relative to the map folder


@dataclass(frozen=True)
class Where:
    """A point on the map: its harmonic jobs and share, and the nearest cell (None: the map has no
    cell with that many jobs)."""

    harmonic: tuple[bool, ...]
    share: float
    cell: Cell | None

    @property
    def exact(self) -> bool:
        return self.cell is not None and abs(self.cell.mix - self.share) <= NEAR_SHARE


@functools.lru_cache(maxsize=1)
def cells(map_dir: Path = MAP_DIR) -> tuple[Cell, ...]:
    """Every job-mix cell the map's folders hold (the top map's ``mix`` and ``n_jobs`` panels, and
    each ``mix-*`` folder's), with every other factor at the default point."""
    out = []
    for summary in sorted(map_dir.glob("**/summary.json")):
        table = summary.with_name("map.csv")
        if not table.is_file():
            continue
        default = json.loads(summary.read_text())["settings"]["default"]
        rows: dict[tuple[int, float], dict] = {}
        with table.open() as f:
            for row in csv.DictReader(f):
                if row["factor"] == "mix":
                    key = (int(default["n_jobs"]), float(row["value"]))
                elif row["factor"] == "n_jobs":
                    key = (int(row["value"]), float(default["mix"]))
                else:
                    continue
                rows.setdefault(key, {})[row["policy"]] = row
        for (n, mix), by_policy in rows.items():
            out.append(Cell(n, mix, int(next(iter(by_policy.values()))["n"]), {
                p: {"helps": (float(r["helps"]), float(r["helps_lo"]), float(r["helps_hi"])),
                    "hurts": float(r["hurts"]), "mean_gain": float(r["mean_gain"])}
                for p, r in by_policy.items()}, str(table.relative_to(map_dir))))
    return tuple(out)


def where(periods_ms: Sequence[float], map_dir: Path = MAP_DIR) -> Where:
    """The point's harmonic share and the map's nearest cell with as many jobs."""
    harmonic = tuple(harmonic_jobs(list(periods_ms)))
    share = sum(harmonic) / len(harmonic)
    mine = [c for c in cells(map_dir) if c.n_jobs == len(harmonic)]
    nearest = min(mine, key=lambda c: (abs(c.mix - share), c.source), default=None)
    return Where(harmonic, share, nearest)
