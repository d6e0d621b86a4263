"""report.html in a real browser: Debian's Chromium, headless, over the DevTools protocol.

On each folder of the ``demo_run`` fixture (conftest.py: the demo's real runs, shared with
test_demo_end_to_end.py and test_run.py, so no network is built for these tests), and on the
unit tests' example folder (no root): the page loads with no console error and no request
beyond the file itself, its screenshot is not blank, a drag pans every panel of the timeline alike,
and the timeline's Bokeh data holds every burst the folder's tables hold, drawn, each in one of the
job's communication phases.
"""

from __future__ import annotations

import importlib.util
import pathlib

import pytest
from headless_chromium import CHROMIUM, open_page
from PIL import Image, ImageStat

from scenarios.report import timeline
from scenarios.report.draw import draw_report
from scenarios.results import REPORT_HTML_FILE, load_results

EXAMPLE = pathlib.Path(__file__).resolve().parents[1] / "unit" / "results_example.py"
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (`make test` installs it)")

# A page that rendered: its greys spread (text, tables, plots on white), and a fair part of it is not white.
MIN_GREY_STDDEV = 20.0
MIN_INKED_SHARE = 0.03
# The page's own files: itself, and images inline (data:). Anything else would need a network.
OWN_SCHEMES = ("file:", "data:", "about:", "blob:")
# A burst on the wire lies within its iteration's communication phase (launch to end, as its worker
# timed it) up to the capture's 10-ms bins; the run's end may cut one burst off its iteration.
PHASE_SLACK_S = 0.02
UNMATCHED_BURSTS_MAX = 1

BOKEH_READY = "window.Bokeh !== undefined && Bokeh.documents.length > 0 && [...Bokeh.index].length > 0"
# Each burst renderer's data and how many glyphs its view drew, by name.
BURST_GLYPHS = """(() => {
  const out = {};
  for (const doc of Bokeh.documents) for (const model of doc.all_models) {
    if (!model.name || !model.name.startsWith("bursts|")) continue;
    const view = Bokeh.index.find_one(model);
    const data = model.data_source.data;
    out[model.name] = {jobs: Array.from(data.job), left: Array.from(data.left), right: Array.from(data.right),
                       drawn: view ? view.glyph.data_size : 0};
  }
  return out;
})()"""
# The first panel, scrolled into view: where it is on the screen.
FIRST_PANEL = """(() => {
  const plot = [...Bokeh.documents[0].all_models].find(m => m.type === "Figure");
  const view = Bokeh.index.find_one(plot);
  view.el.scrollIntoView();
  const box = view.el.getBoundingClientRect();
  return {x: box.left + 0.6 * box.width, y: box.top + 0.6 * box.height};
})()"""
# Where each panel's time axis starts and ends.
VIEWS = """[...Bokeh.documents[0].all_models].filter(m => m.type === "Figure").map(p => [p.x_range.start, p.x_range.end])"""
DRAG_PX = -300  # a drag to the left: later in the run comes into view
# Every plot's x range, and the tools that zoom and pan it.
X_RANGES_AND_TOOLS = """(() => {
  const models = [...Bokeh.documents[0].all_models];
  const plots = models.filter(m => m.type === "Figure");
  return {ranges: [...new Set(plots.map(p => p.x_range.id))].length, plots: plots.length,
          tools: [...new Set(models.filter(m => m.type.endsWith("Tool")).map(m => m.type))]};
})()"""


def check_page(folder: pathlib.Path, screenshot: pathlib.Path, measured: bool) -> None:
    """Open the folder's report.html in Chromium and check what a reader would see; a ``measured``
    folder (a real run's) has a burst on the wire per iteration of each job."""
    results = load_results(folder)
    bursts = timeline.link_bursts(results.link_bandwidth)
    assert not bursts.empty, f"{folder}: no bursts in link_bandwidth.csv"
    with open_page((folder / REPORT_HTML_FILE).as_uri(), width_px=1280, height_px=1000) as page:
        page.wait_until(BOKEH_READY)
        glyphs = page.evaluate(BURST_GLYPHS)
        layout = page.evaluate(X_RANGES_AND_TOOLS)
        page.screenshot(screenshot)
        opening = page.evaluate(VIEWS)
        panel = page.evaluate(FIRST_PANEL)
        page.drag(panel["x"], panel["y"], DRAG_PX)
        page.wait_until(f"{VIEWS}[0][0] > {opening[0][0]}", timeout_s=10)
        dragged = page.evaluate(VIEWS)
        errors, urls = page.errors(), page.requested_urls()
    assert errors == [], errors
    assert [u for u in urls if not u.startswith(OWN_SCHEMES)] == [], "the page reached for the network"
    image = Image.open(screenshot).convert("L")
    inked = sum(image.histogram()[:240]) / (image.width * image.height)
    assert ImageStat.Stat(image).stddev[0] > MIN_GREY_STDDEV and inked > MIN_INKED_SHARE, (screenshot, inked)

    panels = timeline.panels(results)
    assert set(glyphs) == {f"bursts|{policy}|{link}" for policy, link, _ in panels}
    for (policy, link), mine in bursts.groupby(["policy", "link"]):
        shown = glyphs[f"bursts|{policy}|{link}"]
        assert shown["drawn"] == len(mine) == len(shown["left"]), (policy, link)
        assert sorted(shown["left"]) == pytest.approx(sorted(mine["start_s"]), abs=1e-6)
        if measured:
            for job in set(mine["job"]):
                spans = [(left, right) for j, left, right in zip(shown["jobs"], shown["left"], shown["right"],
                                                                  strict=True) if j == job]
                check_bursts_match_iterations(results, policy, job, spans, (policy, link, job))
    assert layout["ranges"] == 1 and layout["plots"] == 2 * len(panels)  # one time axis: zoom one, zoom all
    moved_s = dragged[0][0] - opening[0][0]  # a drag on the first panel moved every panel's view alike
    assert moved_s > 0 and all(view == pytest.approx([start + moved_s, end + moved_s])
                               for view, (start, end) in zip(dragged, opening, strict=True)), (opening[:2], dragged[:2])
    assert {"PanTool", "BoxZoomTool", "WheelZoomTool", "ResetTool"} <= set(layout["tools"]), layout["tools"]


def write_example(root: pathlib.Path, **kwargs) -> pathlib.Path:
    """The unit tests' example results folder (tests/unit/results_example.py)."""
    spec = importlib.util.spec_from_file_location("results_example", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.write_example(root, **kwargs)


def check_bursts_match_iterations(results, policy: str, job: str, spans: list[tuple[float, float]], where) -> None:
    """Every communication phase of ``job``'s workers under ``policy`` (iterations.csv, its own clock) meets a
    burst drawn on the link, and every drawn burst but the run's last meets a phase: the timeline holds
    the run's bursts, and only them. (A burst a closed gate holds shows as two on the wire, both in its phase.)"""
    epoch_s = results.summary.policies[policy].epoch_s
    done = results.iterations[(results.iterations["policy"] == policy) & (results.iterations["job"] == job)]
    phases = list(zip(done["comm_start"] - epoch_s - PHASE_SLACK_S, done["comm_end"] - epoch_s + PHASE_SLACK_S,
                      strict=True))
    assert phases, where

    def meets(a, b):
        return a[0] < b[1] and b[0] < a[1]

    missed = [p for p in phases if not any(meets(p, s) for s in spans)]
    assert missed == [], (where, missed[:5])
    unmatched = [s for s in spans if not any(meets(p, s) for p in phases)]
    assert len(unmatched) <= UNMATCHED_BURSTS_MAX, (where, unmatched[:5])


def test_the_example_report_renders_in_chromium_with_every_burst(tmp_path):
    folder = write_example(tmp_path / "example", duration_s=6.0)
    draw_report(folder)
    check_page(folder, tmp_path / "example.png", measured=False)


@pytest.mark.root
def test_each_demo_runs_report_renders_in_chromium_with_every_burst(demo_run, tmp_path):
    result, out = demo_run
    assert result.returncode == 0, result.stderr[-3000:]
    folders = sorted(p.parent for p in out.glob(f"*/*/{REPORT_HTML_FILE}"))
    assert {f.parent.name for f in folders} == {"classroom", "two-jobs-coprime"}, folders
    for folder in folders:
        check_page(folder, tmp_path / f"{folder.parent.name}.png", measured=True)
