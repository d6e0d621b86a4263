"""A batch's scenarios: the sweep's draws, placed on a fabric where their bursts share a link, as YAML.

Scenario ``i`` of a batch is the sweep's combination ``(n, sample)`` with
``n = jobs[i % len(jobs)]`` and ``sample = i // len(jobs)``: the draws
``shiftbed sweep --seed S --jobs ... [--mix M]`` makes (``controller.theory.sweep.sample_raw``), the
number of jobs taking turns. Each job keeps its true period and burst
(``comm_ms = fraction × period_ms``, not rounded); only the schedule sees the grid.

Placement: job ``k`` is a ring of two workers, one on the first leaf and one on
the second (:func:`workers`), every flow pinned to spine 1, so every burst
crosses the first leaf's uplink to spine 1 and the spine's downlink to the
second leaf: the jobs meet there, as the demo's do. The text is a scenario
file ``shiftbed run`` reads unchanged; :func:`render` validates it with the
same code (``scenarios.spec.parse``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import yaml

from controller.theory.sweep import sample_raw
from scenarios import spec
from scenarios.errors import InputError

PIN_SPINE = 1  # every flow through spine 1, so the jobs meet on known links (docs/fabric.md)


@dataclass(frozen=True)
class Sampling:
    """The sweep's sampling arguments, as a batch draws with them."""

    seed: int
    jobs: tuple[int, ...]
    period_range_ms: tuple[int, int]
    frac_range: tuple[float, float]
    quantum_ms: float
    zoo: bool = False
    zoo_link_mbps: float = 10_000.0
    mix: float | None = None  # share of harmonic jobs (the map's job-mix knob); None: periods drawn freely


@dataclass(frozen=True)
class Drawn:
    """One drawn scenario: its name, where it came from in the sweep, and its jobs' true timings."""

    name: str
    n_jobs: int
    sample: int
    raw: tuple[tuple[float, float], ...]  # (period_ms, comm fraction) per job, as sample_raw gives them


def scenario_name(index: int, count: int) -> str:
    """``s007``: the scenario's number, zero-padded to the batch's size (at least three digits)."""
    return f"s{index:0{max(3, len(str(count - 1)))}d}"


def draw(sampling: Sampling, count: int) -> list[Drawn]:
    """The batch's ``count`` scenarios, in order (module docstring)."""
    out = []
    for i in range(count):
        n, sample = sampling.jobs[i % len(sampling.jobs)], i // len(sampling.jobs)
        raw = sample_raw(sampling.seed, n, sample, sampling.period_range_ms, sampling.frac_range,
                         sampling.zoo, sampling.zoo_link_mbps, sampling.mix)
        out.append(Drawn(scenario_name(i, count), n, sample, tuple((float(p), float(f)) for p, f in raw)))
    return out


def workers(index: int, fabric: spec.FabricSpec) -> list[str]:
    """Job ``index``'s two workers: one on leaf 1, one on leaf 2, each pair of hosts used once before any
    is used again (with two hosts a leaf: h1-h3, h2-h4, h1-h4, h2-h3, as the shipped scenarios place them)."""
    per_leaf = fabric.hosts_per_leaf
    first = index % per_leaf
    second = (index + index // per_leaf) % per_leaf
    return [f"h{first + 1}", f"h{per_leaf + second + 1}"]


def require_placeable(fabric: spec.FabricSpec | None, path: str) -> spec.FabricSpec:
    """The fabric file's fabric, if a batch can place jobs on it (two leaves at least); else InputError."""
    if fabric is None:
        raise InputError(f"--fabric: {path}: has no fabric")
    if fabric.leaves < 2:
        raise InputError(f"--fabric: {path}: a batch places each job across two leaves, the fabric has "
                         f"{fabric.leaves}")
    return fabric


def scenario_doc(drawn: Drawn, sampling: Sampling, fabric: spec.FabricSpec, policies: tuple[str, ...],
                 duration_s: float, transport: str | None) -> dict:
    """The scenario file's contents (a plain mapping, in the order a person would write it)."""
    periods = ", ".join(f"{p:g}" for p, _ in drawn.raw)
    doc = {"name": drawn.name,
           "description": f"sweep draw: seed {sampling.seed}, {drawn.n_jobs} jobs, sample {drawn.sample} "
                          f"(periods {periods} ms)",
           "quantum_ms": sampling.quantum_ms,
           "policies": list(policies),
           "duration_s": duration_s}
    if transport is not None:
        doc["transport"] = transport
    doc["fabric"] = {k: v for k, v in asdict(fabric).items() if v is not None}
    doc["jobs"] = [{"name": f"j{k}", "period_ms": period_ms, "comm_ms": frac * period_ms,
                    "workers": workers(k, fabric), "pin_spine": PIN_SPINE}
                   for k, (period_ms, frac) in enumerate(drawn.raw)]
    return doc


def render(drawn: Drawn, sampling: Sampling, fabric: spec.FabricSpec, policies: tuple[str, ...],
           duration_s: float, transport: str | None, path: str) -> tuple[str, spec.Scenario]:
    """The scenario file's text and the scenario ``spec`` reads from it (InputError naming ``path`` and
    the field where a draw does not make a valid scenario, e.g. a zoo period beyond the limits)."""
    doc = scenario_doc(drawn, sampling, fabric, policies, duration_s, transport)
    text = (f"# drawn by shiftbed batch from the sweep's sampler (seed {sampling.seed}, {drawn.n_jobs} jobs, "
            f"sample {drawn.sample}); every key as in scenarios/spec.py\n"
            + yaml.safe_dump(doc, sort_keys=False, default_flow_style=None))
    return text, spec.parse(text, path)
