"""A pattern job's fields, checked: ``phases:`` with ``period_ms``, or ``profile:`` -> its ``phases.JobPattern``.

A pattern job gives its iteration as collectives instead of one burst (``comm_ms``): phases in the shape
``shiftbed trace --out`` writes, or a model profile (``controller/theory/profiles.py``). The scenario
checker (``scenarios/spec.py``) takes these checks as a mixin, so every problem is its one line naming
the file and the field; the theory modules build the pattern, nothing is re-derived here.
"""

from __future__ import annotations

from controller import limits
from controller.theory import profiles, zoo
from controller.theory.buckets import DTYPE_BYTES, MIB
from controller.theory.phases import COLLECTIVES, JobPattern, Phase, busy_total_ms
from scenarios.errors import kind_of, short_repr

PROFILE_KEYS = ("bucket_cap_mb", "dtype", "profile_workers")  # only beside ``profile``
PHASE_KEYS = ("start_ms", "message_bytes", "collective")
MAX_MESSAGE_BYTES = 10**15  # a phase's message: far beyond any collective, and exact as a float
MAX_PROFILE_WORKERS = 100_000  # as model_workers


class PatternFields:
    """The checks of a pattern job, for the scenario checker: it brings ``fail``, ``number``, ``integer``
    and ``mapping`` (``spec._Checker``)."""

    def pattern(self, doc: dict, field: str, workers: tuple[str, ...]) -> tuple[JobPattern, float]:
        """A pattern job's iteration (``phases`` with ``period_ms``, or ``profile``) and the link rate its
        phases are timed at; the link must carry them within the iteration."""
        link_mbps = self.number(doc.get("model_link_mbps", zoo.DEFAULT_MODEL_LINK_MBPS), f"{field}.model_link_mbps")
        if "profile" in doc:
            found = self.profile(doc, field, workers, link_mbps)
        else:
            found = self.phases(doc, field, workers)
        need_ms = busy_total_ms(found, link_mbps)
        if need_ms >= found.iteration_ms:
            key = "profile" if "profile" in doc else "phases"
            self.fail(f"{field}.{key}", f"at model_link_mbps {link_mbps:g} the phases keep each worker's link busy "
                      f"{need_ms:.3f} ms per iteration, not less than the iteration ({found.iteration_ms:g} ms)")
        return found, link_mbps

    def collective_workers(self, doc: dict, field: str, workers: tuple[str, ...], key: str, maximum: int,
                           needs: str) -> int:
        """How many workers size a model's or profile's collective: ``doc[key]`` where given, else the job's
        workers; ``needs`` ends the one line of a job with fewer than two and no ``key``."""
        if key in doc:
            return self.integer(doc[key], f"{field}.{key}", minimum=2, maximum=maximum)
        if len(workers) < 2:
            self.fail(f"{field}.workers", needs)
        return len(workers)

    def phases(self, doc: dict, field: str, workers: tuple[str, ...]) -> JobPattern:
        """``period_ms`` and ``phases: [{start_ms, message_bytes, collective}, ...]`` (``shiftbed trace --out``)."""
        for key in ("comm_ms", "model"):
            if key in doc:
                self.fail(f"{field}.{key}", "give either 'phases' or comm_ms/model, not both")
        if "period_ms" not in doc:
            self.fail(f"{field}.period_ms", "missing required key (a phases job's iteration)")
        period_ms = self.number(doc["period_ms"], f"{field}.period_ms", maximum=limits.MAX_PERIOD_MS)
        if len(workers) < 2:
            self.fail(f"{field}.workers", "a phases job needs at least two workers to size its collectives")
        entries = doc["phases"]
        if not isinstance(entries, list) or not entries:
            self.fail(f"{field}.phases", f"expected a non-empty list of {{start_ms, message_bytes, collective}}, "
                      f"got {kind_of(entries)}")
        found = []
        for k, entry in enumerate(entries):
            where = f"{field}.phases[{k}]"
            entry = self.mapping(entry, where, PHASE_KEYS, PHASE_KEYS[:2])
            start_ms = self.number(entry["start_ms"], f"{where}.start_ms", strict=False)
            if start_ms >= period_ms:
                self.fail(f"{where}.start_ms", f"must be less than the iteration (period_ms {period_ms:g}), "
                          f"got {start_ms:g}")
            message_bytes = self.integer(entry["message_bytes"], f"{where}.message_bytes", maximum=MAX_MESSAGE_BYTES)
            collective = entry.get("collective", COLLECTIVES[0])
            if collective not in COLLECTIVES:
                self.fail(f"{where}.collective", f"must be one of {', '.join(COLLECTIVES)}, got {short_repr(collective)}")
            found.append(Phase(start_ms, message_bytes, collective))
        return JobPattern(period_ms, tuple(found), len(workers))

    def profile(self, doc: dict, field: str, workers: tuple[str, ...], link_mbps: float) -> JobPattern:
        """``profile: NAME``: the model's DDP buckets (or pipeline sends) and iteration (``profiles.py``).
        ``bucket_cap_mb`` is DDP's argument: given, it limits the first bucket too, as in DDP."""
        name, known = doc["profile"], profiles.profile_names()
        if not isinstance(name, str) or name not in known:
            self.fail(f"{field}.profile", f"unknown profile {short_repr(name)} (known: {', '.join(known)})")
        for key in ("period_ms", "comm_ms", "phases", "model"):
            if key in doc:
                self.fail(f"{field}.{key}", "give either 'profile' or period_ms/comm_ms/phases/model, not both")
        n = self.collective_workers(doc, field, workers, "profile_workers", MAX_PROFILE_WORKERS,
                                    "a profile job needs at least two workers (or profile_workers) to size its "
                                    "collectives")
        options = {}
        if "bucket_cap_mb" in doc:
            cap_mb = self.number(doc["bucket_cap_mb"], f"{field}.bucket_cap_mb")
            if cap_mb * MIB < 1:
                self.fail(f"{field}.bucket_cap_mb", f"must hold at least one byte (MB = 2^20 bytes), got {cap_mb:g}")
            options = {"bucket_cap_mb": cap_mb, "first_bucket_mb": cap_mb}
        dtype = doc.get("dtype", "fp32")
        if not isinstance(dtype, str) or dtype not in DTYPE_BYTES:
            self.fail(f"{field}.dtype", f"must be one of {', '.join(DTYPE_BYTES)}, got {short_repr(dtype)}")
        try:
            found = profiles.profile_pattern(name, n, dtype=dtype, link_mbps=link_mbps, **options)
        except ValueError as exc:
            self.fail(f"{field}.{'profile_workers' if 'profile_workers' in doc else 'workers'}", str(exc))
        if not found.iteration_ms <= limits.MAX_PERIOD_MS:
            self.fail(f"{field}.profile", f"{name} gives an iteration of {found.iteration_ms:g} ms at model_link_mbps "
                      f"{link_mbps:g}, more than the {limits.MAX_PERIOD_MS:g} ms a job may have")
        return found
