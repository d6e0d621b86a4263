"""The labs' measuring tool on hand-made captures: 10 ms bins, Mbit/s per job."""

import sys

import labsheet
import pandas as pd
import pytest

sys.path.insert(0, str(labsheet.LABS))
import labtool  # noqa: E402  (docs/labs is not a package)


def capture(**busy_bins: list[tuple[int, int]]) -> pd.DataFrame:
    """A job is at 40 Mbit/s in the bins [start, end) given for it, idle elsewhere; 100 bins (1 s)."""
    table = pd.DataFrame(0.0, index=[round(i * 0.01, 2) for i in range(100)], columns=sorted(busy_bins))
    for job, spans in busy_bins.items():
        for start, end in spans:
            table.iloc[start:end, table.columns.get_loc(job)] = 40.0
    return table


@pytest.mark.parametrize("spans, expected_ms", [
    ({"a": [(0, 12), (30, 40)], "b": [(0, 17)]}, 120),  # both start at the epoch: they meet until a ends
    ({"a": [(0, 7), (30, 37)], "b": [(10, 20)]}, 0),  # b starts after a's first burst: apart
    ({"a": [(0, 7), (10, 15)], "b": [(12, 20)]}, 0),  # a idles 3 bins: its second burst meets b's first
    ({"a": [(0, 7), (9, 15)], "b": [(12, 20)]}, 30),  # a idles 2 bins: one burst still, meeting b in 12-14
])
def test_first_bursts_overlap_counts_only_the_first_bursts(spans, expected_ms):
    assert labtool.first_bursts_overlap_ms(capture(**spans)) == expected_ms


def test_overlap_share_is_the_share_of_busy_bins_with_both_jobs():
    """a busy in bins 0-11, b in 0-16: 17 busy bins, 12 with both."""
    assert labtool.overlap_share(capture(a=[(0, 12)], b=[(0, 17)])) == pytest.approx(12 / 17)


def test_the_prediction_error_is_measured_against_the_prediction():
    from labtool import prediction_error_pct

    assert prediction_error_pct(110.0, 100.0) == pytest.approx(10.0)
    assert prediction_error_pct(90.0, 100.0) == pytest.approx(-10.0)


def test_the_link_the_labs_read_is_the_runs_shared_link(tmp_path):
    rows = [{"policy": "none", "link": link, "t_s": 0.0, "job": "a", "mbps": mbps}
            for link, mbps in (("leaf1->spine1", 40.0), ("spine1->leaf1", 10.0))]
    pd.DataFrame(rows).to_csv(tmp_path / "link_bandwidth.csv", index=False)
    (tmp_path / "summary.json").write_text('{"shared_link": "leaf1->spine1"}')
    assert labtool.on_link(tmp_path).loc[("none", 0.0), "a"] == 40.0  # not the mean of both directions


def test_a_pattern_on_the_circle_of_a_gcd_keeps_only_its_remainders():
    """Busy [2, 5) and [9, 11) every 12 ms, on the circle of 6: {2, 3, 4} and {3, 4}, one arc 2+3."""
    busy = labtool.on_circle([[2, 3], [9, 2]], period_ms=12, circle_ms=6)
    assert busy == [False, False, True, True, True, False]
    assert labtool.busy_runs(busy) == [(2, 3)]
    assert labtool.longest_run(busy, True) == 3
    assert labtool.longest_run(busy, False) == 3  # 5, 0, 1: the gap across the circle's end


def test_the_longest_run_on_a_full_or_empty_circle_is_the_circle():
    assert labtool.longest_run([True] * 4, True) == 4 and labtool.longest_run([True] * 4, False) == 0
