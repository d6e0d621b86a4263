"""Benchmark the explorer's answer to a slider change: the server-side handler, for 2, 3 and 4 jobs.

``.venv/bin/python bench/explore.py [--json] [--changes N]`` (no root).

From ``scenarios/classroom.yaml`` (alpha 300/100 ms, beta 600/150 ms; a third
and fourth job as the page adds them, 400/100 ms), with the scenario's
policies (none, shift, gate, random): ``N`` slider changes of the last job's
period, one ms at a time from its value, each timed from the new value to the
page's models holding the answer: the spec, ``plan`` within the work budget,
the views, and putting them into the page's document (``Explorer._show``; what
is left is Bokeh sending the changed models to the browser). Printed: the
median, the 95th percentile and the slowest answer per job count, and how
many answers had their horizon cut.
"""

import argparse
import dataclasses
import json
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bokeh.document import Document  # noqa: E402

from scenarios.explore import inputs, page  # noqa: E402

TARGET_P95_MS = 200.0


def changes(start: inputs.Start, n_jobs: int, count: int):
    """The page's values after each of ``count`` one-ms moves of the last job's period slider."""
    first = start.edits()
    jobs = first.jobs
    while len(jobs) < n_jobs:
        jobs += (inputs.new_job(jobs),)
    last = jobs[-1]
    for k in range(1, count + 1):
        moved = dataclasses.replace(last, period_ms=last.period_ms + k)
        yield dataclasses.replace(first, jobs=(*jobs[:-1], moved))


def bench(n_jobs: int, count: int) -> dict:
    start = inputs.load(REPO / "scenarios" / "classroom.yaml")
    explorer = page.Explorer(Document(), start, Path.cwd())
    page.WORKER.submit(lambda: None).result()  # the page's own first answer is out of the way
    times, cut = [], 0
    for generation, edits in enumerate(changes(start, n_jobs, count), 1):
        began = time.perf_counter()
        shown = page._compute(start, edits, "bench.yaml")
        explorer._show(generation, shown)
        times.append(1000 * (time.perf_counter() - began))
        cut += "horizon is cut" in shown.status
        assert shown.jobs, shown.status  # an answer, not a refusal
    times.sort()
    return {"jobs": n_jobs, "changes": count, "median_ms": round(statistics.median(times), 1),
            "p95_ms": round(times[max(0, int(0.95 * len(times)) - 1)], 1), "max_ms": round(times[-1], 1),
            "horizon_cut": cut}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="one JSON object on stdout")
    parser.add_argument("--changes", type=int, default=40, help="slider changes per job count (default 40)")
    args = parser.parse_args()
    rows = [bench(n, args.changes) for n in (2, 3, 4)]
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True,
                            text=True).stdout.strip()
    result = {"date": time.strftime("%Y-%m-%d"), "commit": commit, "machine": platform.node(),
              "target_p95_ms": TARGET_P95_MS, "results": rows,
              "within_target": all(r["p95_ms"] <= TARGET_P95_MS for r in rows)}
    if args.json:
        print(json.dumps(result))
    else:
        print(f"explore: answer to a slider change, {args.changes} changes per job count "
              f"({result['date']}, commit {commit})")
        for r in rows:
            print(f"{r['jobs']} jobs: median {r['median_ms']:.1f} ms  p95 {r['p95_ms']:.1f} ms  "
                  f"max {r['max_ms']:.1f} ms  horizon cut in {r['horizon_cut']}/{r['changes']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
