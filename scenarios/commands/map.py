"""``shiftbed map``: the command line around ``controller.theory.mapping`` (arguments, output folder, table)."""

from __future__ import annotations

import csv
import json
import math
import os
import sys
import tempfile
import time
from dataclasses import asdict, replace

from controller.theory import mapping, mapstream
from controller.theory.sweep import unsimulated_line
from scenarios import cluster
from scenarios.errors import InputError

HELP = ("which policy wins, and by how much, one factor at a time around a default point (2 jobs, quantum "
        "1 ms, exact periods, no re-alignment, medium comm share, no harmonic jobs, uniform periods): "
        "helps / neutral / hurts fractions against `none` and against random offsets, with 95 % intervals")
CSV_STATS = ("helps", "neutral", "hurts")


def add_arguments(parser) -> None:
    parser.description = HELP
    parser.add_argument("--out", default=None, help="folder for map.csv, map.png and summary.json")
    parser.add_argument("--samples", type=int, default=mapstream.DEFAULT_SAMPLES,
                        help=f"combinations per point (default {mapstream.DEFAULT_SAMPLES}: every 95 %% interval "
                             "within ±2 points)")
    parser.add_argument("--workers", type=int, default=1, help="processes to use on this machine (results do not depend on it)")
    parser.add_argument("--seed", type=int, default=0, help="random seed")
    parser.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    parser.add_argument("--panel", action="append", default=[], metavar="FACTOR=V1,V2,...",
                        help="replace one panel's values (factors: " + ", ".join(mapping.FACTORS) + "); repeatable")
    parser.add_argument("--only", default=None, metavar="FACTOR,...", help="draw only these panels")
    parser.add_argument("--at", action="append", default=[], metavar="FACTOR=VALUE",
                        help="move the default point, e.g. --at quantum_ms=50; repeatable")
    parser.add_argument("--threshold-pct", type=float, default=100 * mapping.HELPS_THRESHOLD,
                        help="a gain above this (percent) helps, below minus this hurts (default 1)")
    cluster.add_argument(parser)


# ---------------------------------------------------------------- arguments


def _factor_and_text(item: str, option: str) -> tuple[str, str]:
    factor, sep, text = item.partition("=")
    factor = factor.strip()
    if not sep or not text.strip():
        raise InputError(f"{option}: expected FACTOR=VALUE, got {item!r}")
    if factor not in mapping.FACTORS:
        raise InputError(f"{option}: unknown factor {factor!r}; known: {', '.join(mapping.FACTORS)}")
    return factor, text


def _value(factor: str, text: str, option: str):
    try:
        return mapping.parse_value(factor, text)
    except ValueError as exc:
        raise InputError(f"{option}: {exc}") from None


def _no_nan(x):
    """NaN (a policy that scheduled none of a cell's combinations) as JSON null."""
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {k: _no_nan(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_no_nan(v) for v in x]
    return x


def settings_from_args(args) -> dict:
    for name, value in (("--samples", args.samples), ("--workers", args.workers)):
        if value < 1:
            raise InputError(f"{name}: must be at least 1, got {value}")
    if not (math.isfinite(args.threshold_pct) and 0 <= args.threshold_pct < 100):
        raise InputError(f"--threshold-pct: need 0 <= value < 100, got {args.threshold_pct}")
    settings = mapping.default_settings(args.samples, args.seed)
    settings["threshold"] = args.threshold_pct / 100
    for item in args.panel:
        factor, text = _factor_and_text(item, "--panel")
        values = [_value(factor, v, "--panel") for v in text.split(",") if v.strip()]
        settings["panels"][factor] = tuple(dict.fromkeys(values))
    for item in args.at:
        factor, text = _factor_and_text(item, "--at")
        settings["default"] = replace(settings["default"], **{factor: _value(factor, text, "--at")})
    if args.only is not None:
        only = [f.strip() for f in args.only.split(",") if f.strip()]
        unknown = [f for f in only if f not in mapping.FACTORS]
        if not only or unknown:
            raise InputError(f"--only: known factors are {', '.join(mapping.FACTORS)}, got {args.only!r}")
        settings["panels"] = {f: settings["panels"][f] for f in only}
    return settings


# ---------------------------------------------------------------- output


def csv_rows(cells: list[dict]) -> list[dict]:
    """map.csv: one row per panel × value × policy."""
    rows = []
    for c in cells:
        row = {k: c[k] for k in ("factor", "value", "policy")}
        for base in ("vs_none", "vs_random"):
            s, tag = c[base], "" if base == "vs_none" else "_vs_random"
            row[f"n{tag}"] = s["n"]
            for k in CSV_STATS:
                row[f"{k}{tag}"], (row[f"{k}{tag}_lo"], row[f"{k}{tag}_hi"]) = s[k], s["ci95"][k]
            row[f"mean_gain{tag}"], (row[f"mean_gain{tag}_lo"], row[f"mean_gain{tag}_hi"]) = (
                s["mean_gain"], s["mean_gain_ci95"])
        row.update({k: c[k] for k in ("noise_helps", "noise_hurts", "feasible_fraction", "harmonic_share")})
        row["unsimulated"] = c.get("unsimulated", 0)  # combinations the model could not simulate (not in n)
        rows.append({k: round(v, 5) if isinstance(v, float) else v for k, v in row.items()})
    return rows


def write_out(out_dir: str, cells: list[dict], summary: dict) -> None:
    """map.csv, map.png and summary.json, written to a temporary folder then moved into place."""
    parent = os.path.dirname(os.path.abspath(out_dir)) or "."
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=".map-", dir=parent)
    os.chmod(tmp, 0o755)  # mkdtemp makes it private; results are for everyone to read
    rows = csv_rows(cells)
    with open(os.path.join(tmp, "map.csv"), "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    with open(os.path.join(tmp, "summary.json"), "w") as f:
        json.dump(summary, f, indent=2)
    plot(os.path.join(tmp, "map.png"), cells, summary["settings"]["samples"])
    if os.path.exists(out_dir):
        old = out_dir.rstrip("/") + f".old-{int(time.time())}"
        os.rename(out_dir, old)
        print(f"map: previous {out_dir} kept as {old}", file=sys.stderr)
    os.rename(tmp, out_dir)


def plot(path: str, cells: list[dict], samples: int) -> None:
    """Per factor two subplots, one above the other: each policy's helps-fraction against `none` with
    its Wilson band, and its mean gain (%) with its t band."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    factors = list(dict.fromkeys(c["factor"] for c in cells))
    policies = list(dict.fromkeys(c["policy"] for c in cells))
    cols = min(4, len(factors))
    bands = math.ceil(len(factors) / cols)
    fig, axes = plt.subplots(2 * bands, cols, figsize=(4 * cols, 5.6 * bands), squeeze=False)
    for k, factor in enumerate(factors):
        top, bottom = axes[2 * (k // cols), k % cols], axes[2 * (k // cols) + 1, k % cols]
        values = list(dict.fromkeys(c["value"] for c in cells if c["factor"] == factor))
        x = list(range(len(values)))
        for policy in policies:
            sel = [next(c["vs_none"] for c in cells if c["factor"] == factor and c["value"] == v
                        and c["policy"] == policy) for v in values]
            line, = top.plot(x, [s["helps"] for s in sel], marker="o", label=policy)
            top.fill_between(x, [s["ci95"]["helps"][0] for s in sel], [s["ci95"]["helps"][1] for s in sel],
                             color=line.get_color(), alpha=0.12)
            bottom.plot(x, [100 * s["mean_gain"] for s in sel], marker="o", color=line.get_color())
            bottom.fill_between(x, [100 * s["mean_gain_ci95"][0] for s in sel],
                                [100 * s["mean_gain_ci95"][1] for s in sel], color=line.get_color(), alpha=0.12)
        top.axhline(mapping.PUBLISHED_HELPS, color="grey", linestyle="--", linewidth=1)
        bottom.axhline(0, color="grey", linewidth=0.8)
        top.set_ylim(0, 1)
        top.set_title(factor, fontsize=9)
        for ax in (top, bottom):
            ax.set_xticks(x, values)
        top.set_ylabel("helps (> 1 % over none)" if k % cols == 0 else "")
        bottom.set_ylabel("mean gain over none, %" if k % cols == 0 else "")
    for k in range(len(factors), bands * cols):
        axes[2 * (k // cols), k % cols].axis("off")
        axes[2 * (k // cols) + 1, k % cols].axis("off")
    axes[0, 0].legend(fontsize=7, loc="upper left")
    fig.suptitle(f"where each policy helps, one factor at a time ({samples} combinations per point; "
                 f"bands: 95 % intervals; dashed: published 27 %)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _cell_text(s: dict) -> str:
    """``helps% [lo-hi] gain%`` of one cell (``-`` where the policy scheduled none of its combinations)."""
    if not s["n"]:
        return "-"
    lo, hi = s["ci95"]["helps"]
    return f"{100 * s['helps']:.0f} [{100 * lo:.0f}-{100 * hi:.0f}] {100 * s['mean_gain']:+.1f}"


def print_table(cells: list[dict]) -> None:
    """Per panel value and policy: helps % against `none` [95 % interval] and the mean gain %; then the
    noise floor (random offsets against random offsets: helps + hurts %)."""
    policies = list(dict.fromkeys(c["policy"] for c in cells))
    print(f"{'factor':<11}{'value':>7}" + "".join(f"{p:>20}" for p in policies) + f"{'noise':>7}")
    print(f"{'':<18}" + "".join(f"{'helps% [CI] gain%':>20}" for _ in policies))
    for factor, value in dict.fromkeys((c["factor"], c["value"]) for c in cells):
        sel = {c["policy"]: c for c in cells if c["factor"] == factor and c["value"] == value}
        c = next(iter(sel.values()))
        print(f"{factor:<11}{value:>7}" + "".join(f"{_cell_text(sel[p]['vs_none']):>20}" for p in policies)
              + f"{100 * (c['noise_helps'] + c['noise_hurts']):>7.0f}")


def run(args) -> int:
    settings = settings_from_args(args)
    backend = cluster.connect(args, "map")
    started = time.perf_counter()
    with cluster.unavailable_is_environment():
        results = mapstream.run_map_cells(settings, args.workers, progress=True, scheduler_address=backend.address)
    elapsed = time.perf_counter() - started
    cells = mapstream.map_cells(settings, results)
    shown = {**settings, "default": asdict(settings["default"]),
             "panels": {f: [mapping.format_value(f, v) for v in vs] for f, vs in settings["panels"].items()}}
    unsimulated = unsimulated_total(results.values())
    summary = {"settings": shown, "points": len(results), "combinations": sum(c.combinations for c in results.values()),
               "unsimulated": unsimulated,
               "elapsed_s": round(elapsed, 1), "workers": backend.workers, "backend": asdict(backend),
               "nearest_to_published_27pct": mapping.nearest_to_published(cells)[:5], "cells": cells}
    summary = _no_nan(summary)
    if args.out:
        write_out(args.out, cells, summary)
        print(f"map: wrote {args.out}/map.csv, map.png and summary.json", file=sys.stderr)
    if args.json:
        print(json.dumps(summary))
    else:
        print_table(cells)
        print(f"{summary['combinations']} combinations at {summary['points']} points in {elapsed:.0f} s "
              f"({backend})")
        if unsimulated:
            print(unsimulated_line(unsimulated, summary["combinations"]))
    return 0


def unsimulated_total(cells) -> dict[str, int]:
    """Per arm, the combinations of all ``cells`` (``MapCell``/``SweepCell``) the model could not simulate."""
    out: dict[str, int] = {}
    for cell in cells:
        for arm, k in cell.unsimulated.items():
            out[arm] = out.get(arm, 0) + k
    return out

