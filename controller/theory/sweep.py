"""Over many random job combinations, how often does a static shift help? (``shiftbed sweep``)

Sampling model (one combination, drawn a block of samples at a time by ``controller/theory/draws.py``):
each of N jobs gets a true period drawn uniformly from the integers in [LO, HI] ms and a communication
fraction uniform in [lo, hi]; its true burst is ``fraction × period`` (real-valued). The fluid
model runs these true jobs. Only the schedule sees the grid: at each quantum Q
the period is rounded to the nearest multiple of Q (at least two quanta, so a
burst and a gap fit; this only matters for zoo jobs at coarse quanta) and the
burst rounded up to Q (capped at one quantum below the period). So a shift
computed on the grid drifts where the true periods are not commensurate. With ``--zoo`` each job is instead a random zoo
model with 2, 4 or 8 workers on ``--zoo-link-mbps`` links (``controller/theory/zoo.py``).
The same raw combinations are evaluated at every quantum (a paired design).

Per combination: each policy's schedule (``policies.policy_schedule``: exact;
the heuristic if the instance is beyond it) and the fluid model
(``controller.theory.fluid``) over a horizon (``--horizon-s``; default the
steady-state rule capped at :data:`MAX_HORIZON_ITERATIONS` periods of the
longest job) under ``none`` and ``shift``. ``shift_helps``: the best static
shift raises the normalised throughput (mean over jobs of solo period /
realised iteration time) by more than 1 % over ``none``. ``--policy P,Q,...``
(built-ins or ones registered by ``--policy-file``) also simulates each and
reports it two-sided (columns ``throughput_<p>``, ``gain_<p>``; the first one
also in ``throughput_policy``, ``policy_gain``, ``policy_helps``; with the
default ``P = shift`` they repeat the shift columns). A policy that cannot
schedule a combination (``align`` beyond its padding limit) is left out of its
fractions there.

Two-sided, with intervals. With the threshold ``θ`` (``--threshold-pct``,
default 1 %) every simulated policy's gain over ``none`` is classed as
*helps* (> θ), *hurts* (< −θ) or *neutral*; each fraction carries a 95 %
Wilson score interval. The ``noise_floor`` classes a sham gain the same way:
the baseline against itself, i.e. the jobs with one set of random start offsets
against the same jobs with another (policy ``random`` twice, offsets drawn per
combination). Nothing is scheduled in either arm, so whatever it "helps"
or "hurts" is what start offsets and the finite horizon alone move the
fluid model's throughput by; a policy's fraction is worth reading only above
it. ``none`` against itself would be no test: it has no randomness and would
always report zero.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np

from controller.theory import draws, fluid
from controller.theory.chunks import run_chunks
from controller.theory.floatsum import left_to_right_sum
from controller.theory.policies import PolicyKnobs, load_from_environment
from controller.theory.schedule import JobTiming, comm_quanta, period_quanta
from controller.theory.tally import mean_ci95, wilson_interval  # noqa: F401  (the sweep's API)

HELPS_THRESHOLD = 0.01
# The default horizon's cap, in periods of the longest job (fluid.default_horizon_ms allows 400). The
# default `shiftbed sweep` on one core (2026-12-03): 40 iterations per job took 14 s; a cap of 40 periods
# 15 s with a noise floor of 10.6 % helps / 10.3 % hurts; 100 periods 34 s with 4.7 % / 5.6 %.
MAX_HORIZON_ITERATIONS = 100
HELP = (
    "sample random job combinations and report how often a zero-overlap schedule exists "
    "(feasible_fraction) and how often shift helps (shift_helps_fraction). shift_helps: in the "
    "fluid model, the optimal static shift raises the normalised throughput (mean over jobs of "
    "solo period / realised iteration time) by more than 1 % over `none` (all first bursts at t=0). "
    "With --threshold-pct each policy is also reported two-sided (helps / neutral / hurts, with 95 % "
    "Wilson intervals) next to a noise floor: random start offsets against other random start offsets."
)


@dataclass(frozen=True)
class Combination:
    """One evaluated combination: a row of the CSV."""

    n_jobs: int
    quantum_ms: float
    sample: int
    periods_ms: str
    comms_ms: str
    hyperperiod_ms: float
    feasible: bool
    method: str
    overlap_fraction: float
    throughput_none: float
    throughput_shift: float
    shift_gain: float
    shift_helps: bool
    policy: str = "shift"
    throughput_policy: float = math.nan
    policy_gain: float = math.nan
    policy_helps: bool = False
    shift_hurts: bool = False
    policy_hurts: bool = False
    throughput_sham: float = math.nan
    sham_gain: float = math.nan
    per_policy: dict = field(default_factory=dict)  # throughput_<p>, gain_<p> (CSV columns)
    unsimulated: str = ""  # the arms the model could not simulate, ";"-separated (their throughput: NaN)


# ---------------------------------------------------------------- sampling and evaluation


def sample_raw(seed: int, n_jobs: int, sample: int, period_range: tuple[int, int],
               frac_range: tuple[float, float], use_zoo: bool, zoo_link_mbps: float,
               mix: float | None = None) -> list[tuple[float, float]]:
    """Raw (period_ms, comm fraction) of one combination; deterministic in (seed, n, sample, mix)
    (``controller/theory/draws.py``, which draws a chunk's at once)."""
    return sample_block(seed, n_jobs, sample, sample + 1, period_range, frac_range, use_zoo, zoo_link_mbps,
                        mix).raw(sample)


def sample_block(seed: int, n_jobs: int, start: int, stop: int, period_range: tuple[int, int],
                 frac_range: tuple[float, float], use_zoo: bool, zoo_link_mbps: float,
                 mix: float | None = None) -> draws.Block:
    """The sweep's combinations ``[start, stop)``: their jobs and their random offsets' uniforms
    (``mix``: the share of harmonic jobs, the map's job-mix knob; None: unconstrained)."""
    return draws.draw(seed, n_jobs, start, stop, period_range, frac_range, "zoo" if use_zoo else "uniform",
                      zoo_link_mbps, mix)


def on_grid(raw: list[tuple[float, float]], quantum_ms: float) -> list[JobTiming]:
    """The sampling model's rounding: period to nearest, comm up, comm below the period (one combination:
    :func:`grid_quanta`'s rounding by the scalar functions, without building arrays)."""
    out = []
    for i, (period_ms, frac) in enumerate(raw):
        t = max(2, period_quanta(period_ms, quantum_ms))  # room for a gap
        c = min(comm_quanta(frac * t * quantum_ms, quantum_ms), t - 1)
        out.append(JobTiming(f"j{i}", t * quantum_ms, c * quantum_ms))
    return out


def grid_quanta(periods_ms: np.ndarray, fracs: np.ndarray, quantum_ms: float) -> tuple[np.ndarray, np.ndarray]:
    """:func:`on_grid` of many combinations at once, in quanta: ``(periods, comms)`` as integer arrays of the
    shape of ``periods_ms`` (the raw periods) and ``fracs`` (their communication fractions). The rounding is
    :func:`schedule.period_quanta`'s and :func:`schedule.comm_quanta`'s, element by element."""
    if not (np.isfinite(periods_ms).all() and math.isfinite(quantum_ms)) or quantum_ms <= 0:
        raise ValueError(f"need finite times and a positive quantum, got {periods_ms!r}, {quantum_ms!r}")
    t = np.maximum(2, np.maximum(1, np.floor(periods_ms / quantum_ms + 0.5))).astype(np.int64)  # room for a gap
    x = fracs * t * quantum_ms / quantum_ms
    c = np.minimum(np.maximum(1, np.ceil(x - 1e-9 * np.maximum(1.0, x))).astype(np.int64), t - 1)
    return t, c


def true_jobs(raw: list[tuple[float, float]]) -> list[fluid.FluidJob]:
    """The jobs as they are: the sampled period and ``comm = fraction × period``, not rounded."""
    return [fluid.FluidJob(f"j{i}", period_ms, frac * period_ms) for i, (period_ms, frac) in enumerate(raw)]


def evaluate(raw: list[tuple[float, float]], quantum_ms: float, policies: tuple[str, ...] = ("shift",),
             threshold: float = HELPS_THRESHOLD, uniforms: np.ndarray | None = None, iterations: int | None = None,
             horizon_ms: float | None = None, knobs: PolicyKnobs | None = None) -> dict:
    """Schedules on the grid + the fluid model of the true jobs for one combination: ``none``,
    ``shift``, every policy of ``policies`` (NaN where it cannot schedule the jobs) and the sham.
    ``uniforms``: the random-offset arms' draws (``draws.Block.uniforms``; default :func:`default_uniforms`).

    ``iterations``: that many per job; else ``horizon_ms`` (default: the steady-state rule of
    :func:`fluid.default_horizon_ms`, at most :data:`MAX_HORIZON_ITERATIONS` periods of the longest job).
    """
    grid, jobs = on_grid(raw, quantum_ms), true_jobs(raw)
    length = run_length(jobs, iterations, horizon_ms)
    cache: dict = {}

    def throughput(policy: str, seed: int = 0) -> float:
        return fluid.predict_policy(policy, grid, jobs, quantum_ms, knobs, cache, seed=seed,
                                    **length)[1].normalised_throughput

    thr, unsimulated = arm_throughputs(arms(policies, uniforms, len(raw)), throughput)
    return combine(thr, cache[tuple(grid)], grid, policies, threshold, unsimulated)


def arm_throughputs(arms_: Iterable[tuple], throughput: Callable[..., float]) -> tuple[dict[str, float], list[str]]:
    """``throughput(*rest)`` of every ``(arm, *rest)``: NaN where the policy cannot schedule the jobs
    (ValueError: align beyond its padding limit, say), NaN and named where the model could not
    simulate them (``fluid.Unsimulated``); and the names of those arms, to be counted, never dropped."""
    thr, unsimulated = {}, []
    for arm, *rest in arms_:
        try:
            thr[arm] = throughput(*rest)
        except ValueError:
            thr[arm] = math.nan
        except fluid.Unsimulated:
            thr[arm] = math.nan
            unsimulated.append(arm)
    return thr, unsimulated


def run_length(jobs: Sequence[fluid.FluidJob], iterations: int | None, horizon_ms: float | None) -> dict:
    """``{"iterations": n}`` or ``{"horizon_ms": h}``, the default horizon capped at
    :data:`MAX_HORIZON_ITERATIONS` periods of the longest job."""
    return {"iterations": iterations} if iterations else {
        "horizon_ms": horizon_ms or fluid.default_horizon_ms(jobs, MAX_HORIZON_ITERATIONS)}


def arms(policies: Sequence[str], uniforms: np.ndarray | None, n_jobs: int) -> list[tuple[str, str, object]]:
    """(arm, policy, seed or generator) of every simulation one combination needs: ``none``, ``shift``,
    each policy, and the sham's two arms (``random`` with two independent sets of offsets); each
    random-offset arm draws from its row of ``uniforms`` (``draws.RANDOM_ARMS``)."""
    names = tuple(dict.fromkeys(("none", "shift", *policies)))
    drawn = random_arms(uniforms, n_jobs)
    return [*((p, p, drawn["random"] if p == "random" else 0) for p in names),
            ("sham_base", "random", drawn["sham_base"]), ("sham", "random", drawn["sham"])]


def random_arms(uniforms: np.ndarray | None, n_jobs: int) -> dict[str, draws.Uniforms]:
    """A fresh generator for each random-offset arm (``draws.RANDOM_ARMS``) from its uniforms."""
    u = default_uniforms(n_jobs) if uniforms is None else uniforms
    return {arm: draws.Uniforms(row) for arm, row in zip(draws.RANDOM_ARMS, u, strict=True)}


def default_uniforms(n_jobs: int) -> np.ndarray:
    """The random-offset arms' uniforms where none are given: the first of seed 0's."""
    return np.random.default_rng(0).random((len(draws.RANDOM_ARMS), n_jobs))


def combine(thr: dict[str, float], schedule, grid: list[JobTiming], policies: Sequence[str],
            threshold: float, unsimulated: Sequence[str] = ()) -> dict:
    """One combination's row from its arms' normalised throughputs (:func:`arms`) and its grid schedule;
    ``unsimulated``: the arms the model could not simulate (:func:`arm_throughputs`)."""
    names = tuple(dict.fromkeys(("none", "shift", *policies)))
    none, shift, first = thr["none"], thr["shift"], policies[0]
    gain, other_gain = shift / none - 1, thr[first] / none - 1
    per_policy = {}
    for p in names[1:]:
        per_policy[f"throughput_{p}"], per_policy[f"gain_{p}"] = thr[p], thr[p] / none - 1
    return {"periods_ms": ";".join(f"{j.period_ms:g}" for j in grid), "comms_ms": ";".join(f"{j.comm_ms:g}" for j in grid),
            "hyperperiod_ms": schedule.hyperperiod_ms, "feasible": schedule.feasible, "method": schedule.method,
            "overlap_fraction": schedule.overlap_fraction, "throughput_none": none,
            "throughput_shift": shift, "shift_gain": gain, "shift_helps": gain > threshold,
            "policy": first, "throughput_policy": thr[first], "policy_gain": other_gain,
            "policy_helps": other_gain > threshold, "shift_hurts": gain < -threshold,
            "policy_hurts": other_gain < -threshold, "throughput_sham": thr["sham"],
            "sham_gain": thr["sham"] / thr["sham_base"] - 1, "per_policy": per_policy,
            "unsimulated": ";".join(unsimulated)}


def _task(args) -> list[Combination]:
    settings, n, sample = args
    load_from_environment()  # a worker process knows the --policy-file policies too (no-op if loaded)
    block = sample_block(settings["seed"], n, sample, sample + 1, settings["period_range"], settings["frac_range"],
                         settings["zoo"], settings["zoo_link_mbps"], settings.get("mix"))
    raw = block.raw(sample)
    policies = tuple(settings.get("policies") or (settings.get("policy", "shift"),))
    knobs = PolicyKnobs(realign_s=settings.get("realign_s"))
    rows = []
    for q in settings["quanta"]:
        r = evaluate(raw, q, policies, settings.get("threshold", HELPS_THRESHOLD), block.uniforms(sample),
                     settings.get("iterations"), settings.get("horizon_ms"), knobs)
        rows.append(Combination(n, q, sample, **r))
    return rows


def in_parallel(fn, tasks: list, workers: int, label: str, progress: bool,
                scheduler_address: str | None = None) -> Iterator:
    """``fn`` over ``tasks`` (one combination each), results in task order, on ``workers`` processes (1:
    here) or the dask cluster at ``scheduler_address``, with a progress bar on stderr when ``progress``
    (:func:`chunks.run_chunks`)."""
    return run_chunks(fn, tasks, workers, label, progress, scheduler_address=scheduler_address)


def run_sweep(settings: dict, workers: int = 1, progress: bool = False,
              scheduler_address: str | None = None) -> list[Combination]:
    """Every combination of the settings (keys: seed, jobs, samples, period_range, frac_range,
    quanta, zoo, zoo_link_mbps, iterations), in a deterministic order, on the backend
    :func:`parallel.run_tasks` picks for ``workers`` and ``scheduler_address``."""
    tasks = [(settings, n, k) for n in settings["jobs"] for k in range(settings["samples"])]
    return [row for chunk in in_parallel(_task, tasks, workers, "sweep", progress, scheduler_address)
            for row in chunk]


def random_offsets_baseline(jobs: Sequence[fluid.FluidJob], draws: int = 20, seed: int = 0,
                            iterations: int | None = None, horizon_ms: float | None = None,
                            links=None, sharing: str = "fair", simulate=fluid.simulate) -> dict:
    """The baseline as the jobs would meet it unscheduled: each job's first burst at a start offset
    uniform in ``[0, its period)``, free running, sharing as ``sharing`` says (over the fabric's
    ``links`` where given, ``fluid.simulate``); over ``draws`` draws, the mean normalised throughput
    and each job's mean iteration time, with 95 % t intervals. ``simulate``: the model that runs them
    (``patternfluid.simulate_patterns`` for pattern jobs, over a horizon)."""
    rng = random.Random(seed)
    length = {"iterations": iterations} if iterations is not None else {
        "horizon_ms": horizon_ms or fluid.default_horizon_ms(jobs)}
    thr, per_job = [], {j.name: [] for j in jobs}
    for _ in range(draws):
        offsets = {j.name: rng.uniform(0.0, j.period_ms) for j in jobs}
        out = simulate(jobs, offsets, links=links, sharing=sharing, **length)
        thr.append(left_to_right_sum(j.period_ms / out[j.name].mean_iteration_ms for j in jobs) / len(jobs))
        for j in jobs:
            per_job[j.name].append(out[j.name].mean_iteration_ms)
    return {"normalised_throughput": mean_ci95(thr), "draws": draws,
            "jobs": {name: mean_ci95(xs) for name, xs in per_job.items()}}


def unsimulated_counts(rows: Iterable[str]) -> dict[str, int]:
    """Per arm, how many combinations the model could not simulate it in (``Combination.unsimulated`` of each)."""
    out: dict[str, int] = {}
    for row in rows:
        for arm in filter(None, row.split(";")):
            out[arm] = out.get(arm, 0) + 1
    return out


def unsimulated_line(counts: dict[str, int], combinations: int) -> str:
    """``sweep``'s and ``map``'s line on the arms the model could not simulate (left out of their figures)."""
    return ("unsimulated (the fluid model could not simulate them; left out of the figures above): "
            + ", ".join(f"{arm} in {k} of {combinations} combinations" for arm, k in counts.items()))


def two_sided(gains: list[float], threshold: float) -> dict:
    """Fractions of gains above ``threshold``, below ``-threshold`` and between, with 95 % Wilson intervals."""
    n = len(gains)
    counts = {"helps": sum(g > threshold for g in gains), "hurts": sum(g < -threshold for g in gains)}
    counts["neutral"] = n - counts["helps"] - counts["hurts"]
    out = {f"{k}_fraction": counts[k] / n if n else math.nan for k in ("helps", "neutral", "hurts")}
    out["ci95"] = {k: [round(x, 4) for x in wilson_interval(counts[k], n)] for k in ("helps", "neutral", "hurts")}
    return out


def summarise(rows: list[Combination], threshold: float = HELPS_THRESHOLD) -> dict:
    """Overall fractions and the same broken down by number of jobs, quantum, and both."""

    def fractions(sel: list[Combination]) -> dict:
        n = len(sel)
        policies = {"shift": two_sided([r.shift_gain for r in sel], threshold)}
        for key in dict.fromkeys(k for r in sel for k in r.per_policy if k.startswith("gain_")):
            if key != "gain_shift":
                policies[key[5:]] = two_sided([r.per_policy[key] for r in sel
                                               if math.isfinite(r.per_policy.get(key, math.nan))], threshold)
        return {"combinations": n,
                "unsimulated": unsimulated_counts(r.unsimulated for r in sel),
                "feasible_fraction": sum(r.feasible for r in sel) / n if n else math.nan,
                "shift_helps_fraction": sum(r.shift_helps for r in sel) / n if n else math.nan,
                "policy_helps_fraction": sum(r.policy_helps for r in sel) / n if n else math.nan,
                "heuristic_fraction": sum(r.method == "heuristic" for r in sel) / n if n else math.nan,
                "policies": policies,
                "noise_floor": {"sham": "random start offsets against other random start offsets",
                                **two_sided([r.sham_gain for r in sel], threshold)}}

    jobs = sorted({r.n_jobs for r in rows})
    quanta = sorted({r.quantum_ms for r in rows})
    return {
        **fractions(rows),
        "by_jobs": {str(n): fractions([r for r in rows if r.n_jobs == n]) for n in jobs},
        "by_quantum_ms": {f"{q:g}": fractions([r for r in rows if r.quantum_ms == q]) for q in quanta},
        "by_jobs_and_quantum": [{"n_jobs": n, "quantum_ms": q,
                                 **fractions([r for r in rows if r.n_jobs == n and r.quantum_ms == q])}
                                for n in jobs for q in quanta],
    }
