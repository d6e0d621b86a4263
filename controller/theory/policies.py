"""The policies, one small class each, by name: the same names in theory and emulation.

A policy decides these things, and nothing else:

- ``initial_offsets_ms(schedule, rng)``: where each job's *first burst* starts
  relative to the common epoch. Offsets are burst starts, the convention of
  ``Schedule.shifts_ms``, ``controller/gate.py`` and ``apps/dltjob.py``: a
  job computes first and its iteration 0 burst begins at ``epoch + offset``.
- ``waits_for_window(iteration)``: whether iteration ``iteration``'s burst
  waits for the start of the job's next *window* (re-alignment). A job's
  windows are ``[offset + k·T, offset + k·T + c)`` after the epoch, with ``T``
  and ``c`` the schedule's on-grid period and burst.
- ``enforces_windows``: whether the fabric confines the job's traffic to its
  windows (the controller opens and closes them in the switches).
- ``scheduled_timings(timings, quantum_ms, knobs)``: the jobs as its schedule
  sees them (grid values; default unchanged). :func:`policy_schedule` computes
  the schedule from them, the same way for ``plan``, ``sweep`` and ``run``.
- ``sharing`` and ``priority_order(schedule)``: how bursts that meet share
  the link: ``"fair"`` (max-min, the default), ``"priority"`` (strict, in
  ``priority_order``) or ``"mltcp"`` (weights growing with the bytes sent).
  ``"leader"`` is the same rule at a smaller gain: not a policy's choice but
  how TCP shares the emulated fabric, which a run's model uses where a policy
  says ``"fair"``.

``none``, ``shift``, ``random``, ``priority`` and ``mltcp`` never wait and are
not enforced; ``gate`` and ``guard`` wait every iteration and are enforced.
:class:`PolicyKnobs` holds what a scenario or the command line sets for them. The fluid model
(``controller/theory/fluid.py``), the scheduler (``controller/scheduler.py``), the
job driver (``apps/dltjob.py``) and the run (``scenarios/experiment/runner.py``) ask
these questions and never test a policy's name.

Adding a policy: subclass :class:`Policy`, give it a ``name``, decorate it with
``@register``. In a file of your own, load it with ``--policy-file FILE.py``
(``plan``, ``sweep``, ``run``) or a scenario's ``policy_files:`` list; the
controller and job processes a run starts load the same files (they inherit
:data:`POLICY_FILES_ENV`). docs/policies.md has a complete example.
"""

from __future__ import annotations

import difflib
import importlib.util
import itertools
import math
import os
import random as _random
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from controller.theory.align import align_periods
from controller.theory.floatsum import left_to_right_sum
from controller.theory.schedule import JobTiming, Schedule, compute_schedule

# The guard policy's band: the gate's edges land 5.7-7.3 ms late at p95 with traffic on the
# fabric (docs/gate.md), and a burst's launch jitters by a few ms more; 10 ms covers both.
DEFAULT_GUARD_MS = 10.0
SHARING = ("fair", "priority", "mltcp", "leader")
# mltcp's weight: 1 + MLTCP_GAIN x the share of its burst already sent (the published rule's slope)
MLTCP_GAIN = 1.0
# leader: the same rule at LEADER_GAIN, what TCP does on the emulated fabric, where every burst opens
# fresh connections and the burst further along keeps more of the link (docs/accuracy.md, "Free-running
# jobs lock in or drift apart")
LEADER_GAIN = 0.25
PROGRESS_GAIN = {"mltcp": MLTCP_GAIN, "leader": LEADER_GAIN}  # sharings whose weights grow with the bytes sent
# where a policy leaves sharing to TCP ("fair"): the ideal max-min fair model, or the emulated fabric's
TCP_SHARING = ("fair", "leader")

POLICY_FILES_ENV = "SHIFTBED_POLICY_FILES"  # os.pathsep-separated absolute paths


class UnknownPolicy(ValueError):
    """A policy name that is not registered (the message suggests the nearest)."""


class PolicyFileError(ValueError):
    """A policy file that is missing, fails to import, or registers no policy (one line)."""


@dataclass(frozen=True)
class PolicyKnobs:
    """What a scenario (or the command line) sets for the policies.

    ``guard_ms``: the ``guard`` policy's band (:data:`DEFAULT_GUARD_MS`).
    ``realign_s``: for a policy that uses the schedule but enforces no windows
    (``shift``), the first burst after every ``realign_s`` of time waits for its
    job's next window start (the scheduler re-measures and re-shifts); None: never.
    """

    guard_ms: float = DEFAULT_GUARD_MS
    realign_s: float | None = None


class Policy:
    """Base class: every job bursts first at the epoch and then runs free."""

    name: str = ""
    description: str = ""
    uses_schedule: bool = False  # its offsets (or windows) come from the schedule's shifts
    enforces_windows: bool = False  # the fabric confines each job's traffic to its windows
    sharing: str = "fair"  # how bursts that meet share the link: one of SHARING
    emulated: bool = True  # the fabric can run it (False: a model only, for plan and sweep)

    def scheduled_timings(self, timings: Sequence[JobTiming], quantum_ms: float,
                          knobs: PolicyKnobs) -> list[JobTiming]:
        """The jobs as this policy's schedule sees them (grid values). Default: unchanged."""
        return list(timings)

    def priority_order(self, schedule: Schedule) -> list[str]:
        """Job names, highest priority first (used when ``sharing == "priority"``). Default: scenario order."""
        return [j.name for j in schedule.jobs]

    def initial_offsets_ms(self, schedule: Schedule, rng: _random.Random) -> dict[str, float]:
        """Each job's first burst start, ms after the epoch, in ``[0, period)``."""
        raise NotImplementedError

    def waits_for_window(self, iteration: int) -> bool:
        """Does iteration ``iteration``'s burst (0 = the first) wait for the job's next window start?

        Default: exactly when the windows are enforced (a gated burst would
        otherwise be held in the switch).
        """
        return self.enforces_windows

    def link_sharing(self, tcp_sharing: str = "fair") -> str:
        """How its bursts share a link in the model: ``tcp_sharing`` (one of :data:`TCP_SHARING`)
        where the policy leaves it to TCP (its ``sharing`` is ``"fair"``), else its own."""
        return tcp_sharing if self.sharing == "fair" else self.sharing

    def realigns(self, iterations: int = 64) -> bool:
        """Does the policy wait for a window at least once in the first ``iterations`` iterations?"""
        return self.enforces_windows or any(self.waits_for_window(k) for k in range(iterations))


def policy_schedule(pol: Policy, timings: Sequence[JobTiming], quantum_ms: float,
                    knobs: PolicyKnobs = PolicyKnobs(), **kwargs) -> Schedule:
    """The schedule ``pol`` works with: :func:`compute_schedule` of its ``scheduled_timings`` of the
    grid ``timings`` (``kwargs`` go to :func:`compute_schedule`). ValueError if the policy cannot
    schedule these jobs."""
    return compute_schedule(pol.scheduled_timings(timings, quantum_ms, knobs), quantum_ms, **kwargs)


def progress_weights(sending: list[int], sharing: str, sent: list[float],
                     remaining: list[float]) -> dict[int, float] | None:
    """Each sending burst's weight, ``1 + gain × the share of its burst already sent``, for a sharing in
    :data:`PROGRESS_GAIN` with two or more bursts sending; else None (no weights)."""
    gain = PROGRESS_GAIN.get(sharing)
    if gain is None or len(sending) < 2:
        return None
    return {i: 1.0 + gain * sent[i] / max(sent[i] + remaining[i], 1e-9) for i in sending}


def link_shares(jobs: Sequence, sending: list[int], sharing: str, rank: list[int],
                sent: list[float], remaining: list[float]) -> dict[int, float]:
    """Each burst on the link's speed relative to alone (1 = its solo rate).

    The link is 1; a burst alone at its solo rate takes ``1 / link_headroom``
    of it. ``fair``: each of ``n`` gets ``1/n`` of the link, at most its solo
    rate. ``priority``: in ``rank`` order, each takes its solo rate or what is
    left. ``mltcp``: weighted max-min fair, each capped at its solo rate, the
    weight ``1 + MLTCP_GAIN × the share of its burst already sent``.
    """
    if sharing == "priority":
        out, left = {}, 1.0
        for i in sorted(sending, key=lambda i: rank[i]):
            take = min(1.0 / jobs[i].link_headroom, left) if left > 1e-12 else 0.0
            out[i], left = take * jobs[i].link_headroom, left - take
        return out
    weight = progress_weights(sending, sharing, sent, remaining)
    if weight is not None:
        out, left, total = {}, 1.0, left_to_right_sum(weight.values())  # the compiled model's total
        for i in sorted(sending, key=lambda i: 1.0 / (jobs[i].link_headroom * weight[i])):  # smallest cap first
            cap = 1.0 / jobs[i].link_headroom
            take = cap if cap * total <= left * weight[i] else left * weight[i] / total
            out[i], left, total = take * jobs[i].link_headroom, left - take, total - weight[i]
        return out
    return {i: min(1.0, jobs[i].link_headroom / len(sending)) for i in sending}


POLICIES: dict[str, Policy] = {}
DEFAULT_POLICIES = ("none", "shift", "gate", "random")  # what a scenario without `policies:` runs
_LOADED_FILES: dict[str, list[str]] = {}  # resolved path -> names it registered
_SOURCES: dict[str, str] = {}  # resolved path -> the source it was loaded from
_LOAD_LOCK = threading.RLock()  # a dask worker runs tasks in threads
_MODULE_NUMBERS = itertools.count()


def register(cls: type[Policy]) -> type[Policy]:
    """Class decorator: make the policy available by its ``name``."""
    if not isinstance(cls, type) or not issubclass(cls, Policy):
        raise TypeError(f"@register: {cls!r} is not a subclass of controller.theory.policies.Policy")
    if not cls.name or cls.name in POLICIES:
        raise ValueError(f"policy name {cls.name!r} is empty or taken")
    POLICIES[cls.name] = cls()
    return cls


def get_policy(name: str) -> Policy:
    """The registered policy called ``name``."""
    try:
        return POLICIES[name]
    except KeyError:
        near = difflib.get_close_matches(name, POLICIES, n=1)
        hint = f" (did you mean {near[0]!r}?)" if near else ""
        raise UnknownPolicy(f"unknown policy {name!r}{hint}; known: {', '.join(POLICIES)}") from None


def load_policy_file(path: str | os.PathLike) -> list[str]:
    """Import a policy file so that its ``@register`` runs; the names it registered.

    Loading the same file twice is a no-op (same names). Raises
    :class:`PolicyFileError` (one line naming the file) if it does not exist,
    fails to import, or registers nothing.
    """
    p = Path(path)
    if not p.is_file():
        raise PolicyFileError(f"{path}: no such policy file")
    if p.suffix != ".py":
        raise PolicyFileError(f"{path}: a policy file is a Python file ending in .py")
    key = str(p.resolve())
    with _LOAD_LOCK:
        if key in _LOADED_FILES:
            return list(_LOADED_FILES[key])
        return _register_source(key, p.read_text(), str(path))


def load_policy_source(path: str, source: str) -> list[str]:
    """Register the policies of ``source``, the text of the policy file ``path`` as loaded on another
    machine: a dask worker gets the file's source with its tasks, not the file
    (``controller/theory/parallel.py``). The same source again is a no-op; a changed one replaces
    the policies the earlier one registered. :class:`PolicyFileError` as :func:`load_policy_file`."""
    with _LOAD_LOCK:
        if path in _LOADED_FILES and _SOURCES.get(path) == source:
            return list(_LOADED_FILES[path])
        for name in _LOADED_FILES.pop(path, ()):
            POLICIES.pop(name, None)
        return _register_source(path, source, path)


def policy_sources() -> dict[str, str]:
    """{resolved path: source} of the policy files loaded here (what :func:`load_policy_source` takes)."""
    return {path: _SOURCES[path] for path in _LOADED_FILES if path in _SOURCES}


def _register_source(key: str, source: str, shown: str) -> list[str]:
    """Run a policy file's ``source`` as a module named after ``key``; the names it registered."""
    before = set(POLICIES)
    module_name = f"shiftbed_policy_{next(_MODULE_NUMBERS)}_{Path(key).stem}"
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader(module_name, loader=None, origin=key))
    module.__file__ = key
    sys.modules[module_name] = module
    try:
        exec(compile(source, key, "exec"), module.__dict__)
    except Exception as exc:  # a student's file: any error is theirs, named in one line
        sys.modules.pop(module_name, None)
        for name in set(POLICIES) - before:  # a half-imported file leaves nothing behind
            del POLICIES[name]
        where = _line_in(exc, key)
        detail = str(exc).splitlines()[0] if str(exc) else ""
        raise PolicyFileError(f"{shown}{where}: {type(exc).__name__}" + (f": {detail}" if detail else "")) from None
    names = [n for n in POLICIES if n not in before]
    if not names:
        raise PolicyFileError(f"{shown}: registers no policy (decorate a Policy subclass with @register)")
    _LOADED_FILES[key], _SOURCES[key] = names, source
    return list(names)


def _line_in(exc: BaseException, filename: str) -> str:
    """``, line N`` of the innermost frame in ``filename`` (or a SyntaxError's line), else ''."""
    if isinstance(exc, SyntaxError) and exc.lineno:
        return f", line {exc.lineno}"
    tb, line = exc.__traceback__, None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == filename:
            line = tb.tb_lineno
        tb = tb.tb_next
    return f", line {line}" if line else ""


def loaded_policy_files() -> list[str]:
    """Resolved paths of the policy files loaded so far, in order."""
    return list(_LOADED_FILES)


def export_policy_files() -> None:
    """Put the loaded files in :data:`POLICY_FILES_ENV`, for the processes this one starts."""
    if _LOADED_FILES:
        os.environ[POLICY_FILES_ENV] = os.pathsep.join(_LOADED_FILES)


def load_from_environment() -> list[str]:
    """Load the policy files named in :data:`POLICY_FILES_ENV` (the controller and job drivers call this)."""
    names = []
    for path in filter(None, os.environ.get(POLICY_FILES_ENV, "").split(os.pathsep)):
        names += load_policy_file(path)
    return names


@register
class NonePolicy(Policy):
    name = "none"
    description = "baseline: every job starts at the epoch and runs free"

    def initial_offsets_ms(self, schedule, rng):
        return {j.name: 0.0 for j in schedule.jobs}


@register
class ShiftPolicy(Policy):
    name = "shift"
    description = "static shift: each job starts at its computed offset, then runs free"
    uses_schedule = True

    def initial_offsets_ms(self, schedule, rng):
        return dict(schedule.shifts_ms)


@register
class GatePolicy(ShiftPolicy):
    name = "gate"
    description = "shift + enforcement: each burst waits for the job's next window, every iteration"
    enforces_windows = True  # and so waits_for_window() is True for every iteration


@register
class RandomPolicy(Policy):
    name = "random"
    description = "random start offsets (a control)"

    def initial_offsets_ms(self, schedule, rng):
        q = schedule.quantum_ms
        return {j.name: rng.randrange(round(j.period_ms / q)) * q for j in schedule.jobs}


@register
class GuardPolicy(GatePolicy):
    """The gate with a guard band: each window is ``guard_ms`` (rounded up to the grid) longer than
    the burst, and the schedule keeps these longer windows apart, so a gate edge that fires late or
    a burst that starts late does not cut into the next job's window."""

    name = "guard"
    description = "gate with a guard band: windows guard_ms longer than each burst, kept apart"

    def scheduled_timings(self, timings, quantum_ms, knobs):
        out = []
        for t in timings:
            comm_ms = t.comm_ms + math.ceil(knobs.guard_ms / quantum_ms - 1e-9) * quantum_ms
            if comm_ms >= t.period_ms:
                raise ValueError(f"{t.name}: burst {t.comm_ms:g} ms + guard {knobs.guard_ms:g} ms does not fit "
                                 f"in its {t.period_ms:g} ms grid period")
            out.append(JobTiming(t.name, t.period_ms, comm_ms))
        return out


@register
class PriorityPolicy(NonePolicy):
    """Strict priority on the link, shortest burst first (ties: scenario order).

    No shifts and no windows: bursts that meet are not stretched alike, the
    shortest goes at its full rate and the others take what is left. Serving
    the shortest job first minimises the mean stretching (the classic
    shortest-job-first argument; Crux- and Metronome-style priorities between
    training jobs)."""

    name = "priority"
    description = "strict priority on the link, shortest burst first; no shifts, no windows"
    sharing = "priority"

    def priority_order(self, schedule):
        order = sorted(range(len(schedule.jobs)), key=lambda k: (schedule.jobs[k].comm_ms, k))
        return [schedule.jobs[k].name for k in order]


@register
class MltcpPolicy(NonePolicy):
    """MLTCP-style sharing (Rajasekaran et al., NSDI 2024, after HotNets 2023): a flow's weight grows
    with the share of its iteration's bytes already sent, so the burst nearer its end finishes first,
    and jobs that meet slide apart on their own, without a schedule. No shifts, no windows; a model
    of the idea (the fabric has no such congestion control)."""

    name = "mltcp"
    description = "model: link shares weighted by each burst's progress (MLTCP); no shifts, no windows"
    sharing = "mltcp"
    emulated = False  # the fabric's TCP has no such rule; iperf3 cannot weight a flow by its progress


@register
class AlignPolicy(GatePolicy):
    """Pad compute phases so the periods admit a zero-overlap schedule, then shift and gate on the
    padded periods (``controller/theory/align.py``). The scheduler knows only the grid: a job whose
    true period is off it still meets its windows, and pays for the mismatch, as under ``gate``."""

    name = "align"
    description = "pad periods until a zero-overlap schedule exists, then shift + gate on them"

    def scheduled_timings(self, timings, quantum_ms, knobs):
        return list(align_periods(timings, quantum_ms).timings)
