"""report.html: one self-contained page, each prediction's kind said beside it, the timeline's bursts
(tests/integration/test_report_html.py opens it in a real browser)."""

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from results_example import JOBS, MEASURED_MS, PREDICTED_MS, write_example

from scenarios import spec
from scenarios.planning import build_plan
from scenarios.report import story, timeline
from scenarios.report.draw import draw_report
from scenarios.results import BANDWIDTH_BIN_S, REPORT_HTML_FILE, load_results
from scenarios.summary_record import JobSummary

# The example's jobs as a scenario the theory can plan (the example itself writes a stub scenario.yaml).
EXAMPLE_SCENARIO = "name: two-jobs\njobs:\n" + "".join(
    f"  - {{name: {name}, period_ms: {j['period_ms']:g}, comm_ms: {j['comm_ms']:g}}}\n" for name, j in JOBS.items())
# A script or stylesheet fetched from elsewhere: the page must not need one.
FETCHED = re.compile(r"<(?:script|link|img|iframe)\b[^>]*\b(?:src|href)\s*=\s*[\"']?(?:https?:)?//", re.I)


def _page(folder: Path) -> str:
    return (folder / REPORT_HTML_FILE).read_text()


def _row(page: str, policy: str, job: str) -> str:
    """The theory table's row of ``job`` under ``policy``."""
    table = page[page.index("<table id=\"theory-table\">"):]
    rows = re.findall(rf"<tr><td>{policy}</td><td>{job}</td>.*?</tr>", table[:table.index("</table>")])
    assert len(rows) == 1, rows
    return rows[0]


@pytest.fixture(scope="module")
def example(tmp_path_factory) -> Path:
    folder = write_example(tmp_path_factory.mktemp("html"))
    (folder / "scenario.yaml").write_text(EXAMPLE_SCENARIO)
    draw_report(folder)
    return folder


def test_report_html_is_written_beside_report_md_and_needs_nothing_from_the_network(example):
    page = _page(example)
    assert page.startswith("<!DOCTYPE html>")
    assert not FETCHED.search(page), FETCHED.search(page).group(0)
    assert "cdn.bokeh.org" not in page
    scripts = re.findall(r"<script\b[^>]*>", page)
    assert scripts and not any("src=" in s for s in scripts)  # Bokeh's JavaScript is inline
    assert "Bokeh.embed" in page
    assert len(page.encode()) < 3 * 2**20


def test_every_row_of_the_theory_table_says_what_its_prediction_was_made_from(example):
    page = _page(example)
    plan = build_plan(spec.parse(EXAMPLE_SCENARIO), policies=tuple(MEASURED_MS))["policies"]
    for policy, jobs in MEASURED_MS.items():
        for job, measured_ms in jobs.items():
            row = _row(page, policy, job)
            assert f">{measured_ms:.1f}" in row and f">{PREDICTED_MS[policy][job]:.1f}<" in row
            assert story.CALIBRATION in row and story.AFTERWARDS not in row  # the example's summary has no two states
            assert f">{plan[policy][job]['predicted_iteration_ms']:.1f}<" in row  # before the run: the plan's
    for kind in (story.BEFORE, story.CALIBRATION, story.AFTERWARDS):
        assert f"{kind}</span>:" in page  # each kind explained above the table


def test_a_free_running_policy_weighed_by_this_runs_parting_is_explained_afterwards(tmp_path):
    folder = write_example(tmp_path)
    summary = json.loads((folder / "summary.json").read_text())
    summary["policies"]["none"]["jobs"]["a"].update(apart_share=0.6, predicted_together_ms=120.0,
                                                    predicted_apart_ms=105.0, met_share_first=0.4, met_share_last=0.02)
    summary["policies"]["none"]["jobs"]["b"].update(apart_share=0.0, predicted_together_ms=220.0,
                                                    predicted_apart_ms=200.0, met_share_first=0.3, met_share_last=0.3)
    (folder / "summary.json").write_text(json.dumps(summary))
    draw_report(folder)
    page = _page(folder)
    row = _row(page, "none", "a")
    assert story.AFTERWARDS in row and "together 120.0, apart 105.0 ms, 60% of its iterations apart" in row
    assert story.CALIBRATION in _row(page, "gate", "a")
    assert "Together or apart" in page and "a ran 60% of its iterations apart" in page
    assert "before the run" in page and "scenario.yaml does not plan" in page  # the example's stub


def test_prediction_kind_follows_the_summarys_fields():
    assert story.prediction_kind(JobSummary(predicted_iteration_ms=100.0)) == story.CALIBRATION
    assert story.prediction_kind(JobSummary(predicted_iteration_ms=100.0, apart_share=0.0)) == story.AFTERWARDS


def test_the_fidelity_section_tells_the_verdict_and_its_figures_in_words(example, tmp_path):
    page = _page(example)
    assert "Fidelity: <span class=\"ok\">kept</span>" in page
    assert "reached at least 97% of the rate its configured links give it (it must be at least 90%)" in page
    assert "dropped 0 packets" in page and "they differ by 0.80 %" in page
    lost = write_example(tmp_path, fidelity_ok=False)
    draw_report(lost)
    page = _page(lost)
    assert "Fidelity: <span class=\"bad\">lost</span>" in page
    assert "lower link_mbps to 10" in page and "What to change" in page
    assert page.index("Fidelity lost: the emulated network did not deliver") < page.index("In short")  # first


def test_the_page_holds_a_timeline_of_bursts_and_windows_for_every_policy_and_link(example):
    page = _page(example)
    results = load_results(example)
    for policy, link, _jobs in timeline.panels(results):
        assert f"bursts|{policy}|{link}" in page
        assert f"windows|{policy}|{link}" in page
    assert {p for p, _, _ in timeline.panels(results)} == set(MEASURED_MS)


def test_link_bursts_joins_short_gaps_and_splits_at_long_ones():
    def bins(start_ms, count):
        return [start_ms + BANDWIDTH_BIN_S * 1000 * k for k in range(count)]

    gap_ms = round(timeline.BURST_GAP_S * 1000)
    t_ms = bins(0, 5) + bins(50 + gap_ms - 10, 3) + bins(200 + gap_ms + 20, 4)  # joined, then apart
    frame = pd.DataFrame({"policy": "none", "link": "l", "job": "a", "t_s": np.array(t_ms) / 1000, "mbps": 8.0})
    other = frame.assign(job="b", t_s=frame["t_s"] + 0.005)
    bursts = timeline.link_bursts(pd.concat([frame, other.iloc[:2]]))
    mine = bursts[bursts["job"] == "a"]
    assert mine["start_s"].round(3).tolist() == [0.0, round((200 + gap_ms + 20) / 1000, 3)]
    assert mine["end_s"].round(3).tolist() == [round((50 + gap_ms - 10 + 30) / 1000, 3),
                                               round((200 + gap_ms + 20 + 40) / 1000, 3)]
    assert mine["megabytes"].round(6).tolist() == [8 * 0.01 * 8 / 8, 8 * 0.01 * 4 / 8]
    assert len(bursts[bursts["job"] == "b"]) == 1


def test_a_long_run_draws_its_bandwidth_in_coarser_steps_and_says_so(example, tmp_path, monkeypatch):
    folder = tmp_path / example.name
    shutil.copytree(example, folder)
    monkeypatch.setattr(timeline, "MAX_BANDWIDTH_POINTS", 1_000)
    draw_report(folder)
    page = _page(folder)
    assert "the bandwidth is drawn in steps of" in page
    assert len(page.encode()) < len(_page(example).encode())


def test_a_run_without_captured_bandwidth_still_gets_a_page_without_scripts(tmp_path):
    folder = write_example(tmp_path)
    header = (folder / "link_bandwidth.csv").read_text().splitlines()[0]
    (folder / "link_bandwidth.csv").write_text(header + "\n")
    draw_report(folder)
    page = _page(folder)
    assert "captured no bandwidth" in page and "<script" not in page
    assert story.CALIBRATION in _row(page, "gate", "b")
