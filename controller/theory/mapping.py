"""Which policy wins, and by how much, as period precision, horizon, load and job mix change (``shiftbed map``).

A one-factor-at-a-time map around a default point (:data:`DEFAULT_POINT`: 2
jobs, quantum 1 ms, no measurement error, no re-alignment, medium
communication share, no harmonic jobs, uniform periods). Each panel varies one
factor (:data:`FACTORS`) and keeps the others at the default; every point is
``samples`` random combinations, the same ones at every point that draws jobs
the same way (quantum, error and re-alignment are paired with the default).

One combination is evaluated as in ``controller/theory/sweep.py`` (the same
grid rounding and true jobs, the same horizon rule), with one addition: the
scheduler sees each true period with a relative measurement error ``ε``
(its view is ``true × (1 + ε·z)``, ``z`` standard normal, then rounded to the
grid; the burst it sees is the true one), while the fluid model runs the true
jobs. Every policy's gain is its normalised throughput over ``none``'s - 1 and
over that of ``random`` start offsets - 1; the noise floor is ``random``
against ``random`` under another seed (as in the sweep).

Job mix: a job is *harmonic* when its period is identical to, or 2 or 3 times,
another job's. :func:`sample_mixed` draws combinations in which a given share
of the jobs is harmonic; over a cell's samples the share holds exactly (each
combination has ``floor`` or ``ceil`` of ``share × n`` harmonic jobs, spread so
that their sum is ``floor(samples × share × n)``). The zoo workload draws as
the sweep does (its comm share is the models'; the mix factor does not apply
to it, and the share it happens to have is reported).
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass, fields, replace
from fractions import Fraction
from functools import cache

import numpy as np

from controller.theory import fluid
from controller.theory.policies import PolicyKnobs, get_policy
from controller.theory.sweep import (
    HELPS_THRESHOLD,
    MAX_HORIZON_ITERATIONS,
    arm_throughputs,
    in_parallel,
    mean_ci95,
    on_grid,
    sample_raw,
    true_jobs,
    two_sided,
)

MAP_POLICIES = ("shift", "gate", "guard", "align", "priority", "mltcp", "random")
COMM_SHARES = {"light": (0.05, 0.15), "medium": (0.15, 0.30), "heavy": (0.30, 0.50)}
WORKLOADS = ("uniform", "zoo")
HARMONIC_MULTIPLES = (1, 2, 3)  # a period identical to, or this many times, another job's
PERIOD_RANGE_MS = (100, 1000)
PUBLISHED_HELPS = 0.27  # the published analysis: static shifting does not help in ~73 % of scenarios
_MAX_DRAWS = 10_000  # redraws of a combination whose harmonic count came out wrong (a guard, never reached)


@dataclass(frozen=True)
class MapPoint:
    """One point of the map: how the jobs are drawn and how precisely the scheduler knows them."""

    n_jobs: int = 2
    quantum_ms: float = 1.0
    error: float = 0.0  # relative standard deviation of the scheduler's view of each period
    realign_s: float | None = None
    comm: str = "medium"
    mix: float = 0.0  # share of harmonic jobs (uniform workload)
    workload: str = "uniform"

    def label(self, factor: str) -> str:
        """This point's value of ``factor`` as the table and the CSV show it."""
        return format_value(factor, getattr(self, factor))


DEFAULT_POINT = MapPoint()
FACTORS: dict[str, tuple] = {
    "quantum_ms": (1.0, 10.0, 50.0, 100.0),
    "error": (0.0, 0.005, 0.02),
    "realign_s": (None, 10.0, 2.0),
    "comm": ("light", "medium", "heavy"),
    "n_jobs": (2, 3, 4),
    "mix": (0.0, 0.5, 1.0),
    "workload": WORKLOADS,
}


def format_value(factor: str, value) -> str:
    """A factor's value as text (``parse_value`` reads it back)."""
    if value is None:
        return "never"
    if factor == "error":
        return f"{100 * value:g}%"
    return value if isinstance(value, str) else f"{value:g}"


def parse_value(factor: str, text: str):
    """One value of ``factor`` from text; ValueError (one line) if it is not one."""
    text = text.strip()
    if factor not in FACTORS:
        raise ValueError(f"unknown factor {factor!r}; known: {', '.join(FACTORS)}")
    if factor == "comm":
        if text not in COMM_SHARES:
            raise ValueError(f"comm: one of {', '.join(COMM_SHARES)}, got {text!r}")
        return text
    if factor == "workload":
        if text not in WORKLOADS:
            raise ValueError(f"workload: one of {', '.join(WORKLOADS)}, got {text!r}")
        return text
    if factor == "realign_s" and text.lower() in ("none", "never"):
        return None
    try:
        value = float(text.rstrip("%")) / (100 if text.endswith("%") else 1)
    except ValueError:
        raise ValueError(f"{factor}: expected a number, got {text!r}") from None
    checks = {"n_jobs": (value == int(value) and 2 <= value <= 6, "a whole number from 2 to 6") if math.isfinite(value)
              else (False, ""),
              "quantum_ms": (0 < value <= PERIOD_RANGE_MS[0], f"in (0, {PERIOD_RANGE_MS[0]}] ms"),
              "error": (0 <= value <= 0.2, "from 0 to 20 %"),
              "realign_s": (0 < value < math.inf, "positive (or never)"),
              "mix": (0 <= value <= 1, "from 0 to 1")}
    ok, need = checks[factor]
    if not ok:
        raise ValueError(f"{factor}: need {need}, got {text!r}")
    return int(value) if factor == "n_jobs" else value


# ---------------------------------------------------------------- sampling


def harmonic_jobs(periods_ms: Sequence[float]) -> list[bool]:
    """For each job: is its period identical to, or 2 or 3 times, another job's?"""
    def related(a: float, b: float) -> bool:
        return any(math.isclose(a, k * b, rel_tol=1e-9) for k in HARMONIC_MULTIPLES)

    return [any(related(p, q) for j, q in enumerate(periods_ms) if j != i) for i, p in enumerate(periods_ms)]


def harmonic_count(n_jobs: int, share: float, sample: int) -> int:
    """How many of the ``n_jobs`` of combination ``sample`` are harmonic: ``floor`` or ``ceil`` of
    ``share × n_jobs``, spread over the samples so that samples 0..K-1 hold ``floor(K × share × n)``."""
    x = _harmonic_rate(share) * n_jobs
    return math.floor((sample + 1) * x) - math.floor(sample * x)


@cache
def _harmonic_rate(share: float) -> Fraction:
    """``share`` as the fraction :func:`harmonic_count` spreads (a map point asks for it every sample)."""
    return Fraction(share).limit_denominator(10_000)


def sample_mixed(rng: np.random.Generator, n_jobs: int, harmonic: int, period_range: tuple[int, int],
                 frac_range: tuple[float, float]) -> list[tuple[float, float]]:
    """(period_ms, comm fraction) of ``n_jobs`` jobs of which exactly ``harmonic`` are harmonic.

    All harmonic (``harmonic == n_jobs``): a root period, a twin of it, and the
    others 1, 2 or 3 times it. Otherwise the free jobs are drawn uniformly
    (the first from the lower half of the range, so that a double fits) and
    each harmonic job is 2 or 3 times a free job; a draw in which the count
    comes out otherwise (free jobs related by chance) is drawn again.
    """
    if not 0 <= harmonic <= n_jobs:
        raise ValueError(f"harmonic jobs: need 0..{n_jobs}, got {harmonic}")
    lo, hi = period_range
    if 2 * lo > hi and harmonic:
        raise ValueError(f"period range {lo}:{hi} has no room for a period and its double")
    for _ in range(_MAX_DRAWS):
        periods = _draw_periods(rng, n_jobs, harmonic, lo, hi)
        if sum(harmonic_jobs(periods)) == harmonic:
            order = rng.permutation(n_jobs)  # harmonic jobs are not always the last ones
            return [(periods[k], float(rng.uniform(*frac_range))) for k in order]
    raise RuntimeError(f"could not draw {n_jobs} jobs with {harmonic} harmonic in {period_range}")


def _draw_periods(rng: np.random.Generator, n_jobs: int, harmonic: int, lo: int, hi: int) -> list[float]:
    def fitting(base: int) -> list[int]:
        return [k for k in HARMONIC_MULTIPLES if k > 1 and k * base <= hi]

    if harmonic == n_jobs:
        root = int(rng.integers(lo, hi + 1))
        rest = [root * int(rng.choice([k for k in HARMONIC_MULTIPLES if k * root <= hi]))
                for _ in range(n_jobs - 2)]
        return [float(root), float(root), *map(float, rest)]
    free = n_jobs - harmonic
    bases = [int(rng.integers(lo, (hi if not harmonic else hi // 2) + 1))]
    bases += [int(rng.integers(lo, hi + 1)) for _ in range(free - 1)]
    periods = list(bases)
    for _ in range(harmonic):
        base = bases[int(rng.choice([i for i, b in enumerate(bases) if fitting(b)]))]
        periods.append(base * int(rng.choice(fitting(base))))
    return [float(p) for p in periods]


def sample_point(seed: int, point: MapPoint, sample: int, period_range: tuple[int, int] = PERIOD_RANGE_MS,
                 zoo_link_mbps: float = 10_000.0) -> list[tuple[float, float]]:
    """Raw (period_ms, comm fraction) of combination ``sample`` at ``point``; deterministic, and the same
    at every point that draws jobs alike (same number of jobs, comm share, mix and workload)."""
    frac_range = COMM_SHARES[point.comm]
    if point.workload == "zoo":
        return sample_raw(seed, point.n_jobs, sample, period_range, frac_range, True, zoo_link_mbps)
    comm = list(COMM_SHARES).index(point.comm)
    rng = np.random.default_rng([seed, point.n_jobs, sample, comm, round(1000 * point.mix)])
    return sample_mixed(rng, point.n_jobs, harmonic_count(point.n_jobs, point.mix, sample), period_range, frac_range)


def error_normals(seed: int, n_jobs: int, sample: int) -> list[float]:
    """The standard normals behind combination ``sample``'s measurement errors (shared by every ε)."""
    return [float(z) for z in np.random.default_rng([seed, n_jobs, sample, 1_000_003]).standard_normal(n_jobs)]


def scheduler_view(raw: Sequence[tuple[float, float]], error: float,
                   normals: Sequence[float]) -> list[tuple[float, float]]:
    """What the scheduler measures: each period × (1 + error × z), the same burst (its fraction of the
    period it sees). ``on_grid`` then rounds it; the true jobs stay ``raw``."""
    out = []
    for (period_ms, frac), z in zip(raw, normals, strict=True):
        seen = period_ms * max(0.5, 1.0 + error * z)  # a view at least half the truth (a > 25 σ error at 2 %)
        out.append((seen, frac * period_ms / seen))
    return out


# ---------------------------------------------------------------- evaluation


def evaluate_point(raw: Sequence[tuple[float, float]], view: Sequence[tuple[float, float]], quantum_ms: float,
                   policies: Sequence[str] = MAP_POLICIES, knobs: PolicyKnobs | None = None,
                   sham_seed: int | str = 0) -> dict:
    """Every policy on the true jobs ``raw`` with its schedule from the scheduler's ``view`` on the grid.

    Returns the throughputs (``none``, each policy, NaN where it cannot schedule the
    jobs), each policy's gain over ``none`` and over random offsets, the sham gain
    (random offsets against other random offsets), feasibility and the harmonic share.
    """
    grid, jobs = on_grid(list(view), quantum_ms), true_jobs(list(raw))
    horizon_ms = fluid.default_horizon_ms(jobs, MAX_HORIZON_ITERATIONS)
    cache: dict = {}

    def throughput(policy: str, seed: int = 0) -> float:
        return fluid.predict_policy(policy, grid, jobs, quantum_ms, knobs, cache, seed=seed,
                                    horizon_ms=horizon_ms)[1].normalised_throughput

    thr, unsimulated = arm_throughputs(point_arms(policies, sham_seed), throughput)
    return combine_point(thr, cache[tuple(grid)], raw, policies, unsimulated)


def point_arms(policies: Sequence[str], sham_seed: int | str) -> list[tuple[str, str, int]]:
    """(arm, policy, seed) of every simulation one combination needs: ``none``, ``random`` offsets, each
    other policy, and the sham's second ``random`` arm."""
    base_seed, sham_seed2 = random.Random(sham_seed).sample(range(1 << 30), 2)  # as the sweep's sham
    return [("none", "none", 0), ("random", "random", base_seed),
            *((p, p, 0) for p in policies if p != "random"), ("sham", "random", sham_seed2)]


def combine_point(thr: dict[str, float], schedule, raw: Sequence[tuple[float, float]],
                  policies: Sequence[str], unsimulated: Sequence[str] = ()) -> dict:
    """One combination's result from its arms' throughputs (:func:`point_arms`) and the grid's own schedule
    (every policy that keeps the timings shares it); ``unsimulated``: the arms the model could not
    simulate (``sweep.arm_throughputs``)."""
    none, rand, sham = thr["none"], thr["random"], thr["sham"]
    mine = {p: thr[p] for p in policies}
    return {"throughput_none": none, "throughput_random": rand,
            "throughput": mine,
            "gain": {p: mine[p] / none - 1 for p in policies},
            "gain_vs_random": {p: (sham if p == "random" else mine[p]) / rand - 1 for p in policies},
            "sham_gain": sham / rand - 1, "feasible": schedule.feasible,
            "harmonic_share": sum(harmonic_jobs([p for p, _ in raw])) / len(raw),
            "unsimulated": list(unsimulated)}


def _task(args) -> dict:
    settings, point, sample = args
    seed = settings["seed"]
    raw = sample_point(seed, point, sample, settings["period_range"], settings["zoo_link_mbps"])
    view = scheduler_view(raw, point.error, error_normals(seed, point.n_jobs, sample))
    sham_seed = f"{seed}/{point.n_jobs}/{sample}/{point.quantum_ms:g}"
    return evaluate_point(raw, view, point.quantum_ms, settings["policies"],
                          PolicyKnobs(realign_s=point.realign_s), sham_seed)


def panel_points(panels: dict[str, Sequence], default: MapPoint = DEFAULT_POINT) -> list[tuple[str, object, MapPoint]]:
    """(factor, value, point) of every panel, in order; a point shared by panels appears in each."""
    return [(factor, value, replace(default, **{factor: value})) for factor, values in panels.items()
            for value in values]


def run_map(settings: dict, workers: int = 1, progress: bool = False,
            scheduler_address: str | None = None) -> dict[MapPoint, list[dict]]:
    """Every distinct point of the settings' panels (keys: seed, samples, panels, default, policies,
    period_range, zoo_link_mbps), ``samples`` combinations each; results by point, in sample order.
    ``workers`` and ``scheduler_address``: where they run (``parallel.run_tasks``)."""
    points = list(dict.fromkeys(p for _, _, p in panel_points(settings["panels"], settings["default"])))
    tasks = [(settings, p, k) for p in points for k in range(settings["samples"])]

    out: dict[MapPoint, list[dict]] = {p: [] for p in points}
    results = in_parallel(_task, tasks, workers, "map", progress, scheduler_address)
    for (_, point, _), result in zip(tasks, results, strict=True):
        out[point].append(result)
    return out


# ---------------------------------------------------------------- summary


def _stats(gains: list[float], threshold: float) -> dict:
    """Two-sided fractions with Wilson intervals, and the mean gain with its 95 % t interval."""
    finite = [g for g in gains if math.isfinite(g)]
    if not finite:
        return {"n": 0, "helps": math.nan, "neutral": math.nan, "hurts": math.nan,
                "ci95": {k: [math.nan, math.nan] for k in ("helps", "neutral", "hurts")},
                "mean_gain": math.nan, "mean_gain_ci95": [math.nan, math.nan]}
    sided = two_sided(finite, threshold)
    mean, low, high = mean_ci95(finite)
    return {"n": len(finite), **{k: sided[f"{k}_fraction"] for k in ("helps", "neutral", "hurts")},
            "ci95": sided["ci95"], "mean_gain": mean, "mean_gain_ci95": [low, high]}


def map_cells(settings: dict, results: dict[MapPoint, list[dict]]) -> list[dict]:
    """One cell per panel × value × policy: against ``none`` and against random offsets, with the
    point's noise floor, feasible fraction and realised harmonic share."""
    threshold = settings.get("threshold", HELPS_THRESHOLD)
    cells = []
    for factor, value, point in panel_points(settings["panels"], settings["default"]):
        rows = results[point]
        noise = _stats([r["sham_gain"] for r in rows], threshold)
        common = {"factor": factor, "value": format_value(factor, value),
                  "feasible_fraction": sum(r["feasible"] for r in rows) / len(rows),
                  "harmonic_share": sum(r["harmonic_share"] for r in rows) / len(rows),
                  "noise_helps": noise["helps"], "noise_hurts": noise["hurts"]}
        for policy in settings["policies"]:
            cells.append({**common, "policy": policy,
                          "unsimulated": sum(policy in r.get("unsimulated", ()) for r in rows),
                          "vs_none": _stats([r["gain"][policy] for r in rows], threshold),
                          "vs_random": _stats([r["gain_vs_random"][policy] for r in rows], threshold)})
    return cells


def nearest_to_published(cells: list[dict], policy: str = "shift", target: float = PUBLISHED_HELPS) -> list[dict]:
    """The cells of ``policy`` whose helps-fraction (against ``none``) is closest to ``target``, closest
    first; each says whether its Wilson interval contains the target."""
    mine = [c for c in cells if c["policy"] == policy and c["vs_none"]["n"]]
    ranked = sorted(mine, key=lambda c: abs(c["vs_none"]["helps"] - target))
    return [{"factor": c["factor"], "value": c["value"], "helps": c["vs_none"]["helps"],
             "ci95": c["vs_none"]["ci95"]["helps"],
             "contains_target": c["vs_none"]["ci95"]["helps"][0] <= target <= c["vs_none"]["ci95"]["helps"][1]}
            for c in ranked]


def default_settings(samples: int = 100, seed: int = 0) -> dict:
    """The map as documented: every factor's values around :data:`DEFAULT_POINT`."""
    return {"seed": seed, "samples": samples, "panels": dict(FACTORS), "default": DEFAULT_POINT,
            "policies": MAP_POLICIES, "period_range": PERIOD_RANGE_MS, "zoo_link_mbps": 10_000.0,
            "threshold": HELPS_THRESHOLD}


def check_policies(policies: Sequence[str]) -> None:
    """UnknownPolicy for a name that is not registered."""
    for p in policies:
        get_policy(p)


POINT_FIELDS = tuple(f.name for f in fields(MapPoint))
