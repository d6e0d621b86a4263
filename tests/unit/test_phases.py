"""A job's iteration as phases (controller/theory/phases.py): what each collective puts on a worker's link,
for how long, and the busy pattern the scheduler reasons about on its grid."""

import pytest

from controller.theory.arcs import Pattern
from controller.theory.phases import JobPattern, Phase, as_pattern, busy_ms, wire_bytes

MB = 1_000_000


def test_each_collective_puts_its_share_of_the_message_on_a_workers_link():
    assert wire_bytes(Phase(0.0, 8 * MB), 4) == 12 * MB  # ring all-reduce: 2(n-1)/n
    assert wire_bytes(Phase(0.0, 8 * MB, "alltoall"), 4) == 6 * MB  # (n-1)/n
    assert wire_bytes(Phase(0.0, 8 * MB, "p2p"), 4) == 8 * MB
    assert busy_ms(Phase(0.0, 5 * MB), 2, 100.0) == pytest.approx(400.0)  # 5 MB at 100 Mbit/s, 2(1)/2 = 1


def test_one_phase_at_zero_is_the_classic_rectangle():
    job = JobPattern(300.0, (Phase(0.0, 1_250_000),), workers=2)  # 100 ms at 100 Mbit/s
    assert as_pattern(job, 100.0, 1.0) == Pattern.rectangle(300, 100)
    assert as_pattern(job, 100.0, 10.0) == Pattern.rectangle(30, 10)


def test_phases_are_covered_by_whole_quanta_and_wrap_past_the_period():
    job = JobPattern(100.0, (Phase(95.5, 125_000, name="tail"), Phase(12.3, 12_500, name="bucket 1")))
    # bucket 1: 1 ms from 12.3 ms -> quanta 12 and 13; tail: 10 ms from 95.5 -> 95..105, wrapping to 0..5
    assert as_pattern(job, 100.0, 1.0) == Pattern(100, ((0, 6), (12, 2), (95, 5)))
    assert [p.name for p in job.phases] == ["bucket 1", "tail"]  # in order of start
    assert job.message_bytes == 137_500


def test_a_phase_longer_than_the_period_keeps_the_link_busy_throughout():
    assert as_pattern(JobPattern(10.0, (Phase(2.0, 1_250_000),)), 100.0, 1.0) == Pattern(10, ((0, 10),))


@pytest.mark.parametrize("make, says", [
    (lambda: Phase(-1.0, 10), "start_ms must be 0 or more"),
    (lambda: Phase(0.0, 0), "message_bytes must be a whole number above 0"),
    (lambda: Phase(0.0, 10, "broadcast"), "collective must be one of allreduce, alltoall, p2p"),
    (lambda: JobPattern(100.0, ()), "needs at least one phase"),
    (lambda: JobPattern(100.0, (Phase(100.0, 10, name="late"),)), "phase late starts at 100 ms, past the iteration"),
    (lambda: JobPattern(0.0, (Phase(0.0, 10),)), "iteration_ms must be above 0"),
    (lambda: JobPattern(100.0, (Phase(0.0, 10),), workers=1), "at least two workers"),
])
def test_a_bad_phase_or_pattern_is_refused_in_one_line(make, says):
    with pytest.raises(ValueError, match=says) as refused:
        make()
    assert "\n" not in str(refused.value)


def test_a_phase_that_starts_while_the_one_before_is_on_the_link_waits_for_it():
    # p2p of 1 250 000 bytes keeps a 10-Gbit/s link busy 1 ms: A at 0 for 3 ms, B at 1 for 2 ms goes at 3
    ms = 1_250_000
    job = JobPattern(20.0, (Phase(0.0, 3 * ms, "p2p"), Phase(1.0, 2 * ms, "p2p"), Phase(10.0, ms, "p2p")))
    assert as_pattern(job, 10_000, 1.0) == Pattern(20, ((0, 5), (10, 1)))
