"""Benchmark ``shiftbed batch``: scenarios per hour, and what a scenario costs beyond its policies' running time.

A small batch (``--scenarios 3`` of two jobs, ``--policy none,shift``) is run
with ``shiftbed batch`` itself, once per configuration:

- ``each``: every scenario's jobs calibrated anew, every policy for the full
  ``--duration`` (``--calibrate-each``);
- ``cheap``: calibrations reused by job shape and each policy stopped at the
  target standard error (``--target-se-pct``), ``--duration`` the ceiling.

The jobs are drawn with one period (``--period-ms 200:200``, ``--comm-frac
0.3:0.3``), so every scenario's job shapes are the first one's: the best case
for reuse, said as such. With the sweep's default draws (periods uniform over
100:1000 ms, fractions continuous) no shape repeats and reuse saves nothing.

From each scenario's folder: its time from its prediction (the file's time:
written as it began) to its ``outcome.json``, split into the fabric's build
(``environment.json``), what came before the first policy's epoch
(calibration, the jobs' registration), the policies' running time (epoch to
the last iteration's end, each policy), the gaps between policies, and what
came after the last (summary, report, teardown). The overhead is the
scenario's time less its policies' running time.

``sudo .venv/bin/python bench/batch.py [--json] [--configs each,cheap] [--duration 10] [--target-se-pct 1]``
(root; one fabric at a time).
"""

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

SHIFTBED = str(Path(sys.executable).with_name("shiftbed"))
SCENARIOS, POLICIES = 3, "none,shift"
DRAWS = ["--jobs", "2", "--period-ms", "200:200", "--comm-frac", "0.3:0.3", "--seed", "0"]
CONFIGS = {"each": ["--calibrate-each"], "cheap": []}  # cheap: and --target-se-pct


def scenario_parts(done: Path) -> dict:
    """One done scenario's time and its parts (s), from its folder alone (module docstring)."""
    began = (done / "prediction.json").stat().st_mtime  # written as the scenario began (renames keep it)
    outcome = json.loads((done / "outcome.json").read_text())
    ended = (done / "outcome.json").stat().st_mtime
    run = done / outcome["kept"]
    summary = json.loads((run / "summary.json").read_text())
    fabric_s = json.loads((run / "environment.json").read_text())["fabric_startup_s"]
    rows = pd.read_csv(run / "iterations.csv")
    epochs = {p: e["epoch_s"] for p, e in summary["policies"].items()}
    spans = {p: float(rows.loc[rows["policy"] == p, "end"].max()) - epochs[p] for p in epochs}
    first, last = min(epochs.values()), max(epochs[p] + spans[p] for p in epochs)
    policies_s = sum(spans.values())
    reused = sum(1 for s in summary["fidelity"]["solo"].values() if s.get("reused_from"))
    return {"scenario": done.name, "attempts": len(outcome["attempts"]), "total_s": ended - began,
            "fabric_s": fabric_s, "before_policies_s": first - began - fabric_s, "policies_s": policies_s,
            "between_policies_s": last - first - policies_s, "after_s": ended - last,
            "overhead_s": ended - began - policies_s, "calibrations_reused": reused,
            "stopped": {p: e.get("stopped") for p, e in summary["policies"].items()}}


def run_config(name: str, extra: list[str], duration_s: float, work: Path) -> dict:
    out = work / name
    argv = [SHIFTBED, "batch", str(out), "--scenarios", str(SCENARIOS), *DRAWS, "--policy", POLICIES,
            "--duration", f"{duration_s:g}", *extra]
    started = time.monotonic()
    done = subprocess.run(argv, cwd=REPO, capture_output=True, text=True)
    wall_s = time.monotonic() - started
    if done.returncode not in (0, 3):  # 3: a kept run lost fidelity (said in the figures)
        raise SystemExit(f"bench/batch.py: {' '.join(argv)} exited {done.returncode}: {done.stderr[-2000:]}")
    parts = [scenario_parts(out / f"s{i:03d}") for i in range(SCENARIOS)]
    return {"config": name, "argv": argv[1:], "exit_code": done.returncode, "wall_s": wall_s,
            "scenarios_per_hour": 3600 * SCENARIOS / wall_s, "scenarios": parts,
            "mean": {key: statistics.mean(p[key] for p in parts)
                     for key in ("total_s", "fabric_s", "before_policies_s", "policies_s", "between_policies_s",
                                 "after_s", "overhead_s")}}


def machine() -> dict:
    return {"host": platform.node(), "cores": os.cpu_count(), "kernel": platform.release(),
            "python": platform.python_version(), "load_avg": os.getloadavg()}


def markdown(result: dict) -> str:
    head = ("| configuration | scenarios/h | s per scenario | fabric | before the policies | policies | "
            "between | after | overhead |")
    lines = [head, "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in result["configs"]:
        m = r["mean"]
        lines.append(f"| {r['config']} | {r['scenarios_per_hour']:.0f} | {m['total_s']:.1f} | {m['fabric_s']:.1f} | "
                     f"{m['before_policies_s']:.1f} | {m['policies_s']:.1f} | {m['between_policies_s']:.1f} | "
                     f"{m['after_s']:.1f} | {m['overhead_s']:.1f} |")
    for r in result["configs"]:
        for p in r["scenarios"]:
            stops = ", ".join(f"{k} {v['by']} {v['after_ms'] / 1000:.1f} s" for k, v in p["stopped"].items() if v)
            lines.append(f"- {r['config']} {p['scenario']}: {p['total_s']:.1f} s, policies {p['policies_s']:.1f} s, "
                         f"calibrations reused {p['calibrations_reused']}" + (f"; stopped: {stops}" if stops else ""))
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="one JSON object on stdout")
    parser.add_argument("--configs", default=",".join(CONFIGS), help="which to run (default: %(default)s)")
    parser.add_argument("--duration", type=float, default=10.0, help="seconds a policy runs, the ceiling for "
                        "cheap (default: %(default)s)")
    parser.add_argument("--target-se-pct", type=float, default=1.0, help="cheap's target (default: %(default)s)")
    args = parser.parse_args(argv)
    configs = [c.strip() for c in args.configs.split(",") if c.strip()]
    if not configs or any(c not in CONFIGS for c in configs):
        print(f"bench/batch.py: --configs: among {', '.join(CONFIGS)}, got {args.configs!r}", file=sys.stderr)
        return 2
    if os.geteuid() != 0:
        print("bench/batch.py: needs root (shiftbed batch builds a Mininet fabric)", file=sys.stderr)
        return 2
    results = []
    with tempfile.TemporaryDirectory(prefix="shiftbed-bench-batch-") as tmp:
        for name in configs:
            extra = CONFIGS[name] + (["--target-se-pct", f"{args.target_se_pct:g}"] if name == "cheap" else [])
            results.append(run_config(name, extra, args.duration, Path(tmp)))
            print(json.dumps({k: v for k, v in results[-1].items() if k != "scenarios"}), file=sys.stderr)
    result = {"machine": machine(), "scenarios": SCENARIOS, "policies": POLICIES, "draws": DRAWS,
              "duration_s": args.duration, "target_se_pct": args.target_se_pct, "configs": results}
    print(json.dumps(result) if args.json else markdown(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
