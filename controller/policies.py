"""The policies, one small class each, by name: the same names in theory and emulation.

A policy says two things: where each job's *first burst* starts relative to the
common epoch (``initial_offsets_ms``), and whether the fabric confines every
burst to the job's window, every iteration (``realign_every_iteration``).
Offsets are burst starts, the convention of ``Schedule.shifts_ms``,
``controller/windows.py`` and ``apps/dltjob.py``: a job computes first and its
iteration 0 burst begins at ``epoch + offset``.

Adding a policy: subclass :class:`Policy`, give it a ``name``, decorate it with
``@register``; ``plan``, ``sweep``, the fluid model and the emulator then know
it by name.
"""

from __future__ import annotations

import difflib
import random as _random

from controller.schedule import Schedule


class UnknownPolicy(ValueError):
    """A policy name that is not registered (the message suggests the nearest)."""


class Policy:
    """Base class: every job bursts first at the epoch and then runs free."""

    name: str = ""
    description: str = ""
    realign_every_iteration: bool = False
    uses_schedule: bool = False

    def initial_offsets_ms(self, schedule: Schedule, rng: _random.Random) -> dict[str, float]:
        """Each job's first burst start, ms after the epoch, in ``[0, period)``."""
        raise NotImplementedError


POLICIES: dict[str, Policy] = {}


def register(cls: type[Policy]) -> type[Policy]:
    """Class decorator: make the policy available by its ``name``."""
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
    realign_every_iteration = True


@register
class RandomPolicy(Policy):
    name = "random"
    description = "random start offsets (a control)"

    def initial_offsets_ms(self, schedule, rng):
        q = schedule.quantum_ms
        return {j.name: rng.randrange(round(j.period_ms / q)) * q for j in schedule.jobs}
