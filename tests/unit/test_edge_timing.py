"""Where a late edge lost its time: the per-stage sums the scheduler's status reports."""

import pytest

from controller.edge_timing import stages_ms, summary

MARGIN_S = 0.002


def edge(send_at_s, woke_s, prepared_s, slept_s, sent_s) -> dict:
    return {"due_s": send_at_s, "send_at_s": send_at_s, "woke_s": woke_s, "prepared_s": prepared_s,
            "slept_s": slept_s, "sent_s": sent_s, "barrier_s": None}


def test_each_stage_is_measured_against_its_own_plan():
    # hub woke 1.5 ms late (0.5 ms before the edge), prepared for 0.75 ms, so the plain sleep
    # was skipped and returned 0.25 ms late; the sends took 0.125 ms
    fired = [edge(10.0, 9.9995, 10.00025, 10.00025, 10.000375)]
    stages = stages_ms(fired, MARGIN_S)
    assert stages["hub_oversleep_ms"]["max"] == pytest.approx(1.5)
    assert stages["prepare_ms"]["max"] == pytest.approx(0.75)
    assert stages["precise_oversleep_ms"]["max"] == pytest.approx(0.25)
    assert stages["send_ms"]["max"] == pytest.approx(0.125)


def test_edges_without_stage_times_are_left_out():
    fired = [edge(10.0, 9.998, 9.9984, 10.0001, 10.0002), {"due_s": 5.0, "sent_s": 5.001, "barrier_s": None}]
    assert stages_ms(fired, MARGIN_S)["send_ms"]["max"] == pytest.approx(0.1)
    assert stages_ms([], MARGIN_S) == dict.fromkeys(("hub_oversleep_ms", "prepare_ms", "precise_oversleep_ms",
                                                      "send_ms"))


def test_summary_p95_is_the_nearest_rank_below():
    values = [float(v) for v in range(100, 0, -1)]  # unsorted on purpose
    assert summary(values) == {"mean": 50.5, "p95": 95.0, "max": 100.0}
    assert summary([]) is None
