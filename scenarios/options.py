"""Command-line values that more than one command reads, parsed the same way everywhere.

``run``, ``demo``, ``sweep``, ``compare`` and ``batch`` take some of the same options (policies,
seconds per policy, ranges and lists of numbers, the job mix, the results root); each is read here,
so an option means one thing and is refused with one message (``InputError`` naming it) in every
command that has it.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

from controller.theory.policies import UnknownPolicy, get_policy
from scenarios.errors import InputError
from scenarios.spec import MAX_DURATION_S, with_time_scale

DEFAULT_DURATION_S = 20.0  # seconds each policy runs where neither --duration nor the scenario says
MIX_HELP = ("share of harmonic jobs, the map's job-mix knob (a job whose period is identical to, or 2 or 3 "
            "times, another's), from 0 to 1, uniform periods only (default: periods drawn freely)")


def parse_policies(text: str | None, default: tuple[str, ...]) -> tuple[str, ...]:
    """``"none,gate"`` → ``("none", "gate")``; unknown names are an InputError naming them."""
    if text is None:
        return default
    names = [p.strip() for p in text.split(",") if p.strip()]
    if not names:
        raise InputError("--policy: give at least one policy")
    for name in names:
        try:
            get_policy(name)
        except UnknownPolicy as exc:
            raise InputError(f"--policy: {exc}") from None
    if len(set(names)) != len(names):
        raise InputError(f"--policy: a policy is named twice in {text!r}")
    return tuple(names)


def _number(text: str, option: str, what: str) -> float:
    """``text`` as a float; InputError ``<option>: must be <what>, got ...`` if it is not one."""
    try:
        return float(text)
    except ValueError:
        raise InputError(f"{option}: must be {what}, got {text!r}") from None


def parse_duration(text: str | None, default: float) -> float:
    """``--duration``: seconds per policy, positive and at most the schema's ceiling (``default`` when not given)."""
    if text is None:
        return default
    value = _number(text, "--duration", "a number of seconds")
    if not math.isfinite(value) or value <= 0:
        raise InputError(f"--duration: must be a positive number of seconds, got {text!r}")
    if value > MAX_DURATION_S:
        raise InputError(f"--duration: at most {MAX_DURATION_S:g} s, got {text!r}")
    return value


def parse_target_se_pct(text: str | None) -> float | None:
    """``--target-se-pct``: a percentage above 0 and below 100 (None when not given)."""
    if text is None:
        return None
    value = _number(text, "--target-se-pct", "a percentage")
    if not 0 < value < 100:
        raise InputError(f"--target-se-pct: must be above 0 and below 100, got {text!r}")
    return value


def parse_time_scale(text: str | None, scenario):
    """``scenario`` at ``--time-scale`` (its own ``time_scale`` when not given); InputError if not a number >= 1."""
    if text is None:
        return scenario
    return with_time_scale(scenario, _number(text, "--time-scale", "a number >= 1"))


def check_out_root(text: str) -> Path:
    """``--out`` must be a directory we can write in, or one we can create."""
    out = Path(text)
    existing = next(p for p in (out, *out.absolute().parents) if p.exists())
    if not existing.is_dir():
        raise InputError(f"--out: {existing} is not a directory")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise InputError(f"--out: cannot write in {existing}")
    return out


def parse_range(value: str, name: str, cast) -> tuple:
    """``"LO:HI"`` → ``(lo, hi)``, each ``cast``, with ``0 < lo <= hi``."""
    try:
        lo, hi = (cast(x) for x in value.split(":"))
    except ValueError:
        raise InputError(f"{name}: expected LO:HI, got {value!r}") from None
    if not (math.isfinite(lo) and math.isfinite(hi)) or lo <= 0 or hi < lo:
        raise InputError(f"{name}: need 0 < LO <= HI, got {value!r}")
    return lo, hi


def parse_list(value: str, name: str, cast) -> list:
    """``"1,5,10"`` → ``[1, 5, 10]``, each ``cast`` and positive."""
    try:
        items = [cast(x) for x in value.split(",") if x.strip()]
    except ValueError:
        raise InputError(f"{name}: expected comma-separated numbers, got {value!r}") from None
    if not items or any(not math.isfinite(x) or x <= 0 for x in items):
        raise InputError(f"{name}: need positive numbers, got {value!r}")
    return items


def check_mix(mix: float | None, use_zoo: bool, period_range: tuple[int, int]) -> float | None:
    """``--mix``, as the map draws it (``draws.mixed_periods``): InputError where it cannot apply."""
    if mix is None:
        return None
    if not (math.isfinite(mix) and 0 <= mix <= 1):
        raise InputError(f"--mix: a share from 0 to 1, got {mix}")
    if use_zoo:
        raise InputError("--mix: applies to uniform periods; the zoo's draws keep the mix they have")
    if mix > 0 and 2 * period_range[0] > period_range[1]:
        raise InputError(f"--mix: --period-ms {period_range[0]}:{period_range[1]} has no room for a period "
                         "and its double")
    return mix
