"""``shiftbed sweep``: the command line around ``controller.theory.sweep`` (arguments, output folder, table)."""

from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
import sys
import tempfile
import time
from dataclasses import asdict

from controller.theory import profiles, profilesweep, zoo
from controller.theory.buckets import DTYPE_BYTES
from controller.theory.policies import UnknownPolicy, get_policy
from controller.theory.sweep import (
    HELP,
    HELPS_THRESHOLD,
    MAX_HORIZON_ITERATIONS,
    Combination,
    unsimulated_line,
)
from controller.theory.sweepstream import run_sweep_cells, summarise_cells
from scenarios import cluster, policyfiles
from scenarios.errors import InputError
from scenarios.options import MIX_HELP, check_mix, parse_list, parse_range

QUANTA = "1,5,10,50"  # the default quanta


def add_arguments(parser) -> None:
    parser.description = HELP
    parser.add_argument("--jobs", default="2,3,4", help="number(s) of jobs per combination, e.g. 2,3,4")
    parser.add_argument("--samples", type=int, default=200, help="combinations per number of jobs")
    parser.add_argument("--period-ms", default="100:1000", help="LO:HI, periods uniform over these integers (ms)")
    parser.add_argument("--comm-frac", default="0.1:0.5", help="lo:hi, comm_ms = U(lo, hi) × period_ms")
    parser.add_argument("--quantum-ms", default=QUANTA, help="quantum(s) in ms, e.g. 1,10")
    parser.add_argument("--seed", type=int, default=0, help="random seed (results do not depend on --workers)")
    parser.add_argument("--workers", type=int, default=1, help="processes to use on this machine")
    parser.add_argument("--out", default=None, help="folder for summary.json and plots (and sweep.parquet)")
    parser.add_argument("--rows", action="store_true",
                        help="also write every combination's row to OUT/sweep.parquet (memory stays flat)")
    parser.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    parser.add_argument("--zoo", action="store_true", help="draw jobs from the model zoo instead of uniform periods")
    parser.add_argument("--zoo-link-mbps", type=float, default=zoo.DEFAULT_MODEL_LINK_MBPS,
                        help="link rate the zoo models' gradients are timed at (--zoo)")
    parser.add_argument("--mix", type=float, default=None, metavar="SHARE", help=MIX_HELP)
    parser.add_argument("--horizon-s", type=float, default=None,
                        help="simulated time per policy after the warm-up (default: the lcm of the periods, "
                             f"within 40 to {MAX_HORIZON_ITERATIONS} periods of the longest job)")
    parser.add_argument("--iterations", type=int, default=None,
                        help="instead of a horizon, fluid-model iterations per job")
    parser.add_argument("--policy", default="shift",
                        help="comma-separated policies to report two-sided against `none` (default: shift)")
    parser.add_argument("--realign-s", type=float, default=None,
                        help="re-align a schedule-using policy that enforces no windows (shift) every this many s")
    parser.add_argument("--threshold-pct", type=float, default=100 * HELPS_THRESHOLD,
                        help="a gain above this (percent) helps, below minus this hurts, else neutral (default 1)")
    parser.add_argument("--profiles", default=None, metavar="MODELS",
                        help="draw mixes of model profiles (comma-separated, or 'all': "
                             f"{', '.join(profiles.profile_names())}) and set each policy's gain for their real "
                             "patterns beside the same jobs as one rectangle each (default policies: "
                             f"{','.join(profilesweep.DEFAULT_POLICIES)}; one quantum, default 1 ms)")
    parser.add_argument("--profile-workers", default=",".join(map(str, profilesweep.DEFAULT_WORKERS)),
                        help="worker counts drawn from (--profiles)")
    parser.add_argument("--bucket-cap-mb", default=",".join(f"{c:g}" for c in profilesweep.DEFAULT_BUCKET_CAPS_MB),
                        help="DDP bucket caps (MiB) drawn from (--profiles)")
    parser.add_argument("--link-mbps", type=float, default=zoo.DEFAULT_MODEL_LINK_MBPS,
                        help="the real cluster's link rate the profiles' phases are timed at (--profiles)")
    parser.add_argument("--dtype", default="fp32", help=f"gradients' type, one of {', '.join(DTYPE_BYTES)} (--profiles)")
    policyfiles.add_argument(parser)
    cluster.add_argument(parser)
    parser.epilog = ("shift_helps := normalised throughput under `shift` > (1 + threshold) × under `none`, where "
                     "normalised throughput = mean over jobs of solo period / realised mean iteration time (fluid "
                     "model); hurts := below (1 - threshold) ×. noise_floor: the same fractions for random start "
                     "offsets against other random start offsets (the model's own noise).")


# ---------------------------------------------------------------- output


def write_out(out_dir: str, rows: list[Combination] | None, summary: dict) -> None:
    """summary.json, two plots and, given ``rows``, sweep.parquet: written to a temporary folder then renamed."""
    tmp = new_folder(out_dir)
    if rows is not None:
        with RowWriter(os.path.join(tmp, "sweep.parquet")) as writer:
            writer.write(rows)
    finish_folder(tmp, out_dir, summary)


def new_folder(out_dir: str) -> str:
    """A temporary folder beside ``out_dir`` to write into (:func:`finish_folder` moves it into place)."""
    parent = os.path.dirname(os.path.abspath(out_dir)) or "."
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=".sweep-", dir=parent)
    os.chmod(tmp, 0o755)  # mkdtemp makes it private; results are for everyone to read
    return tmp


def finish_folder(tmp: str, out_dir: str, summary: dict) -> None:
    """summary.json and the plots into ``tmp``, then ``tmp`` renamed to ``out_dir`` (an old one kept aside)."""
    with open(os.path.join(tmp, "summary.json"), "w") as f:
        json.dump(summary, f, indent=2)
    _plots(tmp, summary)
    if os.path.exists(out_dir):
        old = out_dir.rstrip("/") + f".old-{int(time.time())}"
        os.rename(out_dir, old)
        print(f"sweep: previous {out_dir} kept as {old}", file=sys.stderr)
    os.rename(tmp, out_dir)


class RowWriter:
    """sweep.parquet written chunk by chunk (one row group each), so the table never sits in memory."""

    def __init__(self, path: str):
        self.path, self._writer = path, None

    def write(self, rows: list[Combination]) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        flat = [{**{k: v for k, v in asdict(r).items() if k != "per_policy"}, **r.per_policy} for r in rows]
        table = pa.Table.from_pylist(flat)
        if self._writer is None:
            self._writer = pq.ParquetWriter(self.path, table.schema)
        self._writer.write_table(table.cast(self._writer.schema))

    def __enter__(self) -> RowWriter:
        return self

    def __exit__(self, *exc) -> None:
        if self._writer is not None:
            self._writer.close()


def _plots(folder: str, summary: dict) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cells = summary["by_jobs_and_quantum"]
    jobs = sorted({c["n_jobs"] for c in cells})
    quanta = sorted({c["quantum_ms"] for c in cells})
    for key, label in (("feasible_fraction", "zero-overlap schedule exists"),
                       ("shift_helps_fraction", "shift improves throughput > 1 %")):
        fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
        for n in jobs:
            sel = [c for c in cells if c["n_jobs"] == n]
            left.plot([c["quantum_ms"] for c in sel], [c[key] for c in sel], marker="o", label=f"{n} jobs")
        left.set_xscale("log")
        left.set_xlabel("quantum (ms)")
        left.set_ylabel("fraction of combinations")
        if key == "shift_helps_fraction":  # the published figure: ~73 % do not benefit
            for ax in (left, right):
                ax.axhline(0.27, color="grey", linestyle="--", linewidth=1, label="published: 27 % benefit")
        left.legend()
        for q in quanta:
            sel = [c for c in cells if c["quantum_ms"] == q]
            right.plot([c["n_jobs"] for c in sel], [c[key] for c in sel], marker="o", label=f"quantum {q:g} ms")
        right.set_xlabel("number of jobs")
        right.set_xticks(jobs)
        right.legend()
        left.set_ylim(0, 1)
        fig.suptitle(f"{key}: {label} ({cells[0]['combinations']} combinations per point)")
        fig.tight_layout()
        fig.savefig(os.path.join(folder, f"{key}.png"), dpi=120)
        plt.close(fig)


# ---------------------------------------------------------------- command line


def settings_from_args(args) -> dict:
    jobs = parse_list(args.jobs, "--jobs", int)
    if any(n < 2 for n in jobs):
        raise InputError(f"--jobs: need at least 2 jobs per combination, got {args.jobs!r}")
    period_range = parse_range(args.period_ms, "--period-ms", int)
    frac_range = parse_range(args.comm_frac, "--comm-frac", float)
    if frac_range[1] >= 1:
        raise InputError(f"--comm-frac: HI must be below 1, got {args.comm_frac!r}")
    quanta = parse_list(args.quantum_ms, "--quantum-ms", float)
    if not args.zoo and max(quanta) * 2 > period_range[0]:
        raise InputError(f"--quantum-ms: must be at most half of the shortest period ({period_range[0]} ms)")
    for name, value in (("--samples", args.samples), ("--workers", args.workers), ("--iterations", args.iterations)):
        if value is not None and value < 1:
            raise InputError(f"{name}: must be at least 1, got {value}")
    if args.iterations is not None and args.horizon_s is not None:
        raise InputError("--horizon-s: give either --horizon-s or --iterations, not both")
    for name, value in (("--horizon-s", args.horizon_s), ("--realign-s", args.realign_s)):
        if value is not None and not (math.isfinite(value) and value > 0):
            raise InputError(f"{name}: must be a positive number, got {value}")
    if not (math.isfinite(args.zoo_link_mbps) and args.zoo_link_mbps > 0):
        raise InputError(f"--zoo-link-mbps: must be positive, got {args.zoo_link_mbps}")
    if not (math.isfinite(args.threshold_pct) and 0 <= args.threshold_pct < 100):
        raise InputError(f"--threshold-pct: need 0 <= value < 100, got {args.threshold_pct}")
    policies = [p.strip() for p in args.policy.split(",") if p.strip()]
    try:
        for p in policies or [""]:
            get_policy(p)
    except UnknownPolicy as exc:
        raise InputError(f"--policy: {exc}") from None
    return {"policy": policies[0], "policies": policies, "seed": args.seed, "jobs": jobs, "samples": args.samples, "period_range": period_range,
            "frac_range": frac_range, "quanta": quanta, "zoo": args.zoo,
            "zoo_link_mbps": args.zoo_link_mbps, "mix": check_mix(args.mix, args.zoo, period_range),
            "iterations": args.iterations,
            "horizon_ms": args.horizon_s and 1000.0 * args.horizon_s, "realign_s": args.realign_s,
            "threshold": args.threshold_pct / 100}


def run(args) -> int:
    policyfiles.load(args.policy_file)
    if args.profiles is not None:
        return run_profiles(args)
    settings = settings_from_args(args)
    if args.rows and not args.out:
        raise InputError("--rows: needs --out (the folder sweep.parquet goes in)")
    backend = cluster.connect(args, "sweep")
    tmp = new_folder(args.out) if args.out else None
    started = time.perf_counter()
    try:
        with RowWriter(os.path.join(tmp, "sweep.parquet")) if args.rows else contextlib.nullcontext() as rows, \
                cluster.unavailable_is_environment():
            cells = run_sweep_cells({**settings, "rows": args.rows}, args.workers, progress=True,
                                    on_rows=rows.write if rows else None, scheduler_address=backend.address)
    except BaseException:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
        raise
    elapsed = time.perf_counter() - started
    summary = summarise_cells(cells)
    summary = {**summary, "settings": settings, "elapsed_s": round(elapsed, 2),
               "combinations_per_s": round(summary["combinations"] / elapsed, 1), "backend": asdict(backend)}
    if args.out:
        finish_folder(tmp, args.out, summary)
        print(f"sweep: wrote {args.out}/summary.json, plots" + (" and sweep.parquet" if args.rows else ""),
              file=sys.stderr)
    if args.json:
        print(json.dumps(summary))
    else:
        _print_table(summary, settings)
    return 0


def _two_sided_line(name: str, fractions: dict) -> str:
    ci = fractions["ci95"]
    return f"{name}: " + ", ".join(f"{k} {fractions[f'{k}_fraction']:.1%} [{ci[k][0]:.1%}, {ci[k][1]:.1%}]"
                                   for k in ("helps", "neutral", "hurts"))


def _print_table(summary: dict, settings: dict) -> None:
    """The text output: two-sided fractions with 95 % intervals, then one row per cell (noise: the
    noise floor's helps + hurts)."""
    print(f"{summary['combinations']} combinations: feasible {summary['feasible_fraction']:.1%}, "
          f"shift helps {summary['shift_helps_fraction']:.1%} (does not help: {1 - summary['shift_helps_fraction']:.1%})")
    others = [p for p in summary["policies"] if p != "shift"]
    for name, fractions in summary["policies"].items():
        print(_two_sided_line(name, fractions))
    print(_two_sided_line("noise floor (random vs random offsets)", summary["noise_floor"]))
    if summary["unsimulated"]:
        print(unsimulated_line(summary["unsimulated"], summary["combinations"]))
    print(f"{'jobs':>5}{'quantum_ms':>12}{'feasible':>10}{'helps':>8}{'hurts':>8}{'noise':>8}"
          + "".join(f"{p:>12}{'hurts':>8}" for p in others))
    for c in summary["by_jobs_and_quantum"]:
        noise = c["noise_floor"]["helps_fraction"] + c["noise_floor"]["hurts_fraction"]
        line = (f"{c['n_jobs']:>5}{c['quantum_ms']:>12g}{c['feasible_fraction']:>10.1%}{c['shift_helps_fraction']:>8.1%}"
                f"{c['policies']['shift']['hurts_fraction']:>8.1%}{noise:>8.1%}")
        for p in others:
            line += f"{c['policies'][p]['helps_fraction']:>12.1%}{c['policies'][p]['hurts_fraction']:>8.1%}"
        print(line)


# ---------------------------------------------------------------- --profiles


def profile_settings(args) -> profilesweep.ProfileSweep:
    """``--profiles`` and its options, checked."""
    known = profiles.profile_names()
    models = known if args.profiles.strip() == "all" else [m.strip() for m in args.profiles.split(",") if m.strip()]
    unknown = [m for m in models if m not in known]
    if unknown or not models:
        raise InputError(f"--profiles: unknown profile {unknown[0] if unknown else args.profiles!r} "
                         f"(known: {', '.join(known)}, or 'all')")
    workers = parse_list(args.profile_workers, "--profile-workers", int)
    if any(w < 2 for w in workers) or ("pipeline" in models and any(w < 3 for w in workers)):
        raise InputError(f"--profile-workers: need at least 2 workers (3 with the pipeline), got {args.profile_workers!r}")
    caps = parse_list(args.bucket_cap_mb, "--bucket-cap-mb", float)
    if args.dtype not in DTYPE_BYTES:
        raise InputError(f"--dtype: must be one of {', '.join(DTYPE_BYTES)}, got {args.dtype!r}")
    if not (math.isfinite(args.link_mbps) and args.link_mbps > 0):
        raise InputError(f"--link-mbps: must be positive, got {args.link_mbps}")
    quanta = parse_list(args.quantum_ms, "--quantum-ms", float) if args.quantum_ms != QUANTA else [1.0]
    if len(quanta) != 1:
        raise InputError(f"--quantum-ms: --profiles takes one quantum, got {args.quantum_ms!r}")
    jobs = parse_list(args.jobs, "--jobs", int)
    if any(n < 2 for n in jobs):
        raise InputError(f"--jobs: need at least 2 jobs per combination, got {args.jobs!r}")
    for name, value in (("--samples", args.samples), ("--workers", args.workers)):
        if value < 1:
            raise InputError(f"{name}: must be at least 1, got {value}")
    for name in ("iterations", "horizon_s", "realign_s", "mix"):
        if getattr(args, name) is not None:
            raise InputError(f"--{name.replace('_', '-')}: not with --profiles (each policy runs "
                             f"{profilesweep.MIN_HORIZON_ITERATIONS} periods of the longest job)")
    if not (math.isfinite(args.threshold_pct) and 0 <= args.threshold_pct < 100):
        raise InputError(f"--threshold-pct: need 0 <= value < 100, got {args.threshold_pct}")
    policies = [p.strip() for p in args.policy.split(",") if p.strip()] if args.policy != "shift" else None
    try:
        for p in policies or []:
            get_policy(p)
    except UnknownPolicy as exc:
        raise InputError(f"--policy: {exc}") from None
    return profilesweep.ProfileSweep(tuple(models), tuple(workers), tuple(caps), args.link_mbps, args.dtype,
                                     tuple(jobs), args.samples, args.seed, quanta[0],
                                     tuple(policies or profilesweep.DEFAULT_POLICIES),
                                     threshold=args.threshold_pct / 100)


def run_profiles(args) -> int:
    """``sweep --profiles``: the mixes, both forms, summarised; ``--out`` gets summary.json."""
    settings = profile_settings(args)
    backend = cluster.connect(args, "sweep")
    started = time.perf_counter()
    with cluster.unavailable_is_environment():
        rows = profilesweep.run(settings, args.workers, progress=True, scheduler_address=backend.address)
    elapsed = time.perf_counter() - started
    summary = {**profilesweep.summarise(rows, settings.threshold), "settings": asdict(settings),
               "elapsed_s": round(elapsed, 2), "combinations_per_s": round(len(rows) / elapsed, 1),
               "backend": asdict(backend)}
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "summary.json"), "w") as f:
            json.dump(summary, f, indent=2)
        print(f"sweep: wrote {args.out}/summary.json", file=sys.stderr)
    if args.json:
        print(json.dumps(summary))
        return 0
    print(f"{summary['combinations']} combinations of {', '.join(settings.models)} on {settings.link_mbps:g} Mbit/s "
          f"links, workers {'/'.join(map(str, settings.workers))}, bucket cap "
          f"{'/'.join(f'{c:g}' for c in settings.bucket_caps_mb)} MiB, quantum {settings.quantum_ms:g} ms")
    for form in profilesweep.FORMS:
        part = summary[form]
        ci = part["feasible_ci95"]
        print(f"{form}: feasible {part['feasible_fraction']:.1%} [{ci[0]:.1%}, {ci[1]:.1%}]")
        for name, fractions in part["policies"].items():
            print("  " + _two_sided_line(name, fractions))
    print(f"the forms disagree on feasibility in {summary['feasibility_differs_fraction']:.1%}, on whether shift "
          f"helps in {summary['shift_verdict_differs_fraction']:.1%} of combinations")
    return 0
