"""Lab 6 in a real browser: `shiftbed explore` served, driven in Debian's Chromium (tests/headless_chromium.py).

As the labs' other tests run their commands, this one does what the sheet asks
on the page: it loads it, moves beta's period slider from 600 to 603 ms,
reads `shift`'s gain for alpha before and after, and checks each against
`shiftbed plan --json` for the same scenario (the page's figure is shown to
one decimal of a per cent: within 0.1 point); it saves the scenario and runs
`plan` on the saved file; and it checks that a box holding no number gets a
message beside it, that a save outside the folder is refused, that the page
logged no error and that its screenshot is not blank. No root needed.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from headless_chromium import CHROMIUM, open_page
from PIL import Image, ImageStat

REPO = Path(__file__).resolve().parents[2]
SHIFTBED = str(Path(sys.executable).with_name("shiftbed"))
CLASSROOM = REPO / "scenarios" / "classroom.yaml"
pytestmark = [pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (`make test` installs it)"),
              pytest.mark.xdist_group("serial")]  # serves the explorer to a browser: one at a time

GAIN_POINTS = 0.1  # the page shows a change in per cent to one decimal
MIN_GREY_STDDEV, MIN_INKED_SHARE = 20.0, 0.03  # a rendered page, as test_report_in_browser.py judges one
MODEL = "Bokeh.documents[0].get_model_by_name('{}')"
READY = ("window.Bokeh !== undefined && Bokeh.documents.length > 0 && "
         f"{MODEL.format('gains')} !== null && {MODEL.format('gains')}.text.includes('data-gain')")
# Bokeh draws each widget in a shadow root: find an element by its class through them all.
DEEP = """globalThis.deep = (root, sel) => { const hit = root.querySelector(sel); if (hit) return hit;
  for (const el of root.querySelectorAll('*')) { if (el.shadowRoot) { const f = deep(el.shadowRoot, sel);
  if (f) return f; } } return null; };"""
FOCUS_HANDLE = DEEP + """(() => { const host = deep(document, '.CLASS'); host.scrollIntoView();
  deep(host.shadowRoot, '.noUi-handle').focus(); })()"""
CLICK_AT = DEEP + """(() => { const host = deep(document, '.CLASS'); host.scrollIntoView();
  const box = host.getBoundingClientRect(); return {x: box.left + box.width / 2, y: box.top + box.height / 2}; })()"""


@pytest.fixture
def explorer(tmp_path):
    """`shiftbed explore` serving the classroom scenario from ``tmp_path`` (where it saves): its URL."""
    server = subprocess.Popen([SHIFTBED, "explore", str(CLASSROOM), "--no-browser"], cwd=tmp_path,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        line = server.stdout.readline()
        m = re.search(r"serving (http://127\.0\.0\.1:\d+/)", line)
        assert m, (line, server.stderr.read() if server.poll() is not None else "")
        yield m.group(1)
    finally:
        server.terminate()
        server.wait(timeout=10)


def gain(page, policy: str, job: str) -> float:
    """The change against `none` the page shows for ``job`` under ``policy``, in per cent."""
    text = page.evaluate(f"{MODEL.format('gains')}.text")
    m = re.search(rf"data-gain='{policy}/{job}'>([+-]\d+\.\d) %", text)
    assert m, text[:500]
    return float(m.group(1))


def planned(path: Path, *options: str) -> dict:
    result = subprocess.run([SHIFTBED, "plan", str(path), *options, "--json"], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def answered(page, text: str) -> None:
    page.wait_until(f"{MODEL.format('feasibility')}.text.includes({json.dumps(text)})", timeout_s=30)


def click(page, cls: str) -> None:
    """A press and release of the left button on the middle of the widget of that class, as a hand would."""
    at = page.evaluate(CLICK_AT.replace('CLASS', cls))
    for kind in ("mousePressed", "mouseReleased"):
        page.send("Input.dispatchMouseEvent", type=kind, x=at["x"], y=at["y"], button="left", clickCount=1)


def test_lab6_on_the_page_a_shift_separates_the_pair_and_3_ms_break_it(explorer, tmp_path):
    with open_page(explorer, width_px=1400, height_px=1000) as page:
        page.wait_until(READY, timeout_s=60)
        page.wait_until(DEEP + "deep(document, '.slider-period-1') !== null", timeout_s=60)  # drawn, too
        before = gain(page, "shift", "alpha")
        # beta's period slider, moved from the keyboard: focus its handle, three steps of 1 ms to the right
        page.evaluate(FOCUS_HANDLE.replace('CLASS', 'slider-period-1'))
        for _ in range(3):
            for kind in ("keyDown", "keyUp"):
                page.send("Input.dispatchKeyEvent", type=kind, key="ArrowRight", code="ArrowRight",
                          windowsVirtualKeyCode=39)
        answered(page, "gcd(300, 603)")
        after = gain(page, "shift", "alpha")
        status = page.evaluate(f"{MODEL.format('status')}.text")

        page.evaluate(f"{MODEL.format('box|period/0')}.value = 'abc'")
        page.wait_until(f"{MODEL.format('message|period/0')}.text.includes('not a number')", timeout_s=30)
        page.evaluate(f"{MODEL.format('box|period/0')}.value = '300'")
        page.wait_until(f"{MODEL.format('message|period/0')}.text === ''", timeout_s=30)

        page.evaluate(f"{MODEL.format('save-path')}.value = '../outside.yaml'")
        click(page, "save-button")
        page.wait_until(f"{MODEL.format('message|save')}.text.includes('outside')", timeout_s=30)
        page.evaluate(f"{MODEL.format('save-path')}.value = 'lab6-603.yaml'")
        click(page, "save-button")
        page.wait_until(f"{MODEL.format('message|save')}.text.includes('data-saved')", timeout_s=30)
        page.screenshot(tmp_path / "lab6.png")
        errors = page.errors()
    assert errors == [], errors

    first = planned(CLASSROOM)
    assert before == pytest.approx(100 * first["policies"]["shift"]["alpha"]["change_vs_none"], abs=GAIN_POINTS)
    assert before > 10  # a shift separates 300/600 ...
    saved = tmp_path / "lab6-603.yaml"
    assert saved.is_file() and not (tmp_path.parent / "outside.yaml").exists()
    cut = re.search(r"--horizon-s (\d+(?:\.\d+)?)", status)
    second = planned(saved, *(["--horizon-s", cut.group(1)] if cut else []))
    assert [j["period_ms"] for j in second["jobs"]] == [300, 603] and not second["feasible"]
    assert after == pytest.approx(100 * second["policies"]["shift"]["alpha"]["change_vs_none"], abs=GAIN_POINTS)
    assert abs(after) < 1  # ... and 3 ms break it

    image = Image.open(tmp_path / "lab6.png").convert("L")
    inked = sum(image.histogram()[:240]) / (image.width * image.height)
    assert ImageStat.Stat(image).stddev[0] > MIN_GREY_STDDEV and inked > MIN_INKED_SHARE, inked
