"""A PyTorch profiler (Kineto) Chrome trace -> the job's communication pattern (``JobPattern``).

A real job's phases are in the trace its profiler writes (``torch.profiler.profile(...)`` with a
schedule, ``prof.step()`` every iteration, ``export_chrome_trace``; ``.json`` or ``.json.gz``). Times
in the trace are microseconds; here they become milliseconds.

Iterations are the ``ProfilerStep#N`` spans (complete events, ``ph: "X"``). Collectives are:

- NCCL's records: ``record_param_comms`` (its ``args`` name the collective, ``In msg nelems``,
  ``Out msg nelems``, ``dtype``, ``Group size`` and ``Process Group Ranks``, which may be cut short:
  it is not read) and ``nccl:*`` (``nccl:all_reduce``);
- gloo's: ``gloo:*`` (``gloo:all_reduce``, run on gloo's worker threads), sized by their ``Input Dims``
  (elements) and ``Input type`` (dtype), recorded only with ``record_shapes=True``.

Only CPU-side records count (category ``cpu_op`` or ``user_annotation``): a GPU kernel or a GPU
annotation repeats a collective its CPU record already names. Names map to the theory's collectives:
all_reduce/allreduce -> ``allreduce``, all_to_all/alltoall -> ``alltoall``, send/recv -> ``p2p``; other
collectives (broadcast, all_gather, barrier, ...) are left out and counted in the notes.

One collective, two records: NCCL writes a ``record_param_comms`` and, inside it, its ``nccl:`` record
for the same call. The rule: a ``record_param_comms`` and a backend record (``nccl:``/``gloo:``) are one
collective when they are on the same thread, the later one starts while the earlier is still open,
they map to the same collective and their bytes agree (where both know them). Each record pairs with
at most one other, the open one that started last, so that back-to-back buckets of one size stay
apart. The pair starts at the earlier start and takes whichever bytes and group size are known.

Warm-up: the first step is always dropped (DDP all-reduces one bucket of every gradient in its first
iteration, then rebuilds its buckets from the order the gradients arrived; the profiler's start adds
its own overhead), and so is every step right after it whose number of collectives differs from the
most common among the steps after the first. The steps left (two or more) must agree on the number of
collectives. The pattern takes, for each phase index, the median offset from its step's start and
the median bytes across those steps, and the median step as the iteration.

Bad input is one ``InputError`` line naming the file and what is wrong.
"""

from __future__ import annotations

import collections
import gzip
import json
import math
import re
import statistics
from dataclasses import dataclass, field
from pathlib import Path

from controller.theory.phases import JobPattern, Phase
from scenarios.errors import InputError

STEP_NAME = re.compile(r"ProfilerStep#(\d+)$")
CPU_CATEGORIES = ("cpu_op", "user_annotation", "operator")  # where a trace has no category: taken too
PARAM_COMMS = "record_param_comms"
BACKENDS = ("nccl:", "gloo:")
US_PER_MS = 1000.0

# bytes per element, by the names a trace uses: ``dtype`` of record_param_comms (c10's ScalarType names)
# and ``Input type`` of a record (C++ type names, ``c10::`` dropped); keys lower case
DTYPE_BYTES = {
    "float": 4, "float32": 4, "double": 8, "float64": 8, "half": 2, "float16": 2, "bfloat16": 2,
    "long": 8, "long int": 8, "int64": 8, "int": 4, "int32": 4, "short": 2, "short int": 2, "int16": 2,
    "char": 1, "signed char": 1, "int8": 1, "byte": 1, "unsigned char": 1, "uint8": 1, "bool": 1,
    "complexfloat": 8, "complex<float>": 8, "complexdouble": 16, "complex<double>": 16,
    "float8_e4m3fn": 1, "float8_e5m2": 1, "float8_e4m3fnuz": 1, "float8_e5m2fnuz": 1,
}


@dataclass(frozen=True)
class Record:
    """One collective as the trace shows it (two records of one call already made one)."""

    start_us: float
    end_us: float
    thread: tuple  # (pid, tid)
    collective: str  # one of phases.COLLECTIVES
    source: str  # the record's name: ``record_param_comms``, ``gloo:all_reduce``, ...
    message_bytes: int | None  # None: the record does not say
    group_size: int | None
    problem: str = ""  # why the bytes are unknown, for the error if this record is used


@dataclass(frozen=True)
class TraceJob:
    """What a trace says about its job: the steady ``pattern`` and how it was found."""

    path: str
    pattern: JobPattern  # the median over the steps used
    steps: tuple[JobPattern, ...]  # each step used, as its own pattern
    step_numbers: tuple[int, ...]  # their N in ``ProfilerStep#N``
    warmup_steps: tuple[int, ...]  # the N of the steps dropped as warm-up
    workers: int  # the collectives' group size
    notes: tuple[str, ...] = field(default=())


def read_trace(path) -> TraceJob:
    """The job in the Kineto trace at ``path`` (``.json``, or gzipped). One-line InputError if unusable."""
    name = str(path)
    doc = _load(Path(path))
    events = doc.get("traceEvents") if isinstance(doc, dict) else None
    if not isinstance(events, list):
        raise InputError(f"{name}: no traceEvents list: not a PyTorch profiler (Kineto) trace")
    complete = [e for e in events if isinstance(e, dict) and e.get("ph") == "X" and _span_us(e)]
    steps = sorted(((int(m.group(1)), *_span_us(e)) for e in complete
                    if (m := STEP_NAME.match(str(e.get("name", ""))))), key=lambda s: s[1])
    if not steps:
        raise InputError(f"{name}: no ProfilerStep#N spans: profile with a schedule and call prof.step() "
                         "every iteration")
    notes: list[str] = []
    records, other = _collectives(complete)
    if other:
        notes.append("left out, not allreduce, alltoall or p2p: "
                     + ", ".join(f"{n} record(s) of {kind}" for kind, n in sorted(other.items())))
    per_step: list[list[Record]] = [[] for _ in steps]
    outside = 0
    for record in records:
        index = next((i for i, (_, start, end) in enumerate(steps) if start <= record.start_us < end), None)
        if index is None:
            outside += 1
        else:
            per_step[index].append(record)
    if outside:
        notes.append(f"left out: {outside} collective(s) outside the profiler steps")
    if not any(per_step):
        raise InputError(f"{name}: no collectives (record_param_comms, nccl:*, gloo:*) in the profiler steps")

    counts = [len(r) for r in per_step]
    usual = collections.Counter(counts[1:]).most_common(1)[0][0] if len(counts) > 1 else counts[0]
    first = 1
    while first < len(steps) and counts[first] != usual:
        first += 1
    warmup = tuple(n for n, _, _ in steps[:first])
    notes.append("warm-up dropped: " + ", ".join(f"ProfilerStep#{n} ({counts[i]} collective(s))"
                                                 for i, n in enumerate(warmup)))
    used = list(range(first, len(steps)))
    if len(used) < 2:
        raise InputError(f"{name}: {len(used)} profiler step(s) after the warm-up ({len(steps)} in all, the first "
                         f"{first} dropped): need 2 or more")
    if counts[used[0]] == 0:
        raise InputError(f"{name}: no collectives in the profiler steps after the warm-up")
    differ = [i for i in used if counts[i] != counts[used[0]]]
    if differ:
        a, b = steps[used[0]][0], steps[differ[0]][0]
        raise InputError(f"{name}: steps disagree on the number of collectives: ProfilerStep#{a} has "
                         f"{counts[used[0]]}, ProfilerStep#{b} has {counts[differ[0]]}")
    unsized = next(((i, r) for i in used for r in per_step[i] if r.message_bytes is None), None)
    if unsized:
        i, record = unsized
        raise InputError(f"{name}: {record.source} in ProfilerStep#{steps[i][0]}: {record.problem}")

    workers = _group_size(records, doc, notes)
    try:
        step_patterns = tuple(_step_pattern(per_step[i], steps[i], workers) for i in used)
        pattern = _median_pattern(step_patterns, workers, notes)
    except ValueError as exc:
        raise InputError(f"{name}: {exc}") from None
    return TraceJob(name, pattern, step_patterns, tuple(steps[i][0] for i in used), warmup, workers, tuple(notes))


def render(job: TraceJob) -> str:
    """A short text summary: the steps used, the iteration, each phase (MB = 10^6 bytes), the notes."""
    numbers = job.step_numbers
    pattern = job.pattern
    lines = [f"{job.path}: {len(numbers)} steps used (ProfilerStep#{numbers[0]}-#{numbers[-1]}), warm-up dropped: "
             + (", ".join(f"#{n}" for n in job.warmup_steps) or "none"),
             f"iteration {pattern.iteration_ms:.3f} ms, {job.workers} workers, {len(pattern.phases)} phases, "
             f"{pattern.message_bytes / 1e6:.3f} MB per iteration",
             f"  {'start_ms':>10} {'MB':>10}  collective"]
    lines += [f"  {p.start_ms:>10.3f} {p.message_bytes / 1e6:>10.3f}  {p.collective:<10} {p.name}"
              for p in pattern.phases]
    lines += [f"note: {note}" for note in job.notes]
    return "\n".join(lines)


def scenario_job(job: TraceJob, name: str, workers) -> dict:
    """The job as a scenario file could hold it: ``name``, ``period_ms`` (the iteration),
    ``phases`` (each ``start_ms``, ``message_bytes``, ``collective``) and ``workers`` (host names,
    ``[h1, h3]``). A phase's message is what the collective carries whatever the number of workers
    (a bucket's bytes), so the hosts may be more or fewer than the trace's group size; what each host
    then sends follows from the collective (``phases.wire_bytes``). ``scenarios/spec.py`` reads it as a
    pattern job."""
    hosts = list(workers)
    if len(hosts) < 2:
        raise InputError(f"{name}: workers: a collective needs at least two workers, got {len(hosts)}")
    return {
        "name": name,
        "period_ms": round(job.pattern.iteration_ms, 3),
        "phases": [{"start_ms": round(p.start_ms, 3), "message_bytes": p.message_bytes, "collective": p.collective}
                   for p in job.pattern.phases],
        "workers": hosts,
    }


def _load(path: Path):
    """The trace's JSON document; gzip is recognised by its first bytes, whatever the file's name."""
    try:
        data = path.read_bytes()
        if data[:2] == b"\x1f\x8b":
            data = gzip.decompress(data)
        return json.loads(data)
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: not JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})") from None
    except UnicodeDecodeError:
        raise InputError(f"{path}: not JSON (not UTF-8 text)") from None
    except (OSError, EOFError) as exc:  # unreadable, or a cut-off / corrupt gzip
        raise InputError(f"{path}: cannot read: {exc}") from None


def _span_us(event: dict) -> tuple[float, float] | None:
    """(start, end) in µs of a complete event, or None when its times are not numbers."""
    start, duration = event.get("ts"), event.get("dur", 0)
    if not all(isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) for v in (start, duration)):
        return None
    return float(start), float(start) + max(0.0, float(duration))


def collective_of(name: str) -> str | None:
    """The theory's collective for a trace's collective name (``all_reduce``, ``all_to_allv``, ``send``)."""
    key = name.lower().replace("_", "").strip()
    if key.startswith("allreduce"):
        return "allreduce"
    if key.startswith("alltoall"):
        return "alltoall"
    if re.match(r"i?(send|recv)\b", key):
        return "p2p"
    return None


def _collectives(events: list[dict]) -> tuple[list[Record], collections.Counter]:
    """Every collective of the trace, its two records made one (the module's rule), in order of start;
    and how many records named other collectives, by name."""
    other: collections.Counter = collections.Counter()
    candidates = []
    for event in events:
        name = str(event.get("name", ""))
        category = event.get("cat")
        if category is not None and str(category).lower() not in CPU_CATEGORIES:
            continue
        args = event.get("args") if isinstance(event.get("args"), dict) else {}
        if name == PARAM_COMMS:
            raw = str(args.get("Collective name", ""))
        elif name.startswith(BACKENDS):
            raw = (name.split(":", 1)[1].split() or [""])[0]  # ``nccl:send 0->1``: ``send``
        else:
            continue
        collective = collective_of(raw)
        if collective is None:
            other[raw or "unnamed"] += 1
            continue
        candidates.append(_record(event, name, collective, args))
    candidates.sort(key=lambda r: (r.start_us, r.source != PARAM_COMMS))
    kept: list[Record] = []
    open_unpaired: dict[tuple, list[int]] = collections.defaultdict(list)  # thread -> indices into kept
    for record in candidates:
        waiting = open_unpaired[record.thread]
        waiting[:] = [i for i in waiting if kept[i].end_us >= record.start_us]
        partner = next((i for i in reversed(waiting) if _same_call(kept[i], record)), None)
        if partner is None:
            waiting.append(len(kept))
            kept.append(record)
        else:
            waiting.remove(partner)
            kept[partner] = _merged(kept[partner], record)
    return sorted(kept, key=lambda r: r.start_us), other


def _record(event: dict, name: str, collective: str, args: dict) -> Record:
    start_us, end_us = _span_us(event)
    thread = (event.get("pid"), event.get("tid"))
    group = args.get("Group size")
    group = group if isinstance(group, int) and not isinstance(group, bool) and group >= 2 else None
    if name == PARAM_COMMS:
        dtype = str(args.get("dtype", ""))
        size = DTYPE_BYTES.get(dtype.lower())
        elements = next((n for n in (args.get("In msg nelems"), args.get("Out msg nelems"))
                         if isinstance(n, int) and n > 0), None)
        if size is None or elements is None:
            problem = f"dtype {dtype!r} of unknown size" if size is None else "no In/Out msg nelems"
            return Record(start_us, end_us, thread, collective, name, None, group, problem)
        return Record(start_us, end_us, thread, collective, name, elements * size, group)
    message_bytes, problem = _input_bytes(args)
    return Record(start_us, end_us, thread, collective, name, message_bytes, group, problem)


def _input_bytes(args: dict) -> tuple[int | None, str]:
    """A backend record's bytes from its ``Input Dims`` and ``Input type``: each tensor's elements times
    its dtype's size, summed (inputs of other types, scalars and lists, are not tensors of data)."""
    dims, types = args.get("Input Dims"), args.get("Input type")
    if not isinstance(dims, list) or not isinstance(types, list):
        return None, "no Input Dims: profile with record_shapes=True"
    total = 0
    for shape, dtype in zip(dims, types, strict=False):
        size = DTYPE_BYTES.get(str(dtype).lower().removeprefix("c10::"))
        if size and isinstance(shape, list) and all(isinstance(d, int) for d in shape):
            total += math.prod(shape) * size
    if total <= 0:
        return None, f"no tensor of a known dtype in its inputs ({types})"
    return total, ""


def _same_call(earlier: Record, later: Record) -> bool:
    """Whether two records on one thread, the later starting while the earlier is open, are one call."""
    return ((earlier.source == PARAM_COMMS) != (later.source == PARAM_COMMS)
            and earlier.collective == later.collective
            and (earlier.message_bytes is None or later.message_bytes is None
                 or earlier.message_bytes == later.message_bytes))


def _merged(earlier: Record, later: Record) -> Record:
    known = earlier if earlier.message_bytes is not None else later
    backend = later if earlier.source == PARAM_COMMS else earlier
    return Record(earlier.start_us, max(earlier.end_us, later.end_us), earlier.thread, earlier.collective,
                  backend.source, known.message_bytes, earlier.group_size or later.group_size, known.problem)


def _group_size(records: list[Record], doc: dict, notes: list[str]) -> int:
    """The collectives' group size: the most common one they record, else the trace's world size."""
    sizes = collections.Counter(r.group_size for r in records if r.group_size)
    if sizes:
        size = sizes.most_common(1)[0][0]
        if len(sizes) > 1:
            notes.append(f"group sizes differ across collectives ({', '.join(map(str, sorted(sizes)))}): took {size}")
        return size
    info = doc.get("distributedInfo") if isinstance(doc.get("distributedInfo"), dict) else {}
    world = info.get("world_size")
    if isinstance(world, int) and not isinstance(world, bool) and world >= 2:
        notes.append(f"group size {world}: the trace's distributedInfo world_size (its records name no group size)")
        return world
    notes.append("group size not recorded: took 2")
    return 2


def _step_pattern(records: list[Record], step: tuple[int, float, float], workers: int) -> JobPattern:
    _, start_us, end_us = step
    phases = [Phase((r.start_us - start_us) / US_PER_MS, r.message_bytes, r.collective, f"{r.source} #{k + 1}")
              for k, r in enumerate(records)]
    return JobPattern((end_us - start_us) / US_PER_MS, tuple(phases), workers)


def _median_pattern(steps: tuple[JobPattern, ...], workers: int, notes: list[str]) -> JobPattern:
    """Phase by phase (in order of start) across ``steps``: the median start and bytes; the median step."""
    phases = []
    for k, same in enumerate(zip(*(s.phases for s in steps), strict=True)):
        sizes = [p.message_bytes for p in same]
        kinds = collections.Counter(p.collective for p in same)
        if len(set(sizes)) > 1:
            notes.append(f"phase {k + 1}: bytes differ across steps ({min(sizes)}-{max(sizes)}): took the median")
        phases.append(Phase(statistics.median(p.start_ms for p in same), statistics.median_low(sizes),
                            kinds.most_common(1)[0][0], f"{same[0].name.rsplit(' #', 1)[0]} #{k + 1}"))
    return JobPattern(statistics.median(s.iteration_ms for s in steps), tuple(phases), workers)
