"""``shiftbed trace FILE``: a PyTorch profiler (Kineto) trace -> the job's phases and its busy pattern.

Thin adapter around ``scenarios/tracefile.py`` (which steps count, how collectives are found and sized)
and ``controller/theory/phases.py`` (``as_pattern``: the phases on a grid of quanta at a link rate).
Prints the reader's summary and the pattern as a one-line strip of the iteration, ``#`` where the link
is busy and ``.`` where it is idle; ``--json`` prints one object instead; ``--out`` writes the job as a
scenario file (``shiftbed plan`` decides it; ``run`` refuses a pattern job: ``docs/trace.md``).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import replace
from pathlib import Path

from controller.theory.zoo import DEFAULT_MODEL_LINK_MBPS
from scenarios.errors import InputError

DEFAULT_CELLS = 60  # the strip's cells when no --quantum-ms is given
MAX_CELLS = 1000  # a strip stays one readable line
HOST_NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}")  # as controller/scheduler.py's HOST_NAME_RE

HELP_LINK = (f"link rate (Mbit/s) the strip times each phase at (default {DEFAULT_MODEL_LINK_MBPS:g}, the rate "
             "the scenario format times model jobs at, model_link_mbps: a trace's times are those of the machine "
             "it was taken on, and at the fabric's emulated 50 Mbit/s a real job's buckets fill its whole iteration)")


def add_arguments(parser) -> None:
    parser.add_argument("trace", metavar="FILE", help="a PyTorch profiler (Kineto) Chrome trace, .json or .json.gz")
    parser.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    parser.add_argument("--out", default=None, metavar="SCENARIO.yaml",
                        help="write the job as a scenario file (name: and a jobs: list holding the one job) that "
                             "shiftbed plan takes")
    parser.add_argument("--name", default=None,
                        help="the job's name (default: the trace file's name without .json/.gz)")
    parser.add_argument("--workers", default=None, metavar="h1,h3",
                        help="the job's hosts, comma-separated, at least two (default: h1..hN, N the trace's "
                             "group size); the strip is drawn for this many workers")
    parser.add_argument("--link-mbps", type=float, default=DEFAULT_MODEL_LINK_MBPS, metavar="M", help=HELP_LINK)
    parser.add_argument("--quantum-ms", type=float, default=None, metavar="Q",
                        help=f"the strip's cell, ms (default: the iteration / {DEFAULT_CELLS}; at most "
                             f"{MAX_CELLS} cells)")


def run(args) -> int:
    hosts = _hosts(args.workers)
    name = _name(args.name, args.trace)
    _check_options(args)
    out = _out_path(args.out)

    from controller.theory.phases import as_pattern, busy_total_ms
    from scenarios.tracefile import read_trace, render, scenario_job

    job = read_trace(args.trace)
    hosts = hosts or [f"h{k}" for k in range(1, job.workers + 1)]
    entry = scenario_job(job, name, hosts)
    pattern = replace(job.pattern, workers=len(hosts))
    iteration_ms = pattern.iteration_ms
    quantum_ms = args.quantum_ms or iteration_ms / DEFAULT_CELLS
    cells = iteration_ms / quantum_ms
    if cells > MAX_CELLS + 0.5:
        raise InputError(f"--quantum-ms: {quantum_ms:g} ms splits the iteration ({iteration_ms:.3f} ms) into "
                         f"{cells:.0f} cells; at most {MAX_CELLS}")
    busy = as_pattern(pattern, args.link_mbps, quantum_ms)
    strip = draw(busy)
    notes = list(job.notes)
    need_ms = busy_total_ms(pattern, args.link_mbps)
    if "." not in strip:
        notes.append(f"at {args.link_mbps:g} Mbit/s the link is busy the whole iteration: the phases need "
                     f"{need_ms:.3f} ms of it alone, the iteration is {iteration_ms:.3f} ms (try a faster --link-mbps)")
    if out is not None:
        write_yaml(out, entry, job.path)

    if args.json:
        print(json.dumps({
            "trace": job.path, "job": entry, "steps": list(job.step_numbers), "warmup_steps": list(job.warmup_steps),
            "trace_workers": job.workers, "notes": notes, "link_mbps": args.link_mbps, "quantum_ms": quantum_ms,
            "cells": busy.period_q, "busy_cells": busy.busy_q, "strip": strip,
            "out": str(out) if out is not None else None,
        }, indent=2))
        return 0
    print(render(job))
    for note in notes[len(job.notes):]:
        print(f"note: {note}")
    print(f"on the link at {args.link_mbps:g} Mbit/s, {len(hosts)} workers, {busy.period_q} cells of "
          f"{quantum_ms:.3f} ms, {busy.busy_q} busy (#):")
    print(f"  |{strip}|")
    if out is not None:
        print(f"wrote {out}: job {name}, workers {','.join(hosts)}")
    return 0


def draw(pattern) -> str:
    """An ``arcs.Pattern`` as one line, a character a quantum: ``#`` busy, ``.`` idle."""
    cells = ["."] * pattern.period_q
    for start_q, length_q in pattern.arcs:
        cells[start_q:start_q + length_q] = "#" * length_q
    return "".join(cells)


def write_yaml(out: Path, entry: dict, trace_path: str) -> None:
    """``name:`` and ``jobs:`` holding the one job, under a comment naming the trace."""
    import yaml

    text = (f"# from {trace_path} by `shiftbed trace`; `shiftbed plan` takes it; `run` takes it beside a\n"
            "# `fabric:`, `transport: persistent` and the job's `workers:` (docs/scenarios.md)\n"
            + yaml.safe_dump({"name": entry["name"], "jobs": [entry]}, sort_keys=False))
    try:
        out.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise InputError(f"--out: cannot write {out}: {exc.strerror or exc}") from None


def _hosts(value: str | None) -> list[str] | None:
    if value is None:
        return None
    hosts = [h.strip() for h in value.split(",") if h.strip()]
    bad = next((h for h in hosts if not HOST_NAME.fullmatch(h)), None)
    if bad is not None:
        raise InputError(f"--workers: {bad!r} is not a host name like h1")
    if len(hosts) < 2:
        raise InputError(f"--workers: a collective needs at least two workers, got {len(hosts)} ({value!r})")
    twice = next((h for k, h in enumerate(hosts) if h in hosts[:k]), None)
    if twice is not None:
        raise InputError(f"--workers: {twice} is given twice")
    return hosts


def _name(value: str | None, trace: str) -> str:
    from controller.limits import MAX_JOB_NAME_CHARS, job_name_problem

    if value is not None:
        problem = job_name_problem(value)
        if problem:
            raise InputError(f"--name: {problem}")
        return value
    stem = Path(trace).name.removesuffix(".gz").removesuffix(".json")
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "-", stem).lstrip(".")[:MAX_JOB_NAME_CHARS]
    return stem or "trace"


def _check_options(args) -> None:
    if not math.isfinite(args.link_mbps) or args.link_mbps <= 0:
        raise InputError(f"--link-mbps: must be a rate above 0 Mbit/s, got {args.link_mbps:g}")
    if args.quantum_ms is not None and (not math.isfinite(args.quantum_ms) or args.quantum_ms <= 0):
        raise InputError(f"--quantum-ms: must be above 0 ms, got {args.quantum_ms:g}")


def _out_path(value: str | None) -> Path | None:
    if value is None:
        return None
    out = Path(value)
    if out.is_dir():
        raise InputError(f"--out: {out} is a folder; give a file name, e.g. {out / 'trace.yaml'}")
    if not out.parent.is_dir():
        raise InputError(f"--out: no folder {out.parent} to write {out.name} into")
    return out
