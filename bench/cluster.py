"""Benchmark: the same sweep on this machine and through a dask.distributed cluster (docs/scale.md).

Runs ``shiftbed sweep`` with one seed three ways: in one process, on
``--workers`` local processes, and through a dask cluster (``--dask-scheduler
ADDRESS``, or else one started here on loopback: ``dask scheduler`` and
``--workers`` single-thread ``dask worker`` processes, ended by PID at the end).
The three runs are repeated ``--repeat`` rounds, interleaved; each backend's
median and range of combinations per minute are printed (a combination is one
job draw at one quantum), with the load average seen, and
whether every summary agrees (they must: the seed decides everything).

    .venv/bin/python bench/cluster.py [--json] [--workers 2] [--samples 60] [--repeat 3] [--dask-scheduler tcp://HOST:8786]

With ``--json`` the last line is ``{"local_1_per_min": <median>, "local_n_per_min": ...,
"dask_per_min": ..., "identical": <bool>, ...}``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
VARYING = ("elapsed_s", "combinations_per_s", "backend")


def sweep(argv: list[str], env: dict) -> tuple[dict, float]:
    """One ``shiftbed sweep --json`` run: its summary and wall time (s, start-up included)."""
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "scenarios.cli", "sweep", *argv, "--json"], capture_output=True,
                          text=True, env=env, cwd=REPO, check=False)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(f"bench/cluster.py: sweep failed: {done.stderr.strip().splitlines()[-1]}")
    return json.loads(done.stdout.strip().splitlines()[-1]), wall


def loopback_cluster(workers: int, env: dict, folder: str) -> tuple[str, list[subprocess.Popen]]:
    """A scheduler on 127.0.0.1 and ``workers`` single-thread workers; (address, their processes)."""
    dask = [sys.executable, "-m", "dask"]
    log = open(os.path.join(folder, "cluster.log"), "w")
    scheduler_file = os.path.join(folder, "scheduler.json")
    procs = [subprocess.Popen([*dask, "scheduler", "--host", "127.0.0.1", "--port", "0", "--dashboard-address",
                               "127.0.0.1:0", "--scheduler-file", scheduler_file, "--idle-timeout", "900"],
                              env=env, cwd=folder, stdout=log, stderr=subprocess.STDOUT)]
    deadline = time.monotonic() + 60
    while not (os.path.exists(scheduler_file) and os.path.getsize(scheduler_file)):
        if time.monotonic() > deadline or procs[0].poll() is not None:
            sys.exit(f"bench/cluster.py: the scheduler did not start (see {folder}/cluster.log)")
        time.sleep(0.2)
    with open(scheduler_file) as f:
        address = json.load(f)["address"]
    procs += [subprocess.Popen([*dask, "worker", address, "--nthreads", "1", "--no-nanny", "--dashboard-address",
                                "127.0.0.1:0", "--local-directory", folder, "--death-timeout", "60"],
                               env=env, cwd=folder, stdout=log, stderr=subprocess.STDOUT) for _ in range(workers)]
    from distributed import Client

    with Client(address, timeout=60, set_as_default=False) as client:
        client.wait_for_workers(workers, timeout=60)
    return address, procs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2, help="local processes and loopback dask workers")
    parser.add_argument("--samples", type=int, default=60, help="combinations per number of jobs")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--dask-scheduler", default=None, help="an existing cluster instead of a loopback one")
    parser.add_argument("--repeat", type=int, default=3, help="rounds of the three runs (the median is reported)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    argv = ["--jobs", "2,3,4", "--samples", str(args.samples), "--quantum-ms", "1,10,50", "--seed", str(args.seed)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, (str(REPO), os.environ.get("PYTHONPATH"))))}
    runs, procs = {}, []
    with tempfile.TemporaryDirectory(prefix="shiftbed-bench-") as folder:
        try:
            address = args.dask_scheduler
            if address is None:
                address, procs = loopback_cluster(args.workers, env, folder)
            for _ in range(args.repeat):  # interleaved, so that a change in load touches every backend
                for name, extra in (("local_1", ["--workers", "1"]), ("local_n", ["--workers", str(args.workers)]),
                                    ("dask", ["--dask-scheduler", address])):
                    load_before = os.getloadavg()[0]
                    summary, wall = sweep(argv + extra, env)
                    runs.setdefault(name, []).append({"summary": summary, "wall_s": wall, "load_before": load_before,
                                                      "load_after": os.getloadavg()[0]})
        finally:
            for p in reversed(procs):
                p.terminate()
                try:
                    p.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
    rows = runs["local_1"][0]["summary"]["combinations"]
    same = {json.dumps({k: v for k, v in r["summary"].items() if k not in VARYING}, sort_keys=True)
            for rs in runs.values() for r in rs}
    per_min = {name: sorted(60 * rows / r["summary"]["elapsed_s"] for r in rs) for name, rs in runs.items()}
    loads = [x for rs in runs.values() for r in rs for x in (r["load_before"], r["load_after"])]
    print(f"sweep {' '.join(argv)}: {rows} combinations (job draw x quantum), {args.repeat} rounds")
    for name, rs in runs.items():
        backend, walls = rs[0]["summary"]["backend"], ", ".join(f"{r['wall_s']:.1f}" for r in rs)
        print(f"{name:>8}: {backend['kind']:>5} {backend['workers']} workers: median "
              f"{statistics.median(per_min[name]):7.0f} combinations/min (range {per_min[name][0]:.0f}-"
              f"{per_min[name][-1]:.0f}); wall s {walls}")
    print(f"load average {min(loads):.1f}-{max(loads):.1f} on {os.cpu_count()} CPUs; summaries identical: "
          f"{len(same) == 1}")
    if args.json:
        out = {f"{name}_per_min": round(statistics.median(v)) for name, v in per_min.items()}
        out.update({f"{name}_per_min_range": [round(v[0]), round(v[-1])] for name, v in per_min.items()})
        out.update({"combinations": rows, "workers": args.workers, "rounds": args.repeat, "identical": len(same) == 1,
                    "load_average": [round(min(loads), 1), round(max(loads), 1)]})
        print(json.dumps(out))

if __name__ == "__main__":
    main()
