"""``summary.json`` as one typed record, shared by its writer and its readers.

The runner builds a :class:`SummaryRecord` (``scenarios/experiment/summary.py``)
and writes :meth:`SummaryRecord.to_dict`; :func:`scenarios.results.load_results`,
the report and ``shiftbed run``'s table and ``--json`` read it back with
:meth:`SummaryRecord.from_dict`. The keys and their meaning are in
docs/results.md.

Format 2 (:data:`FORMAT`) writes every key of the record, null where the run
did not get that far; the keys marked optional below are left out when the
run has no figure for them (a job without bursts on the link, a run without
``none`` to compare with, a run without a gated policy), as format 1 did.
Format 1 folders read too: a key they lack reads as None (``error_pct`` is
computed from the two means).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, is_dataclass
from typing import Any

FORMAT = "shiftbed-results/2"
FORMATS_READ = ("shiftbed-results/1", FORMAT)
OPTIONAL = {"optional": True}  # field metadata: left out of to_dict when None


def _number(value: Any) -> float | None:
    return None if value is None else float(value)


def _count(value: Any) -> int | None:
    return None if value is None else int(value)


def _flag(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


def _range(value: Any) -> tuple[float, float] | None:
    """A ``[low, high]`` pair of numbers, else None."""
    if isinstance(value, list | tuple) and len(value) == 2:
        low, high = _number(value[0]), _number(value[1])
        if low is not None and high is not None:
            return low, high
    return None


def _plain(value: Any) -> Any:
    """A field's value as JSON holds it: records as objects, tuples as lists."""
    if is_dataclass(value):
        return value.to_dict()
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def _as_dict(record) -> dict[str, Any]:
    """Every field in declaration order, the optional ones only when they hold something."""
    return {f.name: _plain(getattr(record, f.name)) for f in fields(record)
            if not (f.metadata.get("optional") and getattr(record, f.name) is None)}


@dataclass(frozen=True)
class JobSummary:
    """One job under one policy: what was measured, what the model predicted and from what."""

    iterations: int | None = None
    mean_iteration_ms: float | None = None
    median_iteration_ms: float | None = None  # what a gated job is held to
    iteration_se_ms: float | None = None  # the mean's standard error, batch means (None under 10 iterations)
    mean_comm_ms: float | None = None
    burst_lead_ms: float | None = field(default=None, metadata=OPTIONAL)  # median launch -> first data packet
    burst_all_flows_ms: float | None = field(default=None, metadata=OPTIONAL)  # ... of its last flow to start
    burst_data_ms: float | None = field(default=None, metadata=OPTIONAL)  # median first -> last data packet
    # the last third of the iterations, nearest the steady state (analysis.job_means)
    mean_iteration_last_third_ms: float | None = field(default=None, metadata=OPTIONAL)
    # the mean share of a burst's data beside a job it shares a link with, first and last third of the
    # bursts (analysis.meetings.meeting_shares): jobs sorting themselves apart, or falling into step
    met_share_first: float | None = field(default=None, metadata=OPTIONAL)
    met_share_last: float | None = field(default=None, metadata=OPTIONAL)
    # how many of its bursts came after the jobs parted (analysis.meetings.bursts_after_parting)
    bursts_after_parting: int | None = field(default=None, metadata=OPTIONAL)
    predicted_iteration_ms: float | None = None
    # a free-running policy (prediction.has_two_states): both states' predictions, and the share of the
    # job's iterations after the jobs parted (prediction.apart_share), which weighs them
    apart_share: float | None = field(default=None, metadata=OPTIONAL)
    predicted_together_ms: float | None = field(default=None, metadata=OPTIONAL)
    predicted_apart_ms: float | None = field(default=None, metadata=OPTIONAL)
    predicted_range_ms: tuple[float, float] | None = None  # busy starts costing 0 to twice their cost
    busy_start_ms: float | None = None  # what the model took a busy start to cost
    knife_edge: bool | None = None  # that range is wider than a tenth of the prediction
    solo_iteration_ms: float | None = None
    model_solo_iteration_ms: float | None = None  # the solo iteration the model was fed for this policy
    model_quiet_bursts: int | None = None  # the other policies' bursts pooled with the solo ones
    error_pct: float | None = None  # (measured - predicted) / predicted * 100

    def to_dict(self) -> dict[str, Any]:
        return _as_dict(self)

    @classmethod
    def from_dict(cls, data: dict) -> JobSummary:
        measured_ms = _number(data.get("mean_iteration_ms"))
        predicted_ms = _number(data.get("predicted_iteration_ms"))
        error_pct = _number(data.get("error_pct"))
        if error_pct is None and measured_ms is not None and predicted_ms:
            error_pct = (measured_ms - predicted_ms) / predicted_ms * 100
        return cls(iterations=_count(data.get("iterations")), mean_iteration_ms=measured_ms,
                   predicted_iteration_ms=predicted_ms, predicted_range_ms=_range(data.get("predicted_range_ms")),
                   knife_edge=_flag(data.get("knife_edge")), model_quiet_bursts=_count(data.get("model_quiet_bursts")),
                   bursts_after_parting=_count(data.get("bursts_after_parting")),
                   error_pct=error_pct, **{name: _number(data.get(name)) for name in _JOB_FIGURES})


# JobSummary's other numbers, read as they are
_JOB_FIGURES = ("median_iteration_ms", "iteration_se_ms", "mean_comm_ms", "burst_lead_ms", "burst_all_flows_ms",
                "burst_data_ms", "mean_iteration_last_third_ms", "busy_start_ms", "solo_iteration_ms",
                "model_solo_iteration_ms", "met_share_first", "met_share_last", "apart_share",
                "predicted_together_ms", "predicted_apart_ms")


@dataclass(frozen=True)
class Stop:
    """What ended a policy run with a target standard error (``experiment/stopping.py``): the target,
    reached ``after_ms`` after the epoch, or the ceiling (``--duration``), and each job's standard error
    at the last check, in % of its mean (None: too few iterations)."""

    by: str  # "target" or "ceiling"
    after_ms: float
    target_se_pct: float
    se_pct: dict[str, float | None] = field(default_factory=dict)

    def phrase(self) -> str:
        """``target 2 % reached at 7.4 s`` or ``at the ceiling, 12 s (target 2 % not reached)``."""
        if self.by == "target":
            return f"target {self.target_se_pct:g} % reached at {self.after_ms / 1000:.1f} s"
        return f"at the ceiling, {self.after_ms / 1000:g} s (target {self.target_se_pct:g} % not reached)"

    def to_dict(self) -> dict[str, Any]:
        return _as_dict(self)

    @classmethod
    def from_dict(cls, data: dict) -> Stop:
        return cls(by=str(data["by"]), after_ms=float(data["after_ms"]), target_se_pct=float(data["target_se_pct"]),
                   se_pct={str(k): _number(v) for k, v in (data.get("se_pct") or {}).items()})


@dataclass(frozen=True)
class PolicySummary:
    """One policy: its jobs, its epoch and its throughput against ``none`` (measured and predicted)."""

    jobs: dict[str, JobSummary] = field(default_factory=dict)
    epoch_s: float | None = None  # the unix time that t_s and open_s count from
    offsets_ms: dict[str, float] = field(default_factory=dict)  # each job's first burst after the epoch, as run
    throughput_change_vs_none_pct: float | None = field(default=None, metadata=OPTIONAL)
    predicted_throughput_change_vs_none_pct: float | None = field(default=None, metadata=OPTIONAL)
    # why the model gave no prediction for this policy (one line); its measurement is kept all the same
    prediction_unavailable: str | None = field(default=None, metadata=OPTIONAL)
    # a run with a target standard error: what stopped this policy (the target, or the ceiling)
    stopped: Stop | None = field(default=None, metadata=OPTIONAL)

    def to_dict(self) -> dict[str, Any]:
        return _as_dict(self)

    @classmethod
    def from_dict(cls, data: dict) -> PolicySummary:
        missing = data.get("prediction_unavailable")
        stopped = data.get("stopped")
        return cls(jobs={str(job): JobSummary.from_dict(j) for job, j in (data.get("jobs") or {}).items()},
                   epoch_s=_number(data.get("epoch_s")),
                   offsets_ms={str(job): float(ms) for job, ms in (data.get("offsets_ms") or {}).items()},
                   throughput_change_vs_none_pct=_number(data.get("throughput_change_vs_none_pct")),
                   predicted_throughput_change_vs_none_pct=_number(
                       data.get("predicted_throughput_change_vs_none_pct")),
                   prediction_unavailable=None if missing is None else str(missing),
                   stopped=Stop.from_dict(stopped) if isinstance(stopped, dict) else None)


@dataclass(frozen=True)
class Remeasurement:
    """A measurement the host disturbed, kept in ``raw/<run>`` and measured again."""

    measurement: str
    attempt: int
    run: str
    mean_pct: float  # the CPU the host took over it
    peak_pct: float | None = None  # ... in its worst second (format 1 folders may lack it)

    def to_dict(self) -> dict[str, Any]:
        return _as_dict(self)

    @classmethod
    def from_dict(cls, data: dict) -> Remeasurement:
        return cls(measurement=str(data["measurement"]), attempt=int(data["attempt"]), run=str(data["run"]),
                   mean_pct=float(data["mean_pct"]), peak_pct=_number(data.get("peak_pct")))


@dataclass(frozen=True)
class FidelitySummary:
    """Whether the fabric delivered what the scenario configured, and the figures behind the verdict."""

    solo_rate_ratio: float | None = None  # the lowest job's solo burst rate / the rate its links give it
    expected_solo_mbps: dict[str, float] = field(default_factory=dict)
    unmeasured_jobs: tuple[str, ...] = ()  # bursts too short to measure a rate
    overrun_jobs: tuple[str, ...] = ()  # alone, over their period by more than a quarter
    capture_drops: int | None = None
    advice: str | None = None
    host_steal_pct: dict[str, float] = field(default_factory=dict)  # per kept measurement
    host_steal_max_pct: float | None = None
    host_steal_peak_pct: dict[str, float] = field(default_factory=dict)
    disturbed: tuple[str, ...] = ()  # measurements the host disturbed in every attempt
    measured_again: tuple[Remeasurement, ...] = ()
    speed_drift_pct_of_period: dict[str, float | None] = field(default_factory=dict)
    drifted: tuple[str, ...] = ()
    drift_max_pct: float | None = None
    solo: dict[str, dict[str, Any]] = field(default_factory=dict)  # each job's solo figures, as measured
    apart_slowdown: dict[str, float | None] = field(default_factory=dict)  # data phase beside jobs it never meets
    slowed_apart: tuple[str, ...] = ()  # jobs the machine slowed beyond apart_slowdown_max
    apart_slowdown_max: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return _as_dict(self)

    @classmethod
    def from_dict(cls, data: dict) -> FidelitySummary:
        return cls(
            solo_rate_ratio=_number(data.get("solo_rate_ratio")),
            expected_solo_mbps={str(k): float(v) for k, v in (data.get("expected_solo_mbps") or {}).items()},
            unmeasured_jobs=tuple(data.get("unmeasured_jobs") or ()),
            overrun_jobs=tuple(data.get("overrun_jobs") or ()),
            capture_drops=_count(data.get("capture_drops")),
            advice=data.get("advice"),
            host_steal_pct=dict(data.get("host_steal_pct") or {}),
            host_steal_max_pct=_number(data.get("host_steal_max_pct")),
            host_steal_peak_pct=dict(data.get("host_steal_peak_pct") or {}),
            disturbed=tuple(data.get("disturbed") or ()),
            measured_again=tuple(Remeasurement.from_dict(m) for m in data.get("measured_again") or ()),
            speed_drift_pct_of_period=dict(data.get("speed_drift_pct_of_period") or {}),
            drifted=tuple(data.get("drifted") or ()),
            drift_max_pct=_number(data.get("drift_max_pct")),
            solo={str(k): dict(v) for k, v in (data.get("solo") or {}).items() if isinstance(v, dict)},
            apart_slowdown={str(k): _number(v) for k, v in (data.get("apart_slowdown") or {}).items()},
            slowed_apart=tuple(data.get("slowed_apart") or ()),
            apart_slowdown_max=_number(data.get("apart_slowdown_max")),
        )


@dataclass(frozen=True)
class Crosschecks:
    """The capture checked against other counts of the same traffic (errors in %)."""

    capture_vs_iperf_bytes_err_pct: float | None = field(default=None, metadata=OPTIONAL)
    gate_bytes_in_window: dict[str, float] | None = field(default=None, metadata=OPTIONAL)  # gated jobs
    capture_vs_portstats_util_err_pct: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return _as_dict(self)

    @classmethod
    def from_dict(cls, data: dict) -> Crosschecks:
        gate = data.get("gate_bytes_in_window")
        return cls(capture_vs_iperf_bytes_err_pct=_number(data.get("capture_vs_iperf_bytes_err_pct")),
                   gate_bytes_in_window=None if gate is None else {str(k): v for k, v in gate.items()},
                   capture_vs_portstats_util_err_pct=_number(data.get("capture_vs_portstats_util_err_pct")))


@dataclass(frozen=True)
class Gap:
    """A policy whose measurement a worker fault cut short; its finished iterations were kept."""

    policy: str
    job: str
    worker: str | None
    message: str
    iterations_kept: int

    def to_dict(self) -> dict[str, Any]:
        return _as_dict(self)

    @classmethod
    def from_dict(cls, data: dict) -> Gap:
        return cls(policy=str(data["policy"]), job=str(data["job"]), worker=data.get("worker"),
                   message=str(data["message"]), iterations_kept=int(data.get("iterations_kept") or 0))


@dataclass(frozen=True)
class SummaryRecord:
    """``summary.json``: the run's verdicts and the numbers behind them."""

    scenario: str = ""
    complete: bool = False
    incomplete_reason: str | None = None
    fidelity_ok: bool = False  # unknown fidelity is not good fidelity
    fidelity: FidelitySummary = field(default_factory=FidelitySummary)
    crosschecks: Crosschecks = field(default_factory=Crosschecks)
    shared_link: str | None = None  # the busiest captured link
    links: dict[str, dict] = field(default_factory=dict)  # every link two or more jobs share: jobs, captured
    policies: dict[str, PolicySummary] = field(default_factory=dict)
    gaps: tuple[Gap, ...] = ()
    # K: the run's wire ran K times slower (scenarios/timescale.py); every figure here is in the scenario's units
    time_scale: float = 1.0
    format: str = FORMAT
    results_dir: str = ""

    @property
    def predictions_missing(self) -> dict[str, str]:
        """Per measured policy the model gave no prediction for, why (``PolicySummary.prediction_unavailable``)."""
        return {p: e.prediction_unavailable for p, e in self.policies.items() if e.prediction_unavailable}

    def stop_lines(self) -> list[str]:
        """The report's sentence on what stopped each policy, and a blank line (none without a target)."""
        said = [f"`{p}` {e.stopped.phrase()}" for p, e in self.policies.items() if e.stopped]
        return [f"Each policy ran until every job's mean iteration time had a standard error (batch means, the "
                f"± of the tables) of at most the target, or to the ceiling: {'; '.join(said)}.", ""] if said else []

    def to_dict(self) -> dict[str, Any]:
        return _as_dict(self)

    @classmethod
    def from_dict(cls, data: dict) -> SummaryRecord:
        """The record of a summary of any format in :data:`FORMATS_READ`; ValueError naming the
        part that is not in the summary's form."""
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        try:
            policies = {str(p): PolicySummary.from_dict(entry) for p, entry in (data.get("policies") or {}).items()}
        except (AttributeError, TypeError, ValueError) as exc:
            raise ValueError(f"policies: not in the shiftbed summary form ({exc})") from None
        try:
            fidelity = FidelitySummary.from_dict(data.get("fidelity") or {})
            crosschecks = Crosschecks.from_dict(data.get("crosschecks") or {})
            gaps = tuple(Gap.from_dict(g) for g in data.get("gaps") or ())
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"fidelity, crosschecks or gaps: not in the shiftbed summary form ({exc})") from None
        return cls(scenario=str(data.get("scenario", "")), complete=data.get("complete") is True,
                   incomplete_reason=data.get("incomplete_reason"), fidelity_ok=bool(data.get("fidelity_ok", False)),
                   fidelity=fidelity, crosschecks=crosschecks, shared_link=data.get("shared_link"),
                   links=dict(data.get("links") or {}),
                   policies=policies, gaps=gaps, time_scale=_number(data.get("time_scale")) or 1.0, format=str(data.get("format", FORMATS_READ[0])),
                   results_dir=str(data.get("results_dir", "")))
