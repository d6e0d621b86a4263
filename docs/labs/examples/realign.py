"""Example policy for lab 4: a static shift that re-aligns every K-th iteration.

``shift`` places each job's first burst at its computed offset and then lets
it run free, so once bursts stretch (or a job's real period is a little off)
the jobs drift out of their planned phase. ``gate`` re-aligns every iteration
and has the switches enforce the windows. ``realign4`` sits in between: the
job waits for the start of its next window on every 4th iteration only, and
nothing is enforced in the fabric.

Use it with ``--policy-file docs/labs/examples/realign.py`` on ``shiftbed
plan``, ``sweep`` and ``run`` (see docs/policies.md).
"""

from controller.theory.policies import Policy, register


@register
class RealignEvery4(Policy):
    name = "realign4"
    description = "static shift; every 4th burst waits for the job's next window start (not enforced)"
    uses_schedule = True  # its offsets are the schedule's shifts
    every = 4

    def initial_offsets_ms(self, schedule, rng):
        return dict(schedule.shifts_ms)  # first bursts where the optimal static shift puts them

    def waits_for_window(self, iteration):
        return iteration % self.every == 0  # iterations 0, 4, 8, ... wait for a window start
