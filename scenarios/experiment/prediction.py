"""A run's prediction: the fluid model fed with what calibration measured, and how far to trust it.

:class:`RunModel` holds a run's solo figures and turns them into the fluid
model's jobs and windows (``controller/theory/fluid.py``); ``shiftbed run`` asks it
for every policy's mean iteration times after the policies have run.

A burst is its start-up overhead (not on the link) then its data (on the link,
shared max-min fairly; what a gated burst has queued behind its gate still
crosses the link when its window closes), so the model is given the data time
as the burst and the overhead as part of the computation. Bursts that meet
share the link's rate, not their solo rate (``link_headroom``: a burst alone
reached ``burst_mbps``). Each burst's time on the link, and how much longer
than usual its job took after it (iperf3's closing exchange, the processes'
exit), are drawn from the solo bursts measured (``link_samples_ms``,
``after_samples_ms``), and the prediction is the mean over
:data:`MODEL_DRAWS` runs: a gated burst that only just fits its window fits in
some iterations and loses a period in others.

Times are the data's: a burst's data starts its solo lead after the launch. A
job that waits for its window launches ``launch_lead`` early, so its data
reaches the open gate ``lead - launch_lead`` late; and a burst ready less than
``launch_lead + apps.dltjob.late_launch_ms(window, solo burst)`` after its
window opened still launches into it, late, as the driver does.

**Busy starts.** The solo bursts are measured alone. On this emulator a
burst launched while another job's data is on the link, or alongside another
job's launch, takes longer: its processes start (and end) slower while the
other job's load the machine's two cores, and its flows start apart. The
model gives such a burst that much more of the link (``FluidJob.busy_start_ms``;
``FluidJob.lead_ms`` places its launch): per job, how much
later than alone its data started in such bursts of the run's *other*
policies (:func:`busy_start_costs_ms`; a policy's prediction never uses its
own bursts), else :data:`BUSY_START_MS`; each busy start draws its cost from
those bursts' where there are enough (``analysis.busy_start_samples_ms``). Measured 2026-12-01:
2-6 ms on one machine, 5-15 ms per job and run on another (docs/accuracy.md).

**Busy ends.** Likewise a burst's closing exchange and exits take longer
while other jobs' bursts run, on its links or elsewhere: each burst that
was on the link beside another job's draws how much longer than usual such
bursts of the run's other policies took after their data
(``busy_after_samples_ms``, from :func:`pooled_solo`). In one param-server
run a ring job's after phase took 9-13 ms alone and 19-28 ms beside another
burst; without it, its gated bursts were predicted to make every window and
missed one in seven (docs/accuracy.md).

**Quiet bursts of the other policies.** A run's policies come minutes after
its calibration, and this machine's speed drifts in between: in one
classroom run every burst started 25 ms after its launch in calibration and
30 ms in the policies (10 ms in the runs before and after), and `gate` alpha
missed a window in every sixth iteration where the solo figures made every
one. So each prediction pools a job's solo bursts with its bursts in the
run's *other* policies that met no other job's burst (:func:`pooled_solo`).
Over 550 pairs of 59 kept runs this moved the mean |error| from 2.68 to
2.36 % (measured 2026-12-01, docs/accuracy.md).

**Together or apart.** Free-running jobs that start off the schedule's
shifts (``none``, ``random``) end a run in one of two states: together, still
meeting, or apart, bursting one after another where the links leave room.
Which one is decided by what the model does not have: the burst further along
keeping more of the link (iperf3's fresh connections), a retransmission
timeout that stalls one job's burst ~240 ms where three jobs meet. So the
model predicts both, with max-min fair sharing: together from the policy's
own start (a meeting then neither pulls the jobs together nor pushes them
apart), apart from the schedule's shifts. Jobs that part stay apart, so each
job's prediction is the two weighed by how many of its measured iterations
came before and after the jobs parted (:func:`apart_share`); when they part,
and whether, the model does not say. The other policies keep the
transport's sharing (:data:`WIRE_SHARING`). Measured on the kept runs in
docs/accuracy.md ("Together or apart").

**Knife edges.** Most predictions hardly move with that figure; but where a
gated job's burst ends within a few ms of the moment that decides whether it
makes its next window, a few ms decide between one period and two, and one
run lands anywhere between. :meth:`RunModel.predict_with_range` also runs the
model with busy starts costing 0 and twice their cost; a pair whose
prediction moves by more than :data:`KNIFE_EDGE_SHARE` of itself is on a knife
edge, and the report says so beside its error.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import pandas as pd

from apps.dltjob import late_launch_ms
from controller.theory.fabricshare import JobLinks
from controller.theory.fluid import FluidJob, mean_iterations, policy_windows
from controller.theory.policies import get_policy
from controller.theory.schedule import Schedule
from scenarios.analysis import tables as analysis
from scenarios.analysis.tables import BUSY_START_MS

# How bursts that meet share the emulated fabric where a policy leaves it to TCP ("fair" in the plan):
# every burst opens fresh connections, and the burst further along keeps more of the link
# (policies.LEADER_GAIN), so free-running jobs that can be interleaved sort themselves apart.
# Over nine 20-40 s runs of the shipped scenarios (2026-12-04), `none` and `shift` agreed within
# 7.7 % with it and within 16.9 % with max-min fair sharing (docs/accuracy.md, "Free-running
# jobs lock in or drift apart").
FAIR_ON_THE_WIRE = "leader"
# Over standing connections (``transport: persistent``, apps/stream.py) no burst starts a process or
# a handshake, two that meet start alike, and jobs that start together stay together: max-min fair
# sharing agreed within 3 % on five of six scenarios (docs/accuracy.md, "Standing connections").
WIRE_SHARING = {"iperf3": FAIR_ON_THE_WIRE, "persistent": "fair"}
STATES = ("together", "apart")
MODEL_DRAWS = 16  # fluid-model runs per prediction, each burst's link time drawn from the solo bursts
KNIFE_EDGE_SHARE = 0.10  # a prediction that moves by more than this share of itself is on a knife edge


@dataclass(frozen=True)
class RunModel:
    """The fluid model of one run: the schedule, each job's solo figures, the drivers' launch leads.

    ``solo[job]`` needs ``iteration_ms``, ``data_ms``, ``lead_ms`` (launch ->
    first data packet), ``burst_mbps`` and optionally ``link_samples_ms`` with,
    burst by burst, ``after_samples_ms``.
    """

    schedule: Schedule
    solo: dict[str, dict]
    launch_lead_ms: dict[str, float]
    link_mbps: float  # the shared link's rate; a fabric faster than the host links has room for more
    queue_ms: float
    padding_ms: dict[str, float] = field(default_factory=dict)  # per job, what the policy adds to its period
    links: JobLinks | None = None  # the fabric the bursts share (``runlinks.RunLinks.model_links``); None: one link
    tcp_sharing: str = FAIR_ON_THE_WIRE  # how TCP shares a link among bursts on this wire (:data:`WIRE_SHARING`)

    def predict(self, policy: str, offsets_ms: dict[str, float], iterations: int | Mapping[str, int],
                busy_start_ms: float | dict[str, float] = BUSY_START_MS,
                busy_start_samples_ms: dict[str, tuple[float, ...]] | None = None) -> dict[str, float]:
        """Each job's mean iteration time (ms) under ``policy``, its bursts starting at ``offsets_ms``.

        ``iterations``: per job, how many the run measured (each mean is over exactly that many,
        the span the wire's covers); one count: at least that many each.

        ``busy_start_ms``: what a burst that starts while another job's burst
        is on the link costs beyond its solo length (``FluidJob.busy_start_ms``),
        one figure for every job or one per job. ``busy_start_samples_ms``: per
        job, measured busy starts' costs, each busy start drawing one
        (``FluidJob.busy_start_samples_ms``; a job without any takes ``busy_start_ms``).
        """
        jobs, offsets, kwargs = self.simulation(policy, offsets_ms, iterations, busy_start_ms,
                                                busy_start_samples_ms)
        return mean_iterations(jobs, offsets, draws=MODEL_DRAWS, **kwargs)

    def simulation(self, policy: str, offsets_ms: dict[str, float], iterations: int | Mapping[str, int],
                   busy_start_ms: float | dict[str, float] = BUSY_START_MS,
                   busy_start_samples_ms: dict[str, tuple[float, ...]] | None = None,
                   ) -> tuple[list[FluidJob], dict[str, float], dict]:
        """What :meth:`predict` simulates: the fluid jobs, their first bursts' offsets and the rest of
        ``fluid.simulate``'s arguments (to trace a prediction burst by burst beside a run)."""
        pol = get_policy(policy)
        jobs, offsets, late, grace = [], {}, {}, {}
        late_bursts = late_launch_bursts_ms(self.schedule, self.solo)
        for job in self.schedule.jobs:
            solo = self.solo[job.name]
            headroom = max(1.0, self.link_mbps / solo["burst_mbps"]) if solo["burst_mbps"] > 0 else 1.0
            longest_ms = 0.99 * solo["iteration_ms"]
            samples = tuple(min(max(x, 0.01), longest_ms) for x in solo.get("link_samples_ms", ()))
            busy_ms = busy_start_ms[job.name] if isinstance(busy_start_ms, dict) else busy_start_ms
            iteration_ms = solo["iteration_ms"] + self.padding_ms.get(job.name, 0.0)  # the driver pads its compute
            jobs.append(FluidJob(job.name, iteration_ms, min(solo["data_ms"], longest_ms), headroom,
                                 samples, busy_start_ms=max(0.0, busy_ms),
                                 after_samples_ms=tuple(solo.get("after_samples_ms", ())),
                                 busy_start_samples_ms=tuple((busy_start_samples_ms or {}).get(job.name, ())),
                                 busy_after_samples_ms=tuple(solo.get("busy_after_samples_ms", ())),
                                 lead_ms=typical_lead_ms(solo), late_samples_ms=tuple(solo.get("late_samples_ms", ())),
                                 keeps_clock=keeps_clock(solo)))
            launch_lead = self.launch_lead_ms.get(job.name, 0.0)
            late[job.name] = max(0.0, typical_lead_ms(solo) - launch_lead)
            grace[job.name] = launch_lead + late_launch_ms(job.comm_ms, late_bursts.get(job.name))
            first_lead = late[job.name] if pol.waits_for_window(0) else solo["lead_ms"]
            offsets[job.name] = offsets_ms[job.name] + first_lead
        windows = policy_windows(pol, self.schedule, offsets_ms, late_ms=late, grace_ms=grace)
        counts = iterations if isinstance(iterations, Mapping) else max(iterations, 5)
        return jobs, offsets, {"windows": windows, "iterations": counts, "warmup": 0,
                               "waits": pol.waits_for_window, "enforce": pol.enforces_windows,
                               "queue_ms": self.queue_ms,  # a held burst's queue drains past its gate
                               "sharing": pol.link_sharing(self.tcp_sharing),
                               "priority": pol.priority_order(self.schedule),
                               "links": self.links}

    def predict_with_range(self, policy: str, offsets_ms: dict[str, float], iterations: int | Mapping[str, int],
                           busy_start_ms: dict[str, float] | None = None,
                           busy_start_samples_ms: dict[str, tuple[float, ...]] | None = None,
                           ) -> tuple[dict[str, float], dict[str, tuple[float, float]]]:
        """:meth:`predict`, and each job's (lowest, highest) prediction with busy starts costing 0,
        what they cost (the prediction; default :data:`BUSY_START_MS` for every job) and twice that."""
        cost = busy_start_ms or {j.name: BUSY_START_MS for j in self.schedule.jobs}
        samples = busy_start_samples_ms or {}

        def scaled(f: float) -> dict[str, float]:
            return self.predict(policy, offsets_ms, iterations, {j: f * c for j, c in cost.items()},
                                {j: tuple(f * x for x in xs) for j, xs in samples.items()})

        predicted = scaled(1.0)
        runs = [predicted, scaled(0.0), scaled(2.0)]
        return predicted, {j.name: (min(r[j.name] for r in runs), max(r[j.name] for r in runs))
                           for j in self.schedule.jobs}


def has_two_states(policy: str) -> bool:
    """Does ``policy`` leave the jobs free-running from a start off the schedule's shifts, their bursts
    shared by TCP (``none``, ``random``)? Its jobs then end together or apart (module docstring)."""
    pol = get_policy(policy)
    return pol.sharing == "fair" and not pol.uses_schedule and not pol.realigns()


def apart_share(measured: dict) -> float:
    """The share of a job's measured iterations that came after its run's jobs had parted
    (``bursts_after_parting``, ``analysis.meetings.bursts_after_parting``); 0 without the figure."""
    iterations, after = measured.get("iterations"), measured.get("bursts_after_parting")
    if not iterations or not after:
        return 0.0
    return min(1.0, after / iterations)


def between_states(share: float, together: float, apart: float) -> float:
    """A job's prediction ``share`` of whose iterations ran apart and the rest together."""
    return (1.0 - share) * together + share * apart


def state_start(state: str, schedule: Schedule, offsets_ms: dict[str, float]) -> dict[str, float]:
    """Where the model starts the jobs for ``state``: the policy's own offsets (together) or the
    schedule's shifts (apart)."""
    if state not in STATES:
        raise ValueError(f"state {state!r}: expected one of {', '.join(STATES)}")
    return dict(schedule.shifts_ms) if state == "apart" else dict(offsets_ms)


def typical_lead_ms(solo: dict) -> float:
    """A job's typical launch -> first data packet (ms): the median of its bursts (``burst_lead_ms``)
    where known, else the mean (``lead_ms``).

    The median, because leads have a long tail of slow process starts: a
    job launched its mean lead early sent its first data before its window
    opened in 10 of 15 gated bursts (h10's b, measured 2026-12-02), and data
    meeting a closed gate is policed. A gated burst's lateness beyond the
    median is in its link samples (``analysis.link_time_samples_ms``)."""
    return float(solo.get("burst_lead_ms", solo["lead_ms"]))


def keeps_clock(solo: dict) -> bool:
    """Did the job run keeping its clock (``apps.dltjob.JobDriver.compute_s``)? Its solo figures then
    hold its bursts' usual launch overhead; a run made before jobs kept their clocks has none."""
    return solo.get("launch_overhead_ms") is not None


def pooled_solo(solo: dict[str, dict], solo_spans: dict[str, pd.DataFrame],
                other_spans: pd.DataFrame, meets: set[frozenset] | None = None) -> dict[str, dict]:
    """Each job's solo figures, pooled with its quiet bursts in ``other_spans``.

    ``solo_spans[job]``: the bursts (``analysis.burst_spans``) of the solo run
    ``solo[job]`` came from; ``other_spans``: bursts of the run's other
    policies, whose ``quiet`` ones (no other job's burst overlapped them)
    measure the same thing later in the run. The pooled figures are the mean
    (and median) lead and the mean data phase, the link and after samples of all those bursts, and
    the solo iteration moved by how much the pool's median burst (launch to
    end) differs from the solo run's: the compute phase is a fixed sleep.
    A job without solo bursts or quiet bursts keeps its solo figures. Every
    job with solo bursts also gets ``busy_after_samples_ms``: how much longer
    than the pool's median its bursts in ``other_spans`` that met another
    job's took after their data, by whether that job shares a link with it
    (a pair in ``meets``; None: all do; ``analysis.busy_after_samples_ms``).
    """
    out = {}
    for job, figures in solo.items():
        mine = solo_spans.get(job)
        theirs = analysis.quiet_bursts(other_spans, job)
        if mine is None or mine.empty:
            out[job] = {**figures, "quiet_bursts": 0}
            continue
        pool = pd.concat([mine, theirs], ignore_index=True)
        busy_after = tuple(analysis.busy_after_samples_ms(other_spans, job, float(pool["after_ms"].median()),
                                                          meets).items())
        if theirs.empty:
            out[job] = {**figures, "quiet_bursts": 0, "busy_after_samples_ms": busy_after}
            continue
        kept = keeps_clock(figures)
        moved_ms = float(analysis.clock_moving_ms(pool, kept).median() - analysis.clock_moving_ms(mine, kept).median())
        out[job] = {**figures, "lead_ms": float(pool["lead_ms"].mean()), "burst_lead_ms": float(pool["lead_ms"].median()),
                    "data_ms": float(pool["data_ms"].mean()),
                    "iteration_ms": figures["iteration_ms"] + moved_ms,
                    "link_samples_ms": analysis.link_time_samples_ms(pool),
                    "after_samples_ms": analysis.after_time_samples_ms(pool),
                    "late_samples_ms": analysis.late_time_samples_ms(pool), "quiet_bursts": len(theirs),
                    "busy_after_samples_ms": busy_after}
    return out


def late_launch_bursts_ms(schedule: Schedule, solo: dict[str, dict]) -> dict[str, float]:
    """Per job, the solo burst length (ms) by which a burst ready late may still launch into its
    window (``apps.dltjob.late_launch_ms``): only where no two jobs' windows ever meet.

    Where they do (an infeasible schedule), a late burst meets the other job's and is cut at its
    window's end, and on the wire TCP's retransmission timer brings the rest well into the next
    window, which the model does not have: on the coprime pair, with late launches, `gate` beta was
    predicted 7-18 % short (3 runs), and without them within 2 % (2 runs; docs/accuracy.md)."""
    if not schedule.feasible:
        return {}
    return {name: s["comm_ms"] for name, s in solo.items() if "comm_ms" in s}


def busy_start_costs_ms(measured: dict[str, float | None], jobs) -> dict[str, float]:
    """Each job's busy-start cost: ``measured`` (``analysis.busy_start_extra_ms``, at least 0)
    where there is a figure, else :data:`BUSY_START_MS`."""
    return {j: BUSY_START_MS if measured.get(j) is None else max(0.0, measured[j]) for j in jobs}


def knife_edge(predicted_ms: float, range_ms: tuple[float, float]) -> bool:
    """Does a few ms more or less per busy start move this prediction by more than :data:`KNIFE_EDGE_SHARE`?"""
    low, high = range_ms
    return high - low > KNIFE_EDGE_SHARE * predicted_ms


@dataclass(frozen=True)
class MeasuredRun:
    """What a run measured that its predictions draw from: calibration's solo figures, bursts and
    launch leads, and every policy's bursts."""

    schedule: Schedule
    solo: dict[str, dict]
    solo_spans: dict[str, pd.DataFrame]  # per job: the bursts of the solo run kept in ``solo``
    bursts: dict[str, pd.DataFrame]  # policy -> its bursts (analysis.burst_spans)
    launch_lead_ms: dict[str, float]
    schedules: dict[str, Schedule] = field(default_factory=dict)  # policy -> its own, where it differs
    meets: set[frozenset] | None = None  # the pairs of jobs that share a link (None: every pair)
    transport: str = "iperf3"  # how the jobs' flows travelled (apps.jobmodel.TRANSPORTS)

    @property
    def tcp_sharing(self) -> str:
        """How TCP shared the links among the jobs' bursts (:data:`WIRE_SHARING` of the transport)."""
        return WIRE_SHARING[self.transport]

    def schedule_of(self, policy: str) -> Schedule:
        """The schedule ``policy`` ran with (``policies.policy_schedule``; default: the run's)."""
        return self.schedules.get(policy, self.schedule)

    def padding_ms(self, policy: str) -> dict[str, float]:
        """Per job, how much ``policy``'s schedule lengthens its period (``align``)."""
        base = {j.name: j.period_ms for j in self.schedule.jobs}
        return {j.name: j.period_ms - base[j.name] for j in self.schedule_of(policy).jobs}

    def other_bursts(self, policy: str | None) -> pd.DataFrame:
        """The bursts of the run's policies but ``policy`` (a policy's prediction never uses its own;
        None: every policy's)."""
        others = [b for p, b in self.bursts.items() if p != policy and not b.empty]
        return pd.concat(others, ignore_index=True) if others else pd.DataFrame()

    def model_solo(self, policy: str) -> dict[str, dict]:
        """The solo figures the model is fed for ``policy``: pooled with the quiet bursts of the
        run's other policies (:func:`pooled_solo`)."""
        return pooled_solo(self.solo, self.solo_spans, self.other_bursts(policy), self.meets)

    def busy_starts_ms(self, policy: str, figures: dict[str, dict] | None = None,
                       ) -> tuple[dict[str, float], dict[str, tuple[float, ...]]]:
        """Per job, what a busy start cost in the run's other policies (:func:`busy_start_costs_ms`):
        the median (or the default) and each such burst's, beyond the lead in ``figures``
        (default: the solo figures)."""
        spans = self.other_bursts(policy)
        lead_ms = {name: s["lead_ms"] for name, s in (figures or self.solo).items()}
        costs = busy_start_costs_ms(analysis.busy_start_extra_ms(spans, lead_ms),
                                    [j.name for j in self.schedule.jobs])
        return costs, analysis.busy_start_samples_ms(spans, lead_ms)
