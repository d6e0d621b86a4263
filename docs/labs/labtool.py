"""The labs' small measuring tool: prints ``key = value`` lines (the lab sheets' tables use the keys).

    shiftbed plan S --json | .venv/bin/python docs/labs/labtool.py keys feasible pairs.0.gcd_ms
    .venv/bin/python docs/labs/labtool.py contention results/lab2     # lab 2
    .venv/bin/python docs/labs/labtool.py compare results/lab3        # labs 3, 4 and 5
    shiftbed plan S --json | .venv/bin/python docs/labs/labtool.py circle   # lab 7: busy arcs on the circle
    .venv/bin/python docs/labs/labtool.py phases results/lab7         # lab 7: pattern jobs on the wire

``contention`` and ``compare`` read the newest results folder under the given
root (``shiftbed run --out ROOT`` writes ``ROOT/<scenario>/<time>/``): its
``summary.json`` (iteration times, solo figures, predictions) and
``link_bandwidth.csv`` (Mbit/s per job on the shared link in 10 ms bins,
from the capture); ``phases`` reads a run of pattern jobs' ``phases.json`` (each
phase's bytes and start against the capture, docs/results.md). Everything it computes is a few lines of pandas below: read
them.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pandas as pd

BUSY_MBPS = 5.0  # a job "is on the link" in a 10 ms bin where it moves more than this
BIN_S = 0.01  # link_bandwidth.csv's bins
BURST_GAP_BINS = 2  # a burst ends after more idle bins than this (a sharing TCP flow may pause a bin)


def newest_results(root: str) -> Path:
    folders = sorted(Path(root).glob("*/*/summary.json"), key=lambda p: p.parent.name)
    if not folders:
        sys.exit(f"labtool: no results folder under {root} (run `shiftbed run ... --out {root}` first)")
    return folders[-1].parent


def on_link(folder: Path) -> pd.DataFrame:
    """Per policy and 10 ms bin, each job's Mbit/s on the shared link (one column per job): the
    run's busiest captured link (``shared_link`` in summary.json; the table has a row set for each
    directed link where jobs meet)."""
    bw = pd.read_csv(folder / "link_bandwidth.csv")
    shared = json.loads((folder / "summary.json").read_text()).get("shared_link")
    if shared in set(bw["link"]):
        bw = bw[bw["link"] == shared]
    return bw.pivot_table(index=["policy", "t_s"], columns="job", values="mbps", fill_value=0.0)


def overlap_share(table: pd.DataFrame) -> float:
    """Share of the bins with traffic in which two or more jobs are on the link at once."""
    busy = table > BUSY_MBPS
    n_busy = busy.sum(axis=1)
    return float((n_busy >= 2).sum() / max(1, (n_busy >= 1).sum()))


def first_bursts_overlap_ms(table: pd.DataFrame) -> float:
    """How long two or more jobs' first bursts were on the link at once, in ms (10 ms bins).

    A job's first burst runs from its first busy bin until a gap of more than
    ``BURST_GAP_BINS`` idle bins. Under ``none`` every first burst starts at the
    epoch, so they meet; a policy that starts them apart keeps this at ~0.
    """
    busy = table > BUSY_MBPS
    in_first = pd.DataFrame(False, index=table.index, columns=table.columns)
    for job in table.columns:
        bins = list(busy.index[busy[job]])
        if not bins:
            continue
        end = 0
        while end + 1 < len(bins) and bins[end + 1] - bins[end] <= (BURST_GAP_BINS + 1) * BIN_S + 1e-9:
            end += 1
        in_first.loc[bins[0]:bins[end], job] = True
    return float((in_first.sum(axis=1) >= 2).sum() * BIN_S * 1000)


def cmd_keys(args) -> None:
    doc = json.load(sys.stdin)
    prefix = f"{args.prefix}." if args.prefix else ""
    for path in args.paths:
        value = doc
        for part in path.split("."):
            value = value[int(part)] if isinstance(value, list) else value[part]
        print(f"{prefix}{path} = {json.dumps(value) if isinstance(value, bool | type(None)) else value}")


def on_circle(busy_ms: list, period_ms: int, circle_ms: int) -> list[bool]:
    """Each whole ms of the circle of ``circle_ms`` (a pair's gcd): is the job busy there? Its busy arcs
    ``[start, length]`` repeat every ``period_ms``; on the circle only their remainders count."""
    busy = [False] * circle_ms
    for start, length in busy_ms:
        for t in range(int(start), int(start + length)):
            busy[t % period_ms % circle_ms] = True
    return busy


def longest_run(busy: list[bool], value: bool) -> int:
    """The longest run of ``value`` on the circle (wrapping past its end)."""
    if all(b == value for b in busy):
        return len(busy)
    best = run = 0
    for b in busy + busy:  # twice round: a run across the end is counted whole
        run = run + 1 if b == value else 0
        best = max(best, run)
    return best


def busy_runs(busy: list[bool]) -> list[tuple[int, int]]:
    """The busy runs ``(start, length)`` inside ``[0, len(busy))``, in order (a run across the end is two)."""
    runs, start = [], None
    for t, b in enumerate([*busy, False]):
        if b and start is None:
            start = t
        elif not b and start is not None:
            runs.append((start, t - start))
            start = None
    return runs


def cmd_circle(args) -> None:
    """Each pair of ``shiftbed plan --json`` (stdin): both jobs' busy ms on the circle of the pair's gcd,
    drawn as a strip and measured (the longest busy arc, the longest idle gap). Whole-ms grids only."""
    doc = json.load(sys.stdin)
    jobs = {j["name"]: j for j in doc["jobs"]}
    prefix = f"{args.prefix}." if args.prefix else ""
    for pair in doc["pairs"]:
        g = int(pair["gcd_ms"])
        cell_ms = max(1, -(-g // args.cells))
        print(f"circle of {g} ms ({pair['jobs'][0]}/{pair['jobs'][1]}), one cell {cell_ms} ms, # busy:")
        for name in pair["jobs"]:
            job = jobs[name]
            busy_ms = job.get("busy_ms") or [[0, job["grid_comm_ms"]]]  # a job of one burst: one arc at 0
            busy = on_circle(busy_ms, int(job["grid_period_ms"]), g)
            strip = "".join("#" if any(busy[i:i + cell_ms]) else "." for i in range(0, g, cell_ms))
            print(f"  {name:<10}|{strip}|")
            arcs = [f"{t}+{n}" for t, n in busy_runs(busy)]
            print(f"  {name} arcs on the circle (start+length ms): {' '.join(arcs)}")
            print(f"{prefix}{name}.busy_on_circle_ms = {sum(busy)}")
            print(f"{prefix}{name}.longest_arc_ms = {longest_run(busy, True)}")
            print(f"{prefix}{name}.longest_gap_ms = {longest_run(busy, False)}")


def cmd_contention(args) -> None:
    folder = newest_results(args.root)
    summary = json.loads((folder / "summary.json").read_text())
    jobs = summary["policies"][args.policy]["jobs"]
    for name, j in jobs.items():
        solo, shared = j["solo_iteration_ms"], j["mean_iteration_ms"]
        print(f"{name}.solo_ms = {solo:.1f}")
        print(f"{name}.shared_ms = {shared:.1f}")
        print(f"{name}.slowdown_pct = {100 * (shared / solo - 1):.1f}")
        print(f"{name}.predicted_slowdown_pct = {100 * (j['predicted_iteration_ms'] / solo - 1):.1f}")
    table = on_link(folder).loc[args.policy]
    print(f"overlap_share = {overlap_share(table):.2f}")
    busy = table > BUSY_MBPS
    alone = busy.sum(axis=1) == 1
    together = busy.sum(axis=1) >= 2
    for name in table.columns:
        print(f"{name}.alone_mbps = {table.loc[alone & busy[name], name].mean():.1f}")
        print(f"{name}.together_mbps = {table.loc[together, name].mean():.1f}")
    print(f"together_total_mbps = {table.loc[together].sum(axis=1).mean():.1f}")
    plot = Path(args.plot or f"lab-plots/{summary['scenario']}-{args.policy}-bandwidth.png")
    plot.parent.mkdir(parents=True, exist_ok=True)
    _plot(table, plot, f"{summary['scenario']}: {args.policy}, Mbit/s per job on the shared link")
    print(f"plot: {plot}")


def cmd_compare(args) -> None:
    folder = newest_results(args.root)
    summary = json.loads((folder / "summary.json").read_text())
    tables = on_link(folder)
    errors = []
    for policy, entry in summary["policies"].items():
        for name, j in entry["jobs"].items():
            print(f"{policy}.{name}_ms = {j['mean_iteration_ms']:.1f}")
            if j.get("median_iteration_ms") is not None:  # older results folders have none
                print(f"{policy}.{name}_median_ms = {j['median_iteration_ms']:.1f}")
            print(f"{policy}.{name}_predicted_ms = {j['predicted_iteration_ms']:.1f}")
            errors.append(abs(prediction_error_pct(j['mean_iteration_ms'], j['predicted_iteration_ms'])))
        if entry.get("throughput_change_vs_none_pct") is not None:
            print(f"{policy}.change_vs_none_pct = {entry['throughput_change_vs_none_pct']:.1f}")
            print(f"{policy}.predicted_change_vs_none_pct = {entry['predicted_throughput_change_vs_none_pct']:.1f}")
        if policy in tables.index.get_level_values(0):
            print(f"{policy}.overlap_share = {overlap_share(tables.loc[policy]):.2f}")
            print(f"{policy}.first_bursts_overlap_ms = {first_bursts_overlap_ms(tables.loc[policy]):.0f}")
    if errors:  # how far the run's model was from the wire, at worst over every job and policy
        print(f"max_abs_error_pct = {max(errors):.1f}")
    print(f"results: {folder}")


def cmd_phases(args) -> None:
    folder = newest_results(args.root)
    summary = json.loads((folder / "summary.json").read_text())
    path = folder / "phases.json"
    if not path.exists():
        sys.exit(f"labtool: {folder} has no phases.json (a run of pattern jobs writes one)")
    phases = json.loads(path.read_text())["policies"]
    for policy, entry in summary["policies"].items():
        for name, j in entry["jobs"].items():
            print(f"{policy}.{name}_ms = {j['mean_iteration_ms']:.1f}")
            print(f"{policy}.{name}_solo_ms = {j['solo_iteration_ms']:.1f}")
        if entry.get("throughput_change_vs_none_pct") is not None:
            print(f"{policy}.change_vs_none_pct = {entry['throughput_change_vs_none_pct']:.1f}")
        for name, rows in phases.get(policy, {}).items():
            print(f"{policy}.{name}.phases = {len(rows)}")
            print(f"{policy}.{name}.phases_within = {sum(bool(r['within_bounds']) for r in rows)}")
            print(f"{policy}.{name}.max_bytes_err_pct = "
                  f"{max(abs(r['capture_bytes_err_pct'] or 0.0) for r in rows):.2f}")
            late = [r["wire_start_late_p95_ms"] for r in rows if r["wire_start_late_p95_ms"] is not None]
            if late:
                print(f"{policy}.{name}.max_start_p95_ms = {max(late):.2f}")
    print(f"results: {folder}")


def prediction_error_pct(measured_ms: float, predicted_ms: float) -> float:
    """(measured - predicted) / predicted, in %."""
    return (measured_ms - predicted_ms) / predicted_ms * 100


def _plot(table: pd.DataFrame, path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(10, 3.5))
    ax.stackplot(table.index, [table[c] for c in table.columns], labels=list(table.columns), alpha=0.8)
    ax.set_xlabel("time since the epoch (s)")
    ax.set_ylabel("Mbit/s on the shared link")
    ax.set_title(title)
    ax.legend(loc="upper right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    keys = sub.add_parser("keys", help="print JSON fields (stdin) by dotted path")
    keys.add_argument("paths", nargs="+")
    keys.add_argument("--prefix", default="", help="put this in front of every key")
    contention = sub.add_parser("contention", help="lab 2: slowdown and sharing under one policy")
    contention.add_argument("root")
    contention.add_argument("--policy", default="none")
    contention.add_argument("--plot", help="where to draw the bandwidth plot (default: lab-plots/...)")
    compare = sub.add_parser("compare", help="labs 3, 4 and 5: every policy of the newest run")
    compare.add_argument("root")
    circle = sub.add_parser("circle", help="lab 7: each pair's busy ms on the circle of its gcd (plan --json, stdin)")
    circle.add_argument("--prefix", default="", help="put this in front of every key")
    circle.add_argument("--cells", type=int, default=60, help="cells in a strip (default 60)")
    phases = sub.add_parser("phases", help="lab 7: each pattern job's phases and iterations in the newest run")
    phases.add_argument("root")
    args = parser.parse_args(argv)
    {"keys": cmd_keys, "contention": cmd_contention, "compare": cmd_compare, "phases": cmd_phases,
     "circle": cmd_circle}[args.command](args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
