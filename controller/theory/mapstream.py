"""The map at scale (``shiftbed map``): chunks of combinations evaluated by the compiled fluid model and
counted into one :class:`MapCell` per point, so memory does not grow with samples.

A chunk is ``samples [start, stop)`` of the points that draw the same jobs (``controller/theory/chunks.py``):
the quantum, error and re-alignment panels around a point share its draws, so a chunk draws each sample
once, and a simulation two of its points share (``none`` everywhere, ``mltcp`` and ``priority`` wherever the
schedule does not change them) runs once. The combinations and their evaluation are those of
``controller/theory/mapping.py`` (its :func:`~controller.theory.mapping.evaluate_point` is the reference).
A chunk of built-in policies is evaluated as arrays (``controller/theory/mapchunk.py``); else,
where every policy of the map is one the compiled model reproduces (``fastfluid.supports``), a chunk runs
all its simulations in one compiled batch, combination by combination; else each goes through the reference.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from controller.theory import fastfluid, fluid, mapchunk
from controller.theory.chunks import (
    CHUNK_SAMPLES,
    run_chunks,
    sample_ranges,
    without_cycle_collector,
)
from controller.theory.mapping import (
    HELPS_THRESHOLD,
    MAX_HORIZON_ITERATIONS,
    MapPoint,
    combine_point,
    evaluate_point,
    format_value,
    panel_points,
    point_arms,
    point_block,
    scheduler_view,
)
from controller.theory.policies import PolicyKnobs, load_from_environment
from controller.theory.sweep import on_grid, true_jobs
from controller.theory.sweepstream import batch_throughputs
from controller.theory.tally import Tally, tally_of_array

# Combinations per point by default: every fraction's 95 % Wilson interval is then at most ±2 points,
# whatever the fraction. The widest is at 1/2, where 2398 is the fewest that do it (half-width 0.019996;
# 2397: 0.020000); 2400 rounds that up. tests/unit/test_sweepstream.py checks it.
DEFAULT_SAMPLES = 2400


@dataclass
class MapCell:
    """What the map's cells need of a point's combinations: counts and tallies per policy and baseline."""

    combinations: int = 0
    feasible: int = 0
    harmonic_share_sum: float = 0.0
    noise: Tally = field(default_factory=Tally)  # random offsets against random offsets
    vs_none: dict[str, Tally] = field(default_factory=dict)
    vs_random: dict[str, Tally] = field(default_factory=dict)
    unsimulated: dict[str, int] = field(default_factory=dict)  # per arm, combinations the model could not simulate

    def add(self, result: dict, threshold: float) -> None:
        """Count one combination (a result of :func:`mapping.combine_point`)."""
        self.combinations += 1
        for arm in result.get("unsimulated", ()):
            self.unsimulated[arm] = self.unsimulated.get(arm, 0) + 1
        self.feasible += bool(result["feasible"])
        self.harmonic_share_sum += result["harmonic_share"]
        self.noise.add(result["sham_gain"], threshold)
        for p, gain in result["gain"].items():
            self.vs_none.setdefault(p, Tally()).add(gain, threshold)
            self.vs_random.setdefault(p, Tally()).add(result["gain_vs_random"][p], threshold)

    def add_arrays(self, arrays: mapchunk.PointArrays, policies: tuple[str, ...], threshold: float) -> None:
        """Count a chunk's combinations at one point at once (the means and spreads to rounding as
        :meth:`add` one by one)."""
        vs_none, vs_random, sham = arrays.gains(policies)
        self.combinations += len(sham)
        for arm, flags in arrays.unsimulated.items():
            if flags.any():
                self.unsimulated[arm] = self.unsimulated.get(arm, 0) + int(flags.sum())
        self.feasible += int(arrays.feasible.sum())
        self.harmonic_share_sum += float(arrays.harmonic_share.sum())
        self.noise = self.noise.merge(tally_of_array(sham, threshold))
        for p in policies:
            self.vs_none[p] = self.vs_none.get(p, Tally()).merge(tally_of_array(vs_none[p], threshold))
            self.vs_random[p] = self.vs_random.get(p, Tally()).merge(tally_of_array(vs_random[p], threshold))

    def merge(self, other: MapCell) -> MapCell:
        """The cell of both (neither is changed)."""
        def both(a: dict, b: dict) -> dict:
            return {p: a.get(p, Tally()).merge(b.get(p, Tally())) for p in dict.fromkeys([*a, *b])}

        return MapCell(self.combinations + other.combinations, self.feasible + other.feasible,
                       self.harmonic_share_sum + other.harmonic_share_sum, self.noise.merge(other.noise),
                       both(self.vs_none, other.vs_none), both(self.vs_random, other.vs_random),
                       {k: self.unsimulated.get(k, 0) + other.unsimulated.get(k, 0)
                        for k in dict.fromkeys([*self.unsimulated, *other.unsimulated])})


def map_chunk(task: tuple) -> dict[MapPoint, MapCell]:
    """``(settings, points, start, stop)``: the cell of samples ``[start, stop)`` at each of ``points``
    (points that draw the same jobs, :func:`draws_alike`)."""
    settings, points, start, stop = task
    load_from_environment()
    threshold = settings.get("threshold", HELPS_THRESHOLD)
    policies = tuple(settings["policies"])
    fast = all(fastfluid.supports(p) for p in ("none", "random", *policies))
    cells = {point: MapCell() for point in points}
    if mapchunk.applies(policies):
        block = _block(settings, points, start, stop)
        try:
            arrays = mapchunk.evaluate_chunk(block, points, policies)
        except mapchunk.NotClosedForm:  # a grid too fine for the pair's closed form: as below
            pass
        else:
            for point in points:
                cells[point].add_arrays(arrays[point], policies, threshold)
            return cells
    with without_cycle_collector():
        for point, result in (_fast if fast else _reference)(settings, points, range(start, stop), policies):
            cells[point].add(result, threshold)
    return cells


def draws_alike(point: MapPoint) -> tuple:
    """What a point's jobs are drawn from (``mapping.sample_point``): points alike here draw the same jobs
    and the same measurement errors' normals; quantum, error and re-alignment do not enter."""
    return point.n_jobs, point.comm, point.mix, point.workload


def _combinations(settings: dict, points: tuple[MapPoint, ...], samples: range):
    """(sample, point, true jobs, the scheduler's view, the random offsets' uniforms) of each sample at each
    of ``points`` (as ``mapping._task``), the chunk's jobs drawn at once."""
    block = _block(settings, points, samples.start, samples.stop)
    for sample in samples:
        raw = block.raw(sample)
        normals = block.normals[sample - block.start]
        for point in points:
            yield sample, point, raw, scheduler_view(raw, point.error, normals), block.uniforms(sample)


def _block(settings: dict, points: tuple[MapPoint, ...], start: int, stop: int):
    """The draws of samples ``[start, stop)`` of points that draw alike, all at once."""
    return point_block(settings["seed"], points[0], start, stop, settings["period_range"], settings["zoo_link_mbps"])


def _reference(settings, points, samples, policies):
    for _, point, raw, view, uniforms in _combinations(settings, points, samples):
        yield point, evaluate_point(raw, view, point.quantum_ms, policies, PolicyKnobs(realign_s=point.realign_s),
                                    uniforms)


def _fast(settings, points, samples, policies):
    """Every simulation of the chunk in one compiled batch (identical ones once), then the results."""
    batch = fastfluid.Batch()
    pending = []
    last = jobs = horizon_ms = None
    for sample, point, raw, view, uniforms in _combinations(settings, points, samples):
        if sample != last:  # the true jobs are the sample's at every point
            last, jobs = sample, true_jobs(raw)
            horizon_ms = fluid.default_horizon_ms(jobs, MAX_HORIZON_ITERATIONS)
        q, knobs = point.quantum_ms, PolicyKnobs(realign_s=point.realign_s)
        grid, cache, slots = on_grid(view, q), {}, {}
        for arm, policy, seed in point_arms(policies, uniforms, len(raw)):
            try:
                slots[arm] = batch.add(policy, grid, jobs, q, knobs, cache, seed, horizon_ms=horizon_ms)
            except ValueError:  # the policy cannot schedule these jobs (align beyond its padding limit)
                slots[arm] = None
        pending.append((point, raw, cache[tuple(grid)], slots))
    batch.run()
    for point, raw, schedule, slots in pending:
        thr, unsimulated = batch_throughputs(batch, slots)
        yield point, combine_point(thr, schedule, raw, policies, unsimulated)


def run_map_cells(settings: dict, workers: int = 1, progress: bool = False,
                  chunk_samples: int = CHUNK_SAMPLES, scheduler_address: str | None = None) -> dict[MapPoint, MapCell]:
    """Every distinct point of the settings' panels (as ``mapping.run_map``), ``samples`` combinations
    each, counted into one cell per point (not depending on ``workers``, nor on ``chunk_samples`` but for the
    means' rounding; the same on the dask cluster at ``scheduler_address``)."""
    points = list(dict.fromkeys(p for _, _, p in panel_points(settings["panels"], settings["default"])))
    groups: dict[tuple, list[MapPoint]] = {}
    for p in points:
        groups.setdefault(draws_alike(p), []).append(p)
    # the groups interleaved, so that the costly ones (the zoo's, four jobs') do not all come last
    tasks = [(settings, tuple(group), a, b) for a, b in sample_ranges(settings["samples"], chunk_samples)
             for group in groups.values()]
    out = {p: MapCell() for p in points}
    for cells in run_chunks(map_chunk, tasks, workers, "map", progress,
                            [(b - a) * len(group) for _, group, a, b in tasks], scheduler_address):
        for point, cell in cells.items():
            out[point] = out[point].merge(cell)
    return out


def map_cells(settings: dict, cells: dict[MapPoint, MapCell]) -> list[dict]:
    """One cell per panel × value × policy, as ``mapping.map_cells`` gives them: against ``none`` and
    against random offsets, with the point's noise floor, feasible fraction and realised harmonic share."""
    out = []
    for factor, value, point in panel_points(settings["panels"], settings["default"]):
        c = cells[point]
        noise = c.noise.stats()
        common = {"factor": factor, "value": format_value(factor, value),
                  "feasible_fraction": c.feasible / c.combinations,
                  "harmonic_share": c.harmonic_share_sum / c.combinations,
                  "noise_helps": noise["helps"], "noise_hurts": noise["hurts"]}
        for policy in settings["policies"]:
            out.append({**common, "policy": policy, "unsimulated": c.unsimulated.get(policy, 0),
                        "vs_none": c.vs_none.get(policy, Tally()).stats(),
                        "vs_random": c.vs_random.get(policy, Tally()).stats()})
    return out
