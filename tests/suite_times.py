"""Where the suite's time went: each tier's wall-clock time and the ten slowest tests of all tiers.

``make test`` runs each tier as its own pytest run with ``--junitxml``; this reads those files and
prints the table at the end of ``make test``, so the next person sees where time goes.

    python tests/suite_times.py REPORT.xml [REPORT.xml ...]
"""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

SLOWEST = 10


@dataclass(frozen=True)
class Tier:
    name: str
    seconds: float
    tests: int
    cases: list[tuple[float, str]]  # (seconds, test id)


def read_tier(path: Path) -> Tier:
    """One pytest run's junit XML: its time, its number of tests and each test's time (setup to teardown)."""
    root = ET.parse(path).getroot()
    suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
    cases = []
    for case in root.iter("testcase"):
        module = case.get("classname", "").replace(".", "/")
        cases.append((float(case.get("time") or 0.0), f"{module}::{case.get('name')}"))
    return Tier(path.stem, sum(float(s.get("time") or 0.0) for s in suites), len(cases), cases)


def minutes(seconds: float) -> str:
    return f"{int(seconds // 60)} min {seconds % 60:4.1f} s"


def render(tiers: list[Tier]) -> str:
    lines = ["", "time of each tier:"]
    lines += [f"  {t.name:<16} {t.tests:>5} tests  {minutes(t.seconds)}" for t in tiers]
    lines.append(f"  {'together':<16} {sum(t.tests for t in tiers):>5} tests  "
                 f"{minutes(sum(t.seconds for t in tiers))}")
    slowest = sorted((case for t in tiers for case in t.cases), reverse=True)[:SLOWEST]
    lines.append(f"the {len(slowest)} slowest tests:")
    lines += [f"  {seconds:7.1f} s  {test}" for seconds, test in slowest]
    return "\n".join(lines)


def main(paths: list[str]) -> int:
    tiers = [read_tier(Path(p)) for p in paths if Path(p).is_file()]
    if not tiers:
        print("suite_times: no tier's report to read", file=sys.stderr)
        return 2
    print(render(tiers))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
