"""``shiftbed compare DIR...``: one table across runs, scenarios and policies, and one figure.

Thin adapter: finds the run folders (a run's folder, or one that holds them),
builds the table (``scenarios/analysis/compare.py``), writes ``compare.csv``,
``compare.parquet`` and ``compare.png`` into ``--out`` and prints the table
(``--json``: ``{"rows": [...]}``). The folders are only read.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

COMPARE_CSV = "compare.csv"
COMPARE_PARQUET = "compare.parquet"
DEFAULT_OUT = "compare"


def add_arguments(parser):
    parser.add_argument("dirs", nargs="+", metavar="DIR",
                        help="a run's results folder (results/<scenario>/<timestamp>), or a folder holding them "
                             "(results/<scenario>, results)")
    parser.add_argument("--out", default=DEFAULT_OUT,
                        help=f"folder for {COMPARE_CSV}, {COMPARE_PARQUET} and compare.png (default: {DEFAULT_OUT}/)")
    parser.add_argument("--json", action="store_true", help="print one JSON object on stdout: {\"rows\": [...]}")


def run(args) -> int:
    from scenarios.analysis.compare import compare_table, load_runs
    from scenarios.files import atomic_write_bytes
    from scenarios.options import check_out_root
    from scenarios.report.compare import COMPARE_PNG, draw_compare

    check_out_root(args.out)
    table = compare_table(load_runs(args.dirs))  # InputError, one line, for a folder that is no run's
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(out / COMPARE_CSV, table.to_csv(index=False).encode())
    atomic_write_bytes(out / COMPARE_PARQUET, table.to_parquet(index=False))
    draw_compare(table, out / COMPARE_PNG)
    rows = plain_rows(table)
    if args.json:
        print(json.dumps({"rows": rows}))
    else:
        _print_table(rows)
        print(f"table: {out / COMPARE_CSV}, {out / COMPARE_PARQUET}; plot: {out / COMPARE_PNG}")
    return 0


def plain_rows(table) -> list[dict]:
    """The table's rows as plain Python values, a missing figure as None (null in JSON)."""
    def plain(value):
        if value is None or (isinstance(value, float) and not math.isfinite(value)):
            return None
        return value.item() if hasattr(value, "item") else value

    cleaned = table.astype(object).where(table.notna(), None)
    return [{key: plain(value) for key, value in row.items()} for row in cleaned.to_dict("records")]


def _num(value, spec: str, width: int, unit: str = "") -> str:
    return (f"{value:{spec}}{unit}" if value is not None else "-").rjust(width)


def _print_table(rows: list[dict]) -> None:
    print(f"{'scenario':<18} {'run':<17} {'fidelity':<8} {'policy':<8} {'job':<10} {'measured ms':>11} "
          f"{'predicted':>9} {'error':>7} {'vs none':>8} {'95 % interval':>16} {'verdict':<8} {'predicted':>9}")
    for r in rows:
        low, high = r["throughput_change_low_pct"], r["throughput_change_high_pct"]
        interval = f"[{low:+.1f}, {high:+.1f}]" if low is not None else "-"
        print(f"{r['scenario']:<18} {r['run']:<17} {'ok' if r['fidelity_ok'] else 'LOST':<8} {r['policy']:<8} "
              f"{r['job']:<10} {_num(r['measured_iteration_ms'], '.1f', 11)} "
              f"{_num(r['predicted_iteration_ms'], '.1f', 9)} {_num(r['error_pct'], '+.1f', 7, '%')} "
              f"{_num(r['throughput_change_vs_none_pct'], '+.1f', 8, '%')} {interval:>16} "
              f"{r['throughput_verdict'] or '-':<8} "
              f"{_num(r['predicted_throughput_change_vs_none_pct'], '+.1f', 9, '%')}")
