"""The sweep at scale (``shiftbed sweep``): chunks of combinations evaluated by the compiled fluid model and
counted into one :class:`SweepCell` per (number of jobs, quantum), so memory does not grow with samples.

A chunk is ``samples [start, stop)`` of one number of jobs at every quantum; its result depends on nothing
else (``controller/theory/chunks.py``). The combinations, their evaluation and the row of each are those of
``controller/theory/sweep.py`` (its :func:`~controller.theory.sweep.evaluate` is the reference); where every
policy asked for is one the compiled model reproduces (``fastfluid.supports``) a chunk runs all its
simulations in one compiled batch, else each combination goes through the reference.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from controller.theory import fastfluid, freechunk
from controller.theory.chunks import (
    CHUNK_SAMPLES,
    run_chunks,
    sample_ranges,
    without_cycle_collector,
)
from controller.theory.policies import PolicyKnobs, load_from_environment
from controller.theory.sweep import (
    HELPS_THRESHOLD,
    Combination,
    arm_throughputs,
    arms,
    combine,
    evaluate,
    on_grid,
    run_length,
    sample_block,
    true_jobs,
    unsimulated_counts,
)
from controller.theory.tally import Tally, tally_of_array


@dataclass
class SweepCell:
    """What the summary needs of a cell's combinations: counts and one tally per policy and the sham."""

    combinations: int = 0
    feasible: int = 0
    heuristic: int = 0
    shift_helps: int = 0
    policy_helps: int = 0
    policies: dict[str, Tally] = field(default_factory=dict)  # shift first, then the others asked for
    sham: Tally = field(default_factory=Tally)
    unsimulated: dict[str, int] = field(default_factory=dict)  # per arm, combinations the model could not simulate

    def add(self, row: dict, threshold: float) -> None:
        """Count one combination (a row of :func:`sweep.combine`)."""
        self.combinations += 1
        self.unsimulated = _added(self.unsimulated, unsimulated_counts([row.get("unsimulated", "")]))
        self.feasible += bool(row["feasible"])
        self.heuristic += row["method"] == "heuristic"
        self.shift_helps += bool(row["shift_helps"])
        self.policy_helps += bool(row["policy_helps"])
        for key, gain in row["per_policy"].items():
            if key.startswith("gain_"):
                self.policies.setdefault(key[5:], Tally()).add(gain, threshold)
        self.sham.add(row["sham_gain"], threshold)

    def add_arrays(self, feasible: np.ndarray, heuristic: np.ndarray, gains: dict[str, np.ndarray],
                   first: str, threshold: float, unsimulated: dict[str, int] | None = None) -> None:
        """Count many combinations at once: their schedules' flags, and ``gains[p]`` of every policy
        (shift first, then the others) and of the ``sham`` (:func:`freechunk.gains`); ``unsimulated``:
        per arm, how many of them the model could not simulate."""
        self.combinations += len(feasible)
        self.unsimulated = _added(self.unsimulated, unsimulated or {})
        self.feasible += int(feasible.sum())
        self.heuristic += int(heuristic.sum())
        self.shift_helps += int((gains["shift"] > threshold).sum())
        self.policy_helps += int((gains[first] > threshold).sum())
        for p, g in gains.items():
            if p != "sham":
                self.policies[p] = self.policies.get(p, Tally()).merge(tally_of_array(g, threshold))
        self.sham = self.sham.merge(tally_of_array(gains["sham"], threshold))

    def merge(self, other: SweepCell) -> SweepCell:
        """The cell of both (neither is changed)."""
        names = list(dict.fromkeys([*self.policies, *other.policies]))
        return SweepCell(self.combinations + other.combinations, self.feasible + other.feasible,
                         self.heuristic + other.heuristic, self.shift_helps + other.shift_helps,
                         self.policy_helps + other.policy_helps,
                         {p: self.policies.get(p, Tally()).merge(other.policies.get(p, Tally())) for p in names},
                         self.sham.merge(other.sham), _added(self.unsimulated, other.unsimulated))

    def fractions(self) -> dict:
        """The summary's figures for these combinations (as ``sweep.summarise`` gives them)."""
        n = self.combinations

        def share(count: int) -> float:
            return count / n if n else math.nan

        return {"combinations": n, "unsimulated": dict(self.unsimulated), "feasible_fraction": share(self.feasible),
                "shift_helps_fraction": share(self.shift_helps), "policy_helps_fraction": share(self.policy_helps),
                "heuristic_fraction": share(self.heuristic),
                "policies": {p: t.two_sided() for p, t in self.policies.items()},
                "noise_floor": {"sham": "random start offsets against other random start offsets",
                                **self.sham.two_sided()}}


def _added(a: dict[str, int], b: dict[str, int]) -> dict[str, int]:
    """Two per-arm counts as one (neither is changed)."""
    return {k: a.get(k, 0) + b.get(k, 0) for k in dict.fromkeys([*a, *b])}


def sweep_chunk(task: tuple) -> tuple[dict[tuple[int, float], SweepCell], list[Combination] | None]:
    """``(settings, n_jobs, start, stop)``: the cells of samples ``[start, stop)`` at every quantum, and
    their rows (in sample, then quantum order) when ``settings["rows"]``."""
    with without_cycle_collector():
        return _sweep_chunk(*task)


def _sweep_chunk(settings, n, start, stop):
    load_from_environment()  # a worker process knows the --policy-file policies too (no-op if loaded)
    policies = tuple(settings.get("policies") or (settings.get("policy", "shift"),))
    knobs = PolicyKnobs(realign_s=settings.get("realign_s"))
    threshold = settings.get("threshold", HELPS_THRESHOLD)
    iterations, horizon_ms = settings.get("iterations"), settings.get("horizon_ms")
    names = {"none", "shift", "random", *policies}
    if freechunk.applies(n, names, knobs):
        return _free(settings, n, range(start, stop), policies, threshold, iterations, horizon_ms)
    evaluated = (_fast if all(fastfluid.supports(p) for p in names) else _reference)(
        settings, n, range(start, stop), policies, knobs, threshold, iterations, horizon_ms)
    cells = {(n, q): SweepCell() for q in settings["quanta"]}
    rows = [] if settings.get("rows") else None
    for sample, q, row in evaluated:
        cells[(n, q)].add(row, threshold)
        if rows is not None:
            rows.append(Combination(n, q, sample, **row))
    return cells, rows


def _free(settings, n, samples, policies, threshold, iterations, horizon_ms):
    """``sweep_chunk`` where every arm runs free: the chunk as arrays (``controller/theory/freechunk.py``)."""
    samples = list(samples)
    block = _block(settings, n, samples)
    chunk = freechunk.evaluate_chunk([block.raw(k) for k in samples], samples, settings["quanta"], policies,
                                     [block.uniforms(k) for k in samples], iterations, horizon_ms)
    gains = freechunk.gains(chunk, policies)
    cells = {}
    for c, q in enumerate(chunk.quanta):
        cells[(n, q)] = cell = SweepCell()
        failed = {arm: int(np.isnan(thr[:, c]).sum()) for arm, thr in chunk.throughput.items()}
        cell.add_arrays(chunk.feasible[:, c], chunk.heuristic[:, c], {p: g[:, c] for p, g in gains.items()},
                        policies[0], threshold, {arm: k for arm, k in failed.items() if k})
    if not settings.get("rows"):
        return cells, None
    rows = []
    for r, sample in enumerate(samples):
        for c, q in enumerate(chunk.quanta):
            thr = freechunk.throughputs_of(chunk, r, c)  # free-running arms always schedule: NaN is unsimulated
            rows.append(Combination(n, q, sample, **combine(thr, chunk.schedules[r][c], chunk.grids[r][c], policies,
                                                            threshold, [a for a, x in thr.items() if math.isnan(x)])))
    return cells, rows


def _block(settings: dict, n: int, samples):
    """The draws of the chunk's samples (``draws.draw``), all at once."""
    return sample_block(settings["seed"], n, samples[0], samples[-1] + 1, settings["period_range"],
                        settings["frac_range"], settings["zoo"], settings["zoo_link_mbps"], settings.get("mix"))


def _reference(settings, n, samples, policies, knobs, threshold, iterations, horizon_ms):
    block = _block(settings, n, samples)
    for sample in samples:
        raw = block.raw(sample)
        for q in settings["quanta"]:
            yield sample, q, evaluate(raw, q, policies, threshold, block.uniforms(sample), iterations, horizon_ms,
                                      knobs)


def _fast(settings, n, samples, policies, knobs, threshold, iterations, horizon_ms):
    """Every simulation of the chunk in one compiled batch, then the rows."""
    batch = fastfluid.Batch(iterations=iterations)
    pending = []
    block = _block(settings, n, samples)
    for sample in samples:
        raw = block.raw(sample)
        jobs = true_jobs(raw)
        horizon = run_length(jobs, iterations, horizon_ms).get("horizon_ms")
        for q in settings["quanta"]:
            grid, cache, slots = on_grid(raw, q), {}, {}
            for arm, policy, seed in arms(policies, block.uniforms(sample), n):
                try:
                    slots[arm] = batch.add(policy, grid, jobs, q, knobs, cache, seed, horizon_ms=horizon)
                except ValueError:  # the policy cannot schedule these jobs (align beyond its padding limit)
                    slots[arm] = None
            pending.append((sample, q, grid, cache[tuple(grid)], slots))
    batch.run()
    for sample, q, grid, schedule, slots in pending:
        thr, unsimulated = batch_throughputs(batch, slots)
        yield sample, q, combine(thr, schedule, grid, policies, threshold, unsimulated)


def batch_throughputs(batch: fastfluid.Batch, slots: dict) -> tuple[dict[str, float], list[str]]:
    """Each arm's throughput from a run ``batch`` (``slots``: arm -> its slot, None where the policy cannot
    schedule the jobs), as :func:`sweep.arm_throughputs` gives them."""
    def read(slot):
        if slot is None:
            raise ValueError("the policy cannot schedule these jobs")
        return batch.throughput(slot)

    return arm_throughputs(slots.items(), read)


def run_sweep_cells(settings: dict, workers: int = 1, progress: bool = False,
                    on_rows: Callable[[list[Combination]], None] | None = None,
                    chunk_samples: int = CHUNK_SAMPLES,
                    scheduler_address: str | None = None) -> dict[tuple[int, float], SweepCell]:
    """Every combination of the settings (as ``sweep.run_sweep``), counted per (n_jobs, quantum) cell;
    with ``settings["rows"]``, ``on_rows`` receives each chunk's rows in order as they come. The cells do
    not depend on ``workers``, nor on ``chunk_samples`` (the counts exactly, the means to rounding), nor on
    whether they run on the dask cluster at ``scheduler_address``."""
    tasks = [(settings, n, a, b) for n in settings["jobs"] for a, b in sample_ranges(settings["samples"], chunk_samples)]
    sizes = [(b - a) * len(settings["quanta"]) for _, _, a, b in tasks]
    cells = {(n, q): SweepCell() for n in settings["jobs"] for q in settings["quanta"]}
    for chunk_cells, rows in run_chunks(sweep_chunk, tasks, workers, "sweep", progress, sizes,
                                             scheduler_address):
        for key, cell in chunk_cells.items():
            cells[key] = cells[key].merge(cell)
        if rows is not None and on_rows is not None:
            on_rows(rows)
    return cells


def summarise_cells(cells: dict[tuple[int, float], SweepCell]) -> dict:
    """Overall fractions and the same by number of jobs, quantum, and both (``sweep.summarise``'s shape)."""
    jobs = sorted({n for n, _ in cells})
    quanta = sorted({q for _, q in cells})

    def merged(keys) -> SweepCell:
        out = SweepCell()
        for key in keys:
            out = out.merge(cells[key])
        return out

    return {
        **merged(cells).fractions(),
        "by_jobs": {str(n): merged(k for k in cells if k[0] == n).fractions() for n in jobs},
        "by_quantum_ms": {f"{q:g}": merged(k for k in cells if k[1] == q).fractions() for q in quanta},
        "by_jobs_and_quantum": [{"n_jobs": n, "quantum_ms": q, **cells[(n, q)].fractions()}
                                for n in jobs for q in quanta],
    }
