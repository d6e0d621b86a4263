"""A new batch's settings, checked whole before anything is built or written: the sampling arguments as
``sweep`` reads them, the fabric file, the policies, and every drawn scenario as ``run`` checks a file.
Every problem is one ``InputError`` line naming the option (or the drawn scenario's file and field)."""

from __future__ import annotations

import sys
from pathlib import Path

from controller.theory import zoo
from scenarios import shipped, spec
from scenarios.analysis.verdict import BASELINE, THRESHOLD_PCT
from scenarios.batch.draw import Sampling, draw, render, require_placeable
from scenarios.batch.folder import SCENARIOS_DIR
from scenarios.errors import InputError
from scenarios.options import (
    DEFAULT_DURATION_S,
    check_mix,
    check_out_root,
    parse_duration,
    parse_list,
    parse_policies,
    parse_range,
    parse_target_se_pct,
)
from scenarios.results import utc_timestamp
from scenarios.runnable import burst_transport_here, require_runnable_here


def check_new_out(out: str) -> None:
    """``OUT`` must be a folder we can create, not one that exists."""
    check_out_root(out)
    if Path(out).exists():
        raise InputError(f"OUT: {out} exists; `shiftbed batch --resume {out}` continues the batch there, "
                         "or name a new folder")


def sampling(values: dict) -> Sampling:
    """The sweep's sampling arguments (its own parsers, its rules) and the batch's one quantum."""
    jobs = parse_list(values["jobs"], "--jobs", int)
    if any(n < 2 for n in jobs):
        raise InputError(f"--jobs: need at least 2 jobs per scenario, got {values['jobs']!r}")
    period_range = parse_range(values["period_ms"], "--period-ms", int)
    frac_range = parse_range(values["comm_frac"], "--comm-frac", float)
    if frac_range[1] >= 1:
        raise InputError(f"--comm-frac: HI must be below 1, got {values['comm_frac']!r}")
    quanta = parse_list(values["quantum_ms"], "--quantum-ms", float)
    if len(quanta) != 1:
        raise InputError(f"--quantum-ms: a batch runs one quantum, got {values['quantum_ms']!r}")
    zoo_link_mbps = values["zoo_link_mbps"] or zoo.DEFAULT_MODEL_LINK_MBPS
    if not zoo_link_mbps > 0 or zoo_link_mbps == float("inf"):
        raise InputError(f"--zoo-link-mbps: must be positive, got {values['zoo_link_mbps']}")
    if not values["zoo"] and quanta[0] * 2 > period_range[0]:
        raise InputError(f"--quantum-ms: must be at most half of the shortest period ({period_range[0]} ms)")
    mix = check_mix(values["mix"], bool(values["zoo"]), period_range)
    return Sampling(values["seed"], tuple(jobs), period_range, frac_range, quanta[0], bool(values["zoo"]),
                    zoo_link_mbps, mix)


def fabric(path: str) -> spec.FabricSpec:
    """The fabric of the scenario file ``path`` (``--fabric``)."""
    try:
        scenario = spec.load(path)
    except InputError as exc:
        raise InputError(f"--fabric: {exc}") from None
    return require_placeable(scenario.fabric, path)


def plan_batch(values: dict, out: str) -> tuple[dict, dict[str, str]]:
    """``batch.json``'s record and every scenario's file text, in order (InputError for anything wrong)."""
    count = values["scenarios"]
    if count < 1:
        raise InputError(f"--scenarios: must be at least 1, got {count}")
    sample = sampling(values)
    fabric_file = values["fabric"] or str(shipped.SCENARIOS_DIR / shipped.DEMO_SCENARIOS[0])
    placed_on = fabric(fabric_file)
    policies = parse_policies(values["policy"], ())
    if BASELINE not in policies:
        raise InputError(f"--policy: a batch judges every policy against `{BASELINE}`; name it too")
    duration_s = parse_duration(values["duration"], DEFAULT_DURATION_S)
    target_se_pct = parse_target_se_pct(values["target_se_pct"])
    drawn = draw(sample, count)
    paths = {d.name: str(Path(out) / SCENARIOS_DIR / f"{d.name}.yaml") for d in drawn}
    transport = values["transport"]
    first_text, first = render(drawn[0], sample, placed_on, policies, duration_s, transport, paths[drawn[0].name])
    first.require_runnable()  # its one line comes before any notice of the transport
    require_runnable_here(first, paths[drawn[0].name], policies)
    here, _ = burst_transport_here(first, first_text)  # InputError: a transport this machine lacks
    if transport is None and here.transport != first.transport:
        transport = here.transport  # said once (above); written into every scenario file
    texts = {}
    for d in drawn:
        text, scenario = render(d, sample, placed_on, policies, duration_s, transport, paths[d.name])
        scenario.require_runnable()
        require_runnable_here(scenario, paths[d.name], policies)
        texts[d.name] = text
    settings = {"scenarios": count, "jobs": list(sample.jobs), "period_ms": list(sample.period_range_ms),
                "comm_frac": list(sample.frac_range), "quantum_ms": sample.quantum_ms, "seed": sample.seed,
                "zoo": sample.zoo, "zoo_link_mbps": sample.zoo_link_mbps, "mix": sample.mix, "fabric_file": fabric_file,
                "policies": list(policies), "transport": transport, "duration_s": duration_s,
                "threshold_pct": THRESHOLD_PCT, "target_se_pct": target_se_pct,
                "reuse_calibration": not values["calibrate_each"]}
    record = {"created": utc_timestamp(), "command": " ".join(sys.argv), "settings": settings,
              "draws": {d.name: {"n_jobs": d.n_jobs, "sample": d.sample} for d in drawn}}
    return record, texts
