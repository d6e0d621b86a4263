"""The window scheduler's REST contract as plain code: validation and state, no Ryu.

``controller/scheduler_app.py`` routes HTTP requests here and sends what the
gate returns; everything a request can get wrong is decided here and raises
:class:`ApiError` (HTTP status + one-line message), so it is unit-tested
without Ryu, eventlet or root.

Endpoints (JSON in, JSON out; prefix ``/shiftbed``):

- ``POST /jobs`` ``{"name", "period_ms", "comm_ms", "workers": [host, ...],
  "flows": [{"dpid", "src_ip", "dst_ip", "tcp_src", "tcp_dst"?}, ...], "links"?: [name, ...]}`` → 201;
  ``links``: the directed links the job's flows cross. When every job gives them, only jobs that
  share a link are kept apart (``conflicts.ConflictGraph.meeting_weights``); else all meet on one.
  ``busy_ms``?: ``[[start_ms, length_ms], ...]``, a pattern job's busy arcs from its iteration's origin
  (its phases on the link, ``phases.as_pattern``); a set with one is scheduled on the jobs' busy quanta
  (``theory/patternwindows.py``), under ``none``, ``shift`` or ``gate`` only, and the gate opens one
  window per busy arc
- ``DELETE /jobs/{name}`` → 200; ``GET /jobs``
- ``GET /schedule``: policy, epoch (unix s), per-job shift/offset/window and
  ``padding_ms`` (how much the policy lengthens the job's period: ``align``),
  hyper-period, feasibility
- ``POST /policy`` ``{"policy", "epoch_s"? | "start_in_s"?, "seed"?, "mode"?,
  "floor_kbps"?, "floor_burst_ms"?, "guard_ms"?, "quantum_ms"?, "toggle"?, "advance_ms"?}``: choose the policy (any
  registered one, ``controller/theory/policies.py``) and the common epoch; for a policy that enforces
  its windows (``gate``) the controller starts firing edges. The schedule is the policy's own
  (``policies.policy_schedule``); ``guard_ms`` widens every window, and for ``guard`` the schedule
  also keeps the widened windows apart
- ``POST /stop``: stop gating, remove every gate rule and meter; ``GET /status``,
  ``GET /edges``

A refused request changes nothing (:class:`SchedulerCore`). Job names follow
the scenario files' rule and schedules are bounded in size before they are
computed (``controller/limits.py``).
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass

from controller.gate import FLOOR_BURST_MS, MODES, TOGGLES, DataFlow
from controller.limits import (
    MAX_GUARD_MS,
    MAX_JOBS,
    MAX_PERIOD_MS,
    MAX_QUANTUM_MS,
    job_name_problem,
    period_quanta_problem,
    schedule_size_problem,
    search_nodes,
)
from controller.requestbody import (  # noqa: F401  (ApiError, parse_body, json_depth: the scheduler's API)
    MAX_BODY_BYTES,
    MAX_JSON_DEPTH,
    ApiError,
    host_name,
    ipv4_address,
    json_depth,
    parse_body,
    read_number,
    refuse_unknown,
)
from controller.theory.conflicts import ConflictGraph
from controller.theory.patternwindows import busy_pattern, pattern_set_schedule, window_arcs
from controller.theory.policies import POLICIES, PolicyKnobs, get_policy, policy_schedule
from controller.theory.schedule import (
    BeyondExactMethod,
    JobTiming,
    Schedule,
    to_quanta,
)

DEFAULT_QUANTUM_MS = 1.0
MAX_FLOWS = 256
MAX_EPOCH_SKEW_S = 3600.0
MAX_START_IN_S = 600.0
MAX_FLOOR_BURST_MS = 60_000.0  # a minute: a quarter second at a time scale far beyond any run's
MAX_DPID = 2**64 - 1
MAX_BUSY_ARCS = 256  # a pattern job's busy arcs (a DDP job has a few to some tens of buckets)
PATTERN_POLICIES = ("none", "shift", "gate")  # what runs a set with pattern jobs


@dataclass(frozen=True)
class JobRequest:
    """A validated job registration."""

    name: str
    period_ms: float
    comm_ms: float
    workers: tuple[str, ...]
    flows: tuple[DataFlow, ...]
    links: tuple[str, ...] | None = None  # the directed links its flows cross (None: not given)
    busy_ms: tuple[tuple[float, float], ...] | None = None  # a pattern job's busy arcs (None: one burst at 0)

    def as_dict(self) -> dict:
        doc = {"name": self.name, "period_ms": self.period_ms, "comm_ms": self.comm_ms,
               "workers": list(self.workers),
               "flows": [{"dpid": f.dpid, "src_ip": f.src_ip, "dst_ip": f.dst_ip, "tcp_src": f.tcp_src,
                          "tcp_dst": f.tcp_dst, "proto": f.proto} for f in self.flows]}
        if self.links is not None:
            doc["links"] = list(self.links)
        if self.busy_ms is not None:
            doc["busy_ms"] = [list(arc) for arc in self.busy_ms]
        return doc


def validate_job(doc: dict) -> JobRequest:
    """Body of ``POST /jobs`` → :class:`JobRequest`, or 400 naming the field."""
    refuse_unknown(doc, {"name", "period_ms", "comm_ms", "workers", "flows", "links", "busy_ms"}, "job")
    if "name" not in doc:
        raise ApiError(400, "job.name: missing")
    problem = job_name_problem(doc["name"])
    if problem:
        raise ApiError(400, f"job.name: {problem}"[:300])
    name = doc["name"]
    where = f"job {name}"
    period_ms = float(read_number(doc, "period_ms", where, 0.0, MAX_PERIOD_MS))
    comm_ms = float(read_number(doc, "comm_ms", where, 0.0, MAX_PERIOD_MS))
    if comm_ms >= period_ms:
        raise ApiError(400, f"{where}.comm_ms: must be < period_ms ({period_ms}), got {comm_ms}")
    workers = doc.get("workers")
    if not isinstance(workers, list) or not workers:
        raise ApiError(400, f"{where}.workers: must be a non-empty list of host names")
    workers = [host_name(w, f"{where}.workers[{i}]") for i, w in enumerate(workers)]
    if len(set(workers)) != len(workers):
        raise ApiError(400, f"{where}.workers: a worker is listed twice")
    flows_doc = doc.get("flows")
    if not isinstance(flows_doc, list) or not flows_doc or len(flows_doc) > MAX_FLOWS:
        raise ApiError(400, f"{where}.flows: must be a list of 1..{MAX_FLOWS} data flows")
    flows = []
    for i, f in enumerate(flows_doc):
        fw = f"{where}.flows[{i}]"
        if not isinstance(f, dict):
            raise ApiError(400, f"{fw}: must be an object")
        refuse_unknown(f, {"dpid", "src_ip", "dst_ip", "tcp_src", "tcp_dst", "proto"}, fw)
        proto = f.get("proto", "tcp")
        if proto not in ("tcp", "udp"):
            raise ApiError(400, f"{fw}.proto: must be 'tcp' or 'udp', got {proto!r}"[:200])
        dpid = int(read_number(f, "dpid", fw, 0, MAX_DPID, lo_open=False, integer=True))
        tcp_src = int(read_number(f, "tcp_src", fw, 1, 65535, lo_open=False, integer=True))
        tcp_dst = None
        if f.get("tcp_dst") is not None:
            tcp_dst = int(read_number(f, "tcp_dst", fw, 1, 65535, lo_open=False, integer=True))
        flows.append(DataFlow(dpid, ipv4_address(f.get("src_ip"), f"{fw}.src_ip"),
                              ipv4_address(f.get("dst_ip"), f"{fw}.dst_ip"), tcp_src, tcp_dst, proto))
    return JobRequest(name, period_ms, comm_ms, tuple(workers), tuple(flows), _links(doc.get("links"), where),
                      _busy(doc.get("busy_ms"), where, period_ms))


def _busy(value, where: str, period_ms: float) -> tuple[tuple[float, float], ...] | None:
    """A pattern job's ``busy_ms``: absent, or 1..MAX_BUSY_ARCS ``[start_ms, length_ms]`` arcs, each
    starting in ``[0, period_ms)`` and longer than 0, together shorter than the period."""
    if value is None:
        return None
    if not isinstance(value, list) or not value or len(value) > MAX_BUSY_ARCS:
        raise ApiError(400, f"{where}.busy_ms: must be a list of 1..{MAX_BUSY_ARCS} [start_ms, length_ms] arcs")
    arcs = []
    for i, arc in enumerate(value):
        aw = f"{where}.busy_ms[{i}]"
        if not isinstance(arc, list) or len(arc) != 2:
            raise ApiError(400, f"{aw}: must be a [start_ms, length_ms] pair, got {arc!r}"[:200])
        pair = dict(zip(("start_ms", "length_ms"), arc, strict=True))
        start_ms = float(read_number(pair, "start_ms", aw, 0.0, period_ms, lo_open=False))
        if start_ms >= period_ms:
            raise ApiError(400, f"{aw}.start_ms: must be < period_ms ({period_ms}), got {start_ms}")
        arcs.append((start_ms, float(read_number(pair, "length_ms", aw, 0.0, period_ms))))
    total_ms = sum(length for _, length in arcs)
    if total_ms >= period_ms:
        raise ApiError(400, f"{where}.busy_ms: the arcs add up to {total_ms:g} ms, not less than period_ms ({period_ms})")
    return tuple(arcs)


def _links(value, where: str) -> tuple[str, ...] | None:
    """A job's ``links``: absent, or a list of 1..MAX_FLOWS·4 link names (each a short string)."""
    if value is None:
        return None
    if not isinstance(value, list) or not value or len(value) > 4 * MAX_FLOWS:
        raise ApiError(400, f"{where}.links: must be a list of 1..{4 * MAX_FLOWS} link names")
    for i, name in enumerate(value):
        if not isinstance(name, str) or not 0 < len(name) <= 64:
            raise ApiError(400, f"{where}.links[{i}]: must be a link name of 1..64 characters, got {name!r}"[:200])
    return tuple(dict.fromkeys(value))


@dataclass(frozen=True)
class PolicyRequest:
    """A validated ``POST /policy``: the epoch is absolute (unix s)."""

    policy: str
    epoch_s: float
    seed: int = 0
    mode: str = "block"
    floor_kbps: int = 1000
    floor_burst_ms: float = FLOOR_BURST_MS  # the floor meter's bucket, this long at floor_kbps
    guard_ms: float = 0.0
    quantum_ms: float = 1.0
    toggle: str = "meter"
    advance_ms: float = 0.0  # send each edge this much early (pre-compensates the switch's delay)


def validate_policy(doc: dict, now_s: float | None = None) -> PolicyRequest:
    """Body of ``POST /policy`` → :class:`PolicyRequest`; ``epoch_s`` defaults to now + ``start_in_s`` (2 s)."""
    now_s = time.time() if now_s is None else now_s
    refuse_unknown(doc, {"policy", "epoch_s", "start_in_s", "seed", "mode", "floor_kbps", "floor_burst_ms", "guard_ms",
                   "quantum_ms", "toggle", "advance_ms"}, "policy")
    policy = doc.get("policy")
    if not isinstance(policy, str) or policy not in POLICIES:
        raise ApiError(400, f"policy.policy: must be one of {', '.join(POLICIES)}, got {policy!r}"[:200])
    if not get_policy(policy).emulated:
        raise ApiError(400, f"policy.policy: {policy} is a model only (plan and sweep); the fabric cannot run it")
    if "epoch_s" in doc and "start_in_s" in doc:
        raise ApiError(400, "policy: give epoch_s or start_in_s, not both")
    if "epoch_s" in doc:
        epoch_s = read_number(doc, "epoch_s", "policy", now_s - MAX_EPOCH_SKEW_S, now_s + MAX_EPOCH_SKEW_S)
    else:
        epoch_s = now_s + read_number(doc, "start_in_s", "policy", 0.0, MAX_START_IN_S, lo_open=False,
                                  default=2.0)
    seed = int(read_number(doc, "seed", "policy", 0, 2**63 - 1, lo_open=False, integer=True, default=0))
    mode = doc.get("mode", "block")
    if mode not in MODES:
        raise ApiError(400, f"policy.mode: must be one of {', '.join(MODES)}, got {mode!r}"[:200])
    floor_kbps = int(read_number(doc, "floor_kbps", "policy", 0, 10_000_000, integer=True, default=1000))
    floor_burst_ms = float(read_number(doc, "floor_burst_ms", "policy", 0.0, MAX_FLOOR_BURST_MS,
                                   default=FLOOR_BURST_MS))
    guard_ms = float(read_number(doc, "guard_ms", "policy", 0.0, MAX_GUARD_MS, lo_open=False, default=0.0))
    quantum_ms = float(read_number(doc, "quantum_ms", "policy", 0.0, MAX_QUANTUM_MS, default=1.0))
    toggle = doc.get("toggle", "meter")
    if toggle not in TOGGLES:
        raise ApiError(400, f"policy.toggle: must be one of {', '.join(TOGGLES)}, got {toggle!r}"[:200])
    advance_ms = float(read_number(doc, "advance_ms", "policy", 0.0, 50.0, lo_open=False, default=0.0))
    return PolicyRequest(policy, float(epoch_s), seed, mode, floor_kbps, floor_burst_ms, guard_ms, quantum_ms,
                         toggle, advance_ms)


def _compute(pol, timings: list[JobTiming], quantum_ms: float, knobs: PolicyKnobs,
             max_nodes: int, pair_weights: dict | None = None) -> Schedule | Exception:
    """The policy's schedule, or the refusal as a value: it may run on another thread, which should
    not print a traceback for a refused instance."""
    try:
        return policy_schedule(pol, timings, quantum_ms, knobs, max_nodes=max_nodes, pair_weights=pair_weights)
    except (ValueError, BeyondExactMethod) as exc:
        return exc


def _window_ms(comm_ms: float, guard_ms: float) -> float:
    """A job's gate window: its burst as registered, widened by the guard."""
    return comm_ms + guard_ms


def meeting_weights(jobs: dict[str, JobRequest]) -> dict[frozenset[str], int] | None:
    """The schedule's pair weights: where every job gave the links it crosses, 1 for each pair that
    shares one and 0 for the rest (``ConflictGraph.meeting_weights``); else None (all meet)."""
    if not jobs or any(job.links is None for job in jobs.values()):
        return None
    return ConflictGraph.from_links({name: job.links for name, job in jobs.items()}).meeting_weights()


class SchedulerCore:
    """Registered jobs, the current schedule and policy; raises :class:`ApiError` on misuse.

    Every request is a transaction: the new state is computed aside and
    assigned only once nothing can refuse it any more, so a refused request
    leaves ``jobs``, ``schedule``, ``policy`` and ``offsets_ms`` as they were.

    ``compute_with(fn, *args)`` runs the schedule computation (default: here, in
    this thread); the Ryu app passes one that runs it on a native thread.
    Requests must not interleave: the app serialises them.
    """

    def __init__(self, compute_with=None):
        self.jobs: dict[str, JobRequest] = {}
        self.schedule: Schedule | None = None
        self.policy: PolicyRequest | None = None
        self.offsets_ms: dict[str, float] = {}
        self.gating = False  # set by the app while edges are being fired
        self._compute_with = compute_with or (lambda fn, *args: fn(*args))

    # -- jobs ----------------------------------------------------------------------------
    def add_job(self, doc: dict) -> JobRequest:
        job = validate_job(doc)
        if job.name in self.jobs:
            raise ApiError(409, f"job {job.name}: already registered (DELETE it first)")
        if len(self.jobs) >= MAX_JOBS:
            raise ApiError(409, f"jobs: at most {MAX_JOBS}")
        self._refuse_while_gating("register a job")
        jobs = {**self.jobs, job.name: job}
        self._set_jobs(jobs, self.schedule_for(jobs))
        return job

    def remove_job(self, name: str) -> None:
        if name not in self.jobs:
            raise ApiError(404, f"job {name!r}: not registered"[:200])
        self._refuse_while_gating("remove a job")
        jobs = {key: job for key, job in self.jobs.items() if key != name}
        self._set_jobs(jobs, self.schedule_for(jobs))

    def _set_jobs(self, jobs: dict[str, JobRequest], schedule: Schedule | None) -> None:
        """A new job set: its schedule, and no policy until one is set again."""
        self.jobs, self.schedule, self.policy, self.offsets_ms = jobs, schedule, None, {}

    def _refuse_while_gating(self, what: str) -> None:
        if self.gating:
            raise ApiError(409, f"cannot {what} while the gate runs: POST /shiftbed/stop first")

    def schedule_for(self, jobs: dict[str, JobRequest], quantum_ms: float | None = None,
                     policy: PolicyRequest | None = None) -> Schedule | None:
        """The schedule of ``jobs`` (the theory module decides), as ``policy`` sees them
        (``Policy.scheduled_timings``: ``guard`` lengthens the bursts by ``guard_ms``, ``align``
        pads the periods; default: as registered); changes nothing.

        Refused (400) before anything is computed when it would exceed the
        bounds of ``controller/limits.py``; the exact search gets the node
        budget of :func:`controller.limits.search_nodes`.
        """
        if not jobs:
            return None
        quantum_ms = quantum_ms or DEFAULT_QUANTUM_MS
        for job in jobs.values():
            problem = period_quanta_problem(job.period_ms, quantum_ms)
            if problem:
                raise ApiError(400, f"job {job.name}.period_ms: {problem}")
        periods = [to_quanta(job.period_ms, quantum_ms) for job in jobs.values()]
        problem = schedule_size_problem(periods, quantum_ms)
        if problem:
            raise ApiError(400, f"schedule: {problem}")
        if any(job.busy_ms is not None for job in jobs.values()):
            return self._pattern_schedule(jobs, quantum_ms, policy)
        timings = [JobTiming(job.name, job.period_ms, job.comm_ms) for job in jobs.values()]
        name, knobs = (policy.policy, PolicyKnobs(guard_ms=policy.guard_ms)) if policy else ("none", PolicyKnobs())
        outcome = self._compute_with(_compute, get_policy(name), timings, quantum_ms, knobs, search_nodes(periods),
                                     meeting_weights(jobs))
        if isinstance(outcome, Exception):
            raise ApiError(400, f"schedule: {str(outcome).splitlines()[0][:200]}")
        return outcome

    def _pattern_schedule(self, jobs: dict[str, JobRequest], quantum_ms: float,
                          policy: PolicyRequest | None) -> Schedule:
        """A set with a pattern job: its busy quanta scheduled exactly (``patternwindows``), under
        :data:`PATTERN_POLICIES` only and without a guard band."""
        if policy is not None and policy.policy not in PATTERN_POLICIES:
            raise ApiError(400, f"policy.policy: {policy.policy} does not run pattern jobs (jobs with busy_ms); "
                                f"use one of {', '.join(PATTERN_POLICIES)}")
        if policy is not None and policy.guard_ms:
            raise ApiError(400, "policy.guard_ms: no guard band with pattern jobs (jobs with busy_ms): give 0")
        try:
            patterns = [busy_pattern(job.period_ms, job.busy_ms, job.comm_ms, quantum_ms) for job in jobs.values()]
        except ValueError as exc:
            raise ApiError(400, f"schedule: {exc}"[:300]) from None
        periods = [p.period_q for p in patterns]
        return self._compute_with(pattern_set_schedule, list(jobs), patterns, quantum_ms, meeting_weights(jobs),
                                  search_nodes(periods))

    # -- policy --------------------------------------------------------------------------
    def set_policy(self, doc: dict, now_s: float | None = None) -> PolicyRequest:
        request = validate_policy(doc, now_s)
        if not self.jobs:
            raise ApiError(409, "policy: no jobs registered")
        self._refuse_while_gating("change the policy")
        if get_policy(request.policy).enforces_windows:
            self._refuse_windows_too_long(request.guard_ms)
        schedule = self.schedule_for(self.jobs, request.quantum_ms, request)
        offsets = get_policy(request.policy).initial_offsets_ms(schedule, random.Random(request.seed))
        offsets_ms = {name: float(offsets[name]) for name in self.jobs}
        self.schedule, self.policy, self.offsets_ms = schedule, request, offsets_ms
        return request

    def _refuse_windows_too_long(self, guard_ms: float) -> None:
        """400 unless every job's window is shorter than its period: the gate could never
        close a window as long as the period (``controller/gate.py``, ``GateWindow``)."""
        for job in self.jobs.values():
            window_ms = _window_ms(job.comm_ms, guard_ms)
            if not window_ms < job.period_ms:
                raise ApiError(400, f"policy.guard_ms: job {job.name}'s window, comm_ms {job.comm_ms:g} + "
                                    f"guard_ms {guard_ms:g} = {window_ms:g} ms, is not shorter than its "
                                    f"period_ms {job.period_ms:g}: a gate needs a closed part of every period")

    @property
    def enforces_windows(self) -> bool:
        """Does the current policy confine each job's traffic to its windows (the gate fires edges)?"""
        return self.policy is not None and get_policy(self.policy.policy).enforces_windows

    def windows_ms(self) -> dict[str, tuple[float, float, float]]:
        """Per job ``(period_ms, start_ms, window_ms)``: windows ``[start + k·T, start + k·T + window)``.

        ``start`` is the job's offset under the current policy (for ``gate`` its
        schedule shift), or the shift while no policy is set.
        """
        guard = self.policy.guard_ms if self.policy else 0.0
        return {j.name: (j.period_ms, self.offsets_ms.get(j.name, self.schedule.shifts_ms[j.name]),
                         max(j.comm_ms, _window_ms(self.jobs[j.name].comm_ms, guard)))
                for j in self.schedule.jobs}

    def window_arcs_ms(self) -> dict[str, list[tuple[float, float, float]]]:
        """Per job, its windows as ``(period_ms, start_ms, window_ms)``, each ``[start + k·T, start + k·T +
        window)``: one per job (:meth:`windows_ms`), or, for a set with pattern jobs, one per busy arc of
        each job on the policy's grid (``patternwindows.window_arcs``) from the job's offset."""
        if not any(job.busy_ms is not None for job in self.jobs.values()):
            return {name: [w] for name, w in self.windows_ms().items()}
        q = self.schedule.quantum_ms
        out = {}
        for j in self.schedule.jobs:
            job = self.jobs[j.name]
            start_ms = self.offsets_ms.get(j.name, self.schedule.shifts_ms[j.name])
            pattern = busy_pattern(job.period_ms, job.busy_ms, job.comm_ms, q)
            out[j.name] = [(j.period_ms, start_ms + a * q, n * q) for a, n in window_arcs(pattern)]
        return out

    def schedule_doc(self) -> dict:
        """The ``GET /schedule`` answer."""
        s = self.schedule
        doc = {"policy": self.policy.policy if self.policy else None,
               "epoch_s": self.policy.epoch_s if self.policy else None,
               "mode": self.policy.mode if self.policy else None, "jobs": {}}
        if s is None:
            return doc
        doc.update({"quantum_ms": s.quantum_ms, "hyperperiod_ms": s.hyperperiod_ms,
                    "feasible": bool(s.feasible), "overlap_ms": s.overlap_ms, "method": s.method,
                    "gap": s.gap})
        windows = self.windows_ms()
        arcs = self.window_arcs_ms()
        for j in s.jobs:
            period_ms, _start_ms, window_ms = windows[j.name]
            registered = self.jobs[j.name]
            doc["jobs"][j.name] = {"period_ms": period_ms, "comm_ms": registered.comm_ms,
                                   "padding_ms": round(period_ms - registered.period_ms, 9),
                                   "shift_ms": s.shifts_ms[j.name],
                                   "offset_ms": self.offsets_ms.get(j.name), "window_ms": window_ms,
                                   "workers": list(self.jobs[j.name].workers)}
            if registered.busy_ms is not None:  # a pattern job: its windows from its offset, on the grid
                offset_ms = self.offsets_ms.get(j.name, s.shifts_ms[j.name])
                doc["jobs"][j.name]["windows_ms"] = [[round(start - offset_ms, 9), length]
                                                     for _, start, length in arcs[j.name]]
        return doc
