"""Scenario YAML -> typed, validated objects. All checks happen here, once.

Every problem is raised as one ``InputError`` line naming the file, the field
and what is wrong, e.g. ``two.yaml: jobs[1].perod_ms: unknown key (did you
mean 'period_ms'?)``. The rest of shiftbed trusts the objects it gets.

Keys (``*`` = required)::

    name*  description  quantum_ms (default 1)  policies [none, shift, ...]  duration_s
    guard_ms (the guard policy's band, default 10)  realign_s (re-align shift every this many s)
    transport (iperf3: a fresh iperf3 test per burst, the default | persistent: standing connections)
    time_scale (>= 1, default 1: the fabric runs every time K times longer and every link K times
    slower, the same bytes per burst; figures come back in the scenario's units, ``scenarios/timescale.py``)
    policy_files [my_policy.py, ...]  (paths relative to the scenario file; docs/policies.md)
    fabric: spines* leaves* hosts_per_leaf* host_link_mbps* fabric_link_mbps*  queue_ms  tcp_rto_min_ms
    jobs*: - name* (letters, digits, - _ ., at most 32)  period_ms* comm_ms*  (or model: <zoo name>)  workers [h1, h3]
             pattern (ring|ps)  pin_spine  gradient_mb  jitter_ms
             model_workers  model_link_mbps (default 10000)  time_scale (default 1)
           or, for a job whose iteration sends several collectives (a pattern job; run over standing connections):
             period_ms* phases*: - start_ms* message_bytes* collective (allreduce|alltoall|p2p)
             or profile: <name>  bucket_cap_mb  dtype (fp32|fp16|bf16)  profile_workers

A job given by ``model`` gets its period and burst from the zoo
(``controller/theory/zoo.py``) at ``model_link_mbps`` with ``len(workers)`` (or
``model_workers``) workers; times are kept and bytes scaled to the fabric.
A pattern job gives its iteration as phases (the shape ``shiftbed trace --out``
writes) or as a model profile (``controller/theory/profiles.py``): each phase is a
collective of ``message_bytes`` starting ``start_ms`` into the iteration, timed on
the link at ``model_link_mbps`` among ``len(workers)`` (or ``profile_workers``)
workers (``controller/theory/phases.py``); its ``comm_ms`` is that link time added
up. ``plan`` decides it exactly (``scenarios/planning.py``); ``run`` sends each phase as
its own burst over standing connections (``transport: persistent``), under ``none``,
``shift`` or ``gate``; ``batch`` and ``explore`` refuse it (:meth:`Scenario.require_runnable`).
Each flow of a job has its own server port, from the job's block of
``topo.tcp_ports.PORTS_PER_JOB`` (10): a ring of up to 10 workers, a
parameter server with up to 5 others (2(n − 1) flows).

Bounds are shared, not repeated: a job's name, period and the size of the
schedule come from ``controller/limits.py`` (the scheduler's REST API applies
the same), the fabric's from ``topo/wiring.py`` (the fabric builder applies
the same), so what ``plan`` accepts, ``run`` can build.
"""

from __future__ import annotations

import difflib
import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml

from apps.jobmodel import TRANSPORTS, phase_pairs
from controller import limits
from controller.theory import zoo
from controller.theory.phases import JobPattern, as_pattern, busy_total_ms
from controller.theory.policies import (
    DEFAULT_POLICIES,
    POLICIES,
    PolicyFileError,
    PolicyKnobs,
    export_policy_files,
    load_policy_file,
)
from controller.theory.schedule import JobTiming, comm_quanta, period_quanta, quantize_job
from scenarios.errors import InputError
from scenarios.errors import kind_of as _kind
from scenarios.errors import short_repr as _short
from scenarios.patternjob import PROFILE_KEYS, PatternFields
from scenarios.policyfiles import writable_by_others
from topo.tcp_ports import PORTS_PER_JOB
from topo.wiring import (
    DEFAULT_QUEUE_MS,
    KERNEL_TCP_RTO_MIN_MS,
    MAX_QUEUE_MS,
    MAX_TCP_RTO_MIN_MS,
    FabricParamError,
    FabricParams,
    check_queue_ms,
    check_tcp_rto_min_ms,
)

PATTERNS = ("ring", "ps")
TOP_KEYS = ("name", "description", "quantum_ms", "policies", "policy_files", "duration_s", "guard_ms", "realign_s",
            "transport", "time_scale", "fabric", "jobs")
FABRIC_KEYS = ("spines", "leaves", "hosts_per_leaf", "host_link_mbps", "fabric_link_mbps", "queue_ms",
               "tcp_rto_min_ms")
FABRIC_REQUIRED = FABRIC_KEYS[:5]
JOB_KEYS = ("name", "period_ms", "comm_ms", "workers", "pattern", "pin_spine", "gradient_mb",
            "jitter_ms", "model", "model_workers", "model_link_mbps", "time_scale", "phases", "profile",
            "bucket_cap_mb", "dtype", "profile_workers")
MAX_DURATION_S = 3600.0
MAX_MODEL_WORKERS = 100_000


@dataclass(frozen=True)
class FabricSpec:
    """Leaf-spine fabric; hosts are ``h1 .. h{leaves*hosts_per_leaf}``, leaf by leaf."""

    spines: int
    leaves: int
    hosts_per_leaf: int
    host_link_mbps: float
    fabric_link_mbps: float
    queue_ms: float | None = None  # each port's data queue, ms at its link rate; None: the fabric's default
    tcp_rto_min_ms: float | None = None  # the hosts' minimum TCP retransmission timeout; None: the kernel's

    @property
    def hosts(self) -> tuple[str, ...]:
        return tuple(f"h{i}" for i in range(1, self.leaves * self.hosts_per_leaf + 1))


@dataclass(frozen=True)
class ScenarioJob:
    """One job as the scenario gives it (solo times, not yet on the grid)."""

    name: str
    period_ms: float
    comm_ms: float
    workers: tuple[str, ...] = ()
    pattern: str = "ring"
    pin_spine: int | None = None
    gradient_mb: float | None = None  # None: sized so a solo burst takes comm_ms on the fabric
    jitter_ms: float = 0.0
    model: str | None = None
    # a pattern job (``phases`` or ``profile``): its iteration as collectives; None: one burst
    comm_pattern: JobPattern | None = None
    link_mbps: float = zoo.DEFAULT_MODEL_LINK_MBPS  # the rate its phases are timed at (model_link_mbps)
    profile: str | None = None

    @property
    def pattern_key(self) -> str:
        """The key that gave a pattern job its phases (for messages)."""
        return "profile" if self.profile else "phases"


@dataclass(frozen=True)
class Scenario:
    """A validated scenario file."""

    path: str
    name: str
    quantum_ms: float
    jobs: tuple[ScenarioJob, ...]
    fabric: FabricSpec | None = None
    description: str = ""
    policies: tuple[str, ...] = ("none", "shift", "gate", "random")
    duration_s: float | None = None
    policy_files: tuple[str, ...] = ()  # resolved paths, already loaded
    knobs: PolicyKnobs = PolicyKnobs()  # guard_ms, realign_s
    transport: str = TRANSPORTS[0]  # how the jobs' flows travel (apps.jobmodel.TRANSPORTS)
    transport_given: bool = False  # the file says which (else the default, which a machine may change)
    time_scale: float = 1.0  # K: the fabric runs K times slower (scenarios/timescale.py)

    def timings(self, quantum_ms: float | None = None) -> list[JobTiming]:
        """The jobs on the quantum grid (period to nearest, comm rounded up)."""
        q = quantum_ms or self.quantum_ms
        return [quantize_job(j.name, j.period_ms, j.comm_ms, q) for j in self.jobs]

    @property
    def pattern_jobs(self) -> tuple[int, ...]:
        """The indices of the jobs given by their phases (``phases`` or ``profile``)."""
        return tuple(i for i, job in enumerate(self.jobs) if job.comm_pattern is not None)

    def busy_patterns(self, quantum_ms: float | None = None) -> list:
        """Every job's busy quanta on the grid (``arcs.Pattern``): a pattern job's phases at its link rate
        (``phases.as_pattern``), any other job its one burst at the start of its period. InputError where
        the grid is too coarse for a pattern job to leave its link idle at all."""
        from controller.theory.arcs import Pattern

        q = quantum_ms or self.quantum_ms
        found = []
        for i, job in enumerate(self.jobs):
            if job.comm_pattern is None:
                found.append(Pattern.rectangle(period_quanta(job.period_ms, q), comm_quanta(job.comm_ms, q)))
                continue
            busy = as_pattern(job.comm_pattern, job.link_mbps, q)
            if busy.busy_q >= busy.period_q:
                raise InputError(f"{self.path}: jobs[{i}].{job.pattern_key}: on the {q:g} ms grid its phases keep "
                                 f"the link busy the whole period ({busy.period_q * q:g} ms): use a smaller quantum_ms")
            found.append(busy)
        return found

    def require_runnable(self, patterns: bool = False) -> None:
        """Check what ``run`` needs beyond ``plan``: a fabric and workers for every job; a pattern job only
        where ``patterns`` (``run``: each phase its own burst over standing connections), else refused."""
        for i in self.pattern_jobs:
            key = f"{self.path}: jobs[{i}].{self.jobs[i].pattern_key}"
            if not patterns:
                raise InputError(f"{key}: a pattern job runs with shiftbed run only (give period_ms and comm_ms)")
            if self.transport != "persistent":
                raise InputError(f"{self.path}: transport: a pattern job ({self.jobs[i].name}) sends each phase over "
                                 "standing connections: give transport: persistent (iperf3 runs one burst per test)")
            if self.jobs[i].pattern != "ring":
                raise InputError(f"{self.path}: jobs[{i}].pattern: a pattern job's phases are rings, got "
                                 f"{self.jobs[i].pattern}")
            if self.time_scale != 1:
                raise InputError(f"{key}: a pattern job runs at time scale 1 only (its phases keep their times)")
        if self.fabric is None:
            raise InputError(f"{self.path}: fabric: required to run a scenario")
        for i, job in enumerate(self.jobs):
            if len(job.workers) < 2:
                raise InputError(f"{self.path}: jobs[{i}].workers: need at least two workers to run, got {len(job.workers)}")
            flows = sum(len(phase) for phase in phase_pairs(job.workers, job.pattern))
            if flows > PORTS_PER_JOB:  # each flow has its own server port, from the job's block of ports
                raise InputError(f"{self.path}: jobs[{i}].workers: a {job.pattern} of {len(job.workers)} workers "
                                 f"makes {flows} flows, more than the {PORTS_PER_JOB} ports a job has")


def load(path: str | Path) -> Scenario:
    """Read and validate a scenario file."""
    path = str(path)
    try:
        text = Path(path).read_text()
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except (IsADirectoryError, PermissionError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read: {exc.__class__.__name__}") from None
    return parse(text, path)


def parse(text: str, path: str = "<scenario>") -> Scenario:
    """Validate scenario YAML text; ``path`` names it in messages."""
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark else "YAML"
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise InputError(f"{path}: {where}: YAML syntax error: {problem}") from None
    if doc is None:
        raise InputError(f"{path}: (top level): empty file, expected a mapping with 'name' and 'jobs'")
    return _Checker(path).scenario(doc)


def with_time_scale(scenario: Scenario, time_scale: float, field: str = "--time-scale") -> Scenario:
    """``scenario`` to run at ``time_scale`` (K >= 1, finite); InputError naming ``field`` where it is
    not one, or where a job's period times K is longer than a job may have."""
    if not (isinstance(time_scale, int | float) and not isinstance(time_scale, bool)
            and math.isfinite(time_scale) and time_scale >= 1):
        raise InputError(f"{field}: must be a number >= 1, got {_short(time_scale)}")
    queue_ms = (scenario.fabric.queue_ms if scenario.fabric else None) or DEFAULT_QUEUE_MS
    if queue_ms * time_scale > MAX_QUEUE_MS:
        raise InputError(f"{field}: the ports' queue of {queue_ms:g} ms times {time_scale:g} is more than "
                         f"the {MAX_QUEUE_MS:g} ms a queue may hold")
    rto_ms = (scenario.fabric.tcp_rto_min_ms if scenario.fabric else None) or KERNEL_TCP_RTO_MIN_MS
    if rto_ms * time_scale > MAX_TCP_RTO_MIN_MS:
        raise InputError(f"{field}: the hosts' minimum TCP retransmission timeout of {rto_ms:g} ms times "
                         f"{time_scale:g} is more than the {MAX_TCP_RTO_MIN_MS:g} ms a host may have "
                         "(set fabric.tcp_rto_min_ms lower)")
    for what, value_ms, most_ms in (("quantum_ms", scenario.quantum_ms, limits.MAX_QUANTUM_MS),
                                    ("guard_ms", scenario.knobs.guard_ms, limits.MAX_GUARD_MS)):
        if value_ms * time_scale > most_ms:
            raise InputError(f"{field}: {what} {value_ms:g} times {time_scale:g} is more than the {most_ms:g} ms "
                             "the controller accepts")
    for job in scenario.jobs:
        if job.period_ms * time_scale > limits.MAX_PERIOD_MS:
            raise InputError(f"{field}: {job.name}'s period {job.period_ms:g} ms times {time_scale:g} is more than "
                             f"the {limits.MAX_PERIOD_MS:g} ms a job may have")
    return replace(scenario, time_scale=float(time_scale))


class _Checker(PatternFields):
    """Explicit checks, each raising one line that names file and field (a pattern job's: ``PatternFields``)."""

    def __init__(self, path: str):
        self.path = path

    def fail(self, field: str, problem: str):
        raise InputError(f"{self.path}: {field}: {problem}")

    def mapping(self, value: Any, field: str, allowed: tuple[str, ...], required: tuple[str, ...]) -> dict:
        if not isinstance(value, dict):
            self.fail(field, f"expected a mapping, got {_kind(value)}")
        prefix = f"{field}." if field != "(top level)" else ""
        for key in value:
            if key not in allowed:
                near = difflib.get_close_matches(str(key), allowed, n=1)
                hint = f" (did you mean '{near[0]}'?)" if near else f" (known: {', '.join(allowed)})"
                shown = key if isinstance(key, str) and key.isidentifier() else _short(key)  # one line
                self.fail(f"{prefix}{shown}", f"unknown key{hint}")
        for key in required:
            if key not in value:
                self.fail(f"{prefix}{key}", "missing required key")
        return value

    def number(self, value: Any, field: str, *, minimum: float = 0.0, strict: bool = True,
               maximum: float = math.inf) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            self.fail(field, f"must be a number, got {_short(value)}")
        try:
            number = float(value)
        except OverflowError:  # an int beyond any float
            number = math.inf
        if not math.isfinite(number):
            self.fail(field, f"must be finite, got {_short(value)}")
        if number < minimum or (strict and number == minimum):
            self.fail(field, f"must be {'>' if strict else '>='} {minimum:g}, got {value!r}")
        if number > maximum:
            self.fail(field, f"must be <= {maximum:g}, got {value!r}")
        return number

    def integer(self, value: Any, field: str, minimum: int = 1, maximum: int | None = None) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            self.fail(field, f"must be a whole number, got {_short(value)}")
        if value < minimum:
            self.fail(field, f"must be >= {minimum}, got {_short(value)}")
        if maximum is not None and value > maximum:
            self.fail(field, f"must be <= {maximum}, got {_short(value)}")
        return value

    def text(self, value: Any, field: str) -> str:
        if not isinstance(value, str) or not value.strip():
            self.fail(field, f"must be a non-empty string, got {_short(value)}")
        return value

    def scenario(self, doc: Any) -> Scenario:
        doc = self.mapping(doc, "(top level)", TOP_KEYS, ("name", "jobs"))
        name = self.text(doc["name"], "name")
        quantum_ms = self.number(doc.get("quantum_ms", 1.0), "quantum_ms", maximum=limits.MAX_QUANTUM_MS)
        description = doc.get("description", "")
        if not isinstance(description, str):
            self.fail("description", f"must be a string, got {_kind(description)}")
        policy_files = self.policy_files(doc.get("policy_files", []))
        policies = self.policies(doc.get("policies", list(DEFAULT_POLICIES)))
        duration_s = None
        if "duration_s" in doc:
            duration_s = self.number(doc["duration_s"], "duration_s", maximum=MAX_DURATION_S)
        fabric = self.fabric(doc["fabric"]) if doc.get("fabric") is not None else None
        jobs_doc = doc["jobs"]
        if not isinstance(jobs_doc, list) or not jobs_doc:
            self.fail("jobs", f"expected a non-empty list of jobs, got {_kind(jobs_doc)}")
        if len(jobs_doc) > limits.MAX_JOBS:
            self.fail("jobs", f"at most {limits.MAX_JOBS} jobs, got {len(jobs_doc)}")
        jobs, seen = [], {}
        for i, job_doc in enumerate(jobs_doc):
            job = self.job(job_doc, f"jobs[{i}]", quantum_ms, fabric)
            if job.name in seen:
                self.fail(f"jobs[{i}].name", f"duplicate job name {job.name!r} (also jobs[{seen[job.name]}])")
            seen[job.name] = i
            jobs.append(job)
        problem = limits.schedule_size_problem([period_quanta(j.period_ms, quantum_ms) for j in jobs], quantum_ms)
        if problem:
            self.fail("jobs", problem)
        transport = doc.get("transport", TRANSPORTS[0])
        if transport not in TRANSPORTS:
            self.fail("transport", f"must be one of {', '.join(TRANSPORTS)}, got {_short(transport)}")
        scenario = Scenario(self.path, name, quantum_ms, tuple(jobs), fabric, description, policies, duration_s,
                            policy_files, self.knobs(doc, jobs), transport, transport_given="transport" in doc)
        if scenario.pattern_jobs:
            scenario.busy_patterns()  # the grid leaves each pattern job some idle time
        if doc.get("time_scale") is not None:
            scenario = with_time_scale(scenario, self.number(doc["time_scale"], "time_scale", minimum=1.0,
                                                             strict=False), f"{self.path}: time_scale")
        return scenario

    def knobs(self, doc: dict, jobs: list[ScenarioJob]) -> PolicyKnobs:
        """``guard_ms`` (>= 0, leaving every job some computation) and ``realign_s`` (> 0)."""
        knobs = PolicyKnobs()
        if doc.get("guard_ms") is not None:
            guard_ms = self.number(doc["guard_ms"], "guard_ms", strict=False, maximum=limits.MAX_GUARD_MS)
            for j in jobs:
                if guard_ms >= j.period_ms - j.comm_ms:
                    self.fail("guard_ms", f"must be less than every job's period_ms - comm_ms "
                              f"({j.name}: {j.period_ms - j.comm_ms:g}), got {guard_ms:g}")
            knobs = PolicyKnobs(guard_ms=guard_ms)
        if doc.get("realign_s") is not None:
            knobs = PolicyKnobs(knobs.guard_ms, self.number(doc["realign_s"], "realign_s", maximum=MAX_DURATION_S))
        return knobs

    def policy_files(self, value: Any) -> tuple[str, ...]:
        """Load each policy file (relative to the scenario file) so its policies can be named below."""
        if not isinstance(value, list):
            self.fail("policy_files", f"expected a list of .py files, got {_kind(value)}")
        base = Path(self.path).parent
        loaded = []
        for i, entry in enumerate(value):
            if not isinstance(entry, str) or not entry.strip():
                self.fail(f"policy_files[{i}]", f"must be a path to a .py file, got {entry!r}")
            path = Path(entry) if Path(entry).is_absolute() else base / entry
            problem = writable_by_others(path)
            if problem:
                self.fail(f"policy_files[{i}]", problem)
            try:
                load_policy_file(path)
            except PolicyFileError as exc:
                self.fail(f"policy_files[{i}]", str(exc))
            loaded.append(str(path.resolve()))
        export_policy_files()
        return tuple(loaded)

    def policies(self, value: Any) -> tuple[str, ...]:
        if not isinstance(value, list) or not value:
            self.fail("policies", f"expected a non-empty list of policy names, got {_kind(value)}")
        for i, p in enumerate(value):
            if p not in POLICIES:
                near = difflib.get_close_matches(str(p), POLICIES, n=1)
                hint = f" (did you mean '{near[0]}'?)" if near else f" (known: {', '.join(POLICIES)})"
                self.fail(f"policies[{i}]", f"unknown policy {p!r}{hint}")
        return tuple(value)

    def fabric(self, doc: Any) -> FabricSpec:
        """Types here; bounds from the fabric builder's own checks (``topo/wiring.py``)."""
        doc = self.mapping(doc, "fabric", FABRIC_KEYS, FABRIC_REQUIRED)
        counts = {k: self.integer(doc[k], f"fabric.{k}") for k in ("spines", "leaves", "hosts_per_leaf")}
        rates = {k: self.number(doc[k], f"fabric.{k}") for k in ("host_link_mbps", "fabric_link_mbps")}
        optional = {k: self.number(doc[k], f"fabric.{k}") for k in ("queue_ms", "tcp_rto_min_ms")
                    if doc.get(k) is not None}
        try:
            FabricParams(**counts, **{k: doc[k] for k in rates})  # as written: its message quotes them
            if "queue_ms" in optional:
                check_queue_ms(optional["queue_ms"])
            if "tcp_rto_min_ms" in optional:
                check_tcp_rto_min_ms(optional["tcp_rto_min_ms"])
        except FabricParamError as exc:
            self.fail(f"fabric.{exc.field}", exc.problem)
        return FabricSpec(**counts, **rates, **optional)

    def job(self, doc: Any, field: str, quantum_ms: float, fabric: FabricSpec | None) -> ScenarioJob:
        doc = self.mapping(doc, field, JOB_KEYS, ("name",))
        problem = limits.job_name_problem(doc["name"])
        if problem:
            self.fail(f"{field}.name", problem)
        name = doc["name"]
        workers = self.workers(doc.get("workers", []), f"{field}.workers", fabric)
        for key in PROFILE_KEYS:
            if key in doc and "profile" not in doc:
                self.fail(f"{field}.{key}", "only with 'profile' (a model profile's DDP settings)")
        comm_pattern, link_mbps = None, zoo.DEFAULT_MODEL_LINK_MBPS
        if "profile" in doc or "phases" in doc:
            comm_pattern, link_mbps = self.pattern(doc, field, workers)
            period_ms, comm_ms, model = comm_pattern.iteration_ms, busy_total_ms(comm_pattern, link_mbps), None
        elif "model" in doc:
            period_ms, comm_ms, model = self.model_times(doc, field, workers)
        else:
            for key in ("period_ms", "comm_ms"):
                if key not in doc:
                    self.fail(f"{field}.{key}", "missing required key (or give 'model', 'phases' or 'profile')")
            period_ms = self.number(doc["period_ms"], f"{field}.period_ms", maximum=limits.MAX_PERIOD_MS)
            comm_ms = self.number(doc["comm_ms"], f"{field}.comm_ms")
            model = None
        if comm_pattern is None and comm_ms >= period_ms:
            self.fail(f"{field}.comm_ms", f"must be less than period_ms ({period_ms:g}), got {comm_ms:g}")
        problem = limits.period_quanta_problem(period_ms, quantum_ms)
        if problem:
            self.fail(f"{field}.period_ms", problem)
        t, c = period_quanta(period_ms, quantum_ms), comm_quanta(comm_ms, quantum_ms)
        if comm_pattern is None and c >= t:
            self.fail(f"{field}.comm_ms", f"on the {quantum_ms:g} ms grid comm rounds up to {c * quantum_ms:g} ms, "
                      f"not less than period {t * quantum_ms:g} ms: use a smaller quantum_ms")
        pattern = doc.get("pattern", "ring")
        if pattern not in PATTERNS:
            self.fail(f"{field}.pattern", f"must be one of {', '.join(PATTERNS)}, got {pattern!r}")
        pin = None
        if doc.get("pin_spine") is not None:
            pin = self.integer(doc["pin_spine"], f"{field}.pin_spine")
            if fabric is not None and pin > fabric.spines:
                self.fail(f"{field}.pin_spine", f"the fabric has {fabric.spines} spine(s), got {pin}")
        gradient = self.number(doc["gradient_mb"], f"{field}.gradient_mb") if "gradient_mb" in doc else None
        jitter = self.number(doc.get("jitter_ms", 0.0), f"{field}.jitter_ms", strict=False)
        return ScenarioJob(name, period_ms, comm_ms, workers, pattern, pin, gradient, jitter, model, comm_pattern,
                           link_mbps, doc.get("profile"))

    def workers(self, value: Any, field: str, fabric: FabricSpec | None) -> tuple[str, ...]:
        if not isinstance(value, list):
            self.fail(field, f"expected a list of host names like [h1, h3], got {_kind(value)}")
        hosts = fabric.hosts if fabric else None
        for k, w in enumerate(value):
            if not isinstance(w, str):
                self.fail(f"{field}[{k}]", f"must be a host name like 'h1', got {_short(w)}")
            if hosts is not None and w not in hosts:
                self.fail(f"{field}[{k}]", f"{_short(w)} is not a host of the fabric (hosts are h1..h{len(hosts)})")
            if w in value[:k]:
                self.fail(f"{field}[{k}]", f"worker {w!r} is used twice in this job")
        return tuple(value)

    def model_times(self, doc: dict, field: str, workers: tuple[str, ...]) -> tuple[float, float, str]:
        model = doc["model"]
        known = zoo.models()
        if not isinstance(model, str) or model not in known:
            near = difflib.get_close_matches(str(model), known, n=1)
            hint = f" (did you mean '{near[0]}'?)" if near else f" (known: {', '.join(known)})"
            self.fail(f"{field}.model", f"unknown model {model!r}{hint}")
        for key in ("period_ms", "comm_ms"):
            if key in doc:
                self.fail(f"{field}.{key}", "give either 'model' or period_ms/comm_ms, not both")
        n = self.collective_workers(doc, field, workers, "model_workers", MAX_MODEL_WORKERS,
                                    "a model job needs at least two workers (or model_workers) to size its all-reduce")
        link = self.number(doc.get("model_link_mbps", zoo.DEFAULT_MODEL_LINK_MBPS), f"{field}.model_link_mbps")
        scale = self.number(doc.get("time_scale", 1.0), f"{field}.time_scale")
        timing = zoo.job_timing(model, n, link, scale)
        if not timing.period_ms <= limits.MAX_PERIOD_MS:
            self.fail(f"{field}.model", f"{model} gives a period of {timing.period_ms:g} ms at model_link_mbps "
                      f"{link:g} and time_scale {scale:g}, more than the {limits.MAX_PERIOD_MS:g} ms a job may have")
        return timing.period_ms, timing.comm_ms, model
