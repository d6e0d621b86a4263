"""The run's display: its estimate of the whole run, and a log that stays readable (no root).

A simulated run (the demo's two scenarios, their stages and measurements, on
an injected clock) is driven through the display into a pipe, as when standard
error is a file, ``tee`` or CI.
"""

import io
import logging
import os
import re
import threading

import pytest
from rich.console import Console

from scenarios import spec
from scenarios.commands.demo import DEMO_DURATION_S
from scenarios.experiment import estimate
from scenarios.experiment.counts import CALIBRATION_ITERATIONS, MODEL_CALIBRATION_ITERATIONS
from scenarios.experiment.display import RunDisplay, _Status
from scenarios.experiment.estimate import Stage, Timeline, run_stages
from scenarios.experiment.progress import stages
from scenarios.experiment.progressview import (
    MAX_LINE_CHARS,
    PLAIN_INTERVAL_S,
    PlainLog,
    clock_text,
    duration_text,
    estimate_line,
    fit,
    measure_text,
    minutes_text,
)
from scenarios.shipped import DEMO_SCENARIOS, SCENARIOS_DIR


class FakeClock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


# -- the estimate -----------------------------------------------------------------


def test_a_run_is_the_fabric_each_job_each_policy_and_the_report_in_order():
    found = run_stages("classroom", {"alpha": 300.0, "beta": 600.0}, ("none", "gate"), 12.0)
    assert [s.key for s in found] == [("classroom", "fabric", None), ("classroom", "calibrate", "alpha"),
                                      ("classroom", "calibrate", "beta"), ("classroom", "policy", "none"),
                                      ("classroom", "policy", "gate"), ("classroom", "report", None)]
    assert found[3].estimate_s == found[4].estimate_s == 12.0 + estimate.POLICY_OVERHEAD_S


def test_a_job_calibrates_in_its_solo_runs_iterations_plus_their_overhead():
    solo_s = estimate.SOLO_OVERHEAD_S + CALIBRATION_ITERATIONS * 0.6
    model_s = estimate.SOLO_OVERHEAD_S + MODEL_CALIBRATION_ITERATIONS * 0.6
    assert estimate.calibration_s(600.0) == pytest.approx(estimate.SIZING_RUNS * solo_s
                                                          + estimate.MODEL_RUNS * model_s)
    assert estimate.calibration_s(600.0) > estimate.calibration_s(300.0)


def test_what_is_left_counts_the_current_stage_down_and_the_later_stages_whole():
    clock = FakeClock()
    line = Timeline([Stage(("s", "fabric", None), 10.0), Stage(("s", "policy", "none"), 20.0),
                     Stage(("s", "report", None), 5.0)], clock)
    assert line.estimate_s == line.left_s() == 35.0
    line.begin(("s", "fabric", None))
    clock.now += 4
    assert (line.elapsed_s(), line.left_s()) == (4.0, 31.0)
    clock.now += 10  # the fabric took 14 s, not 10: its stage is spent, the rest still to come
    assert line.left_s() == 25.0
    line.begin(("s", "policy", "none"))
    clock.now += 5
    assert line.left_s() == 20.0 and line.stage_name() == "s: policy none"
    line.begin(("s", "calibrate", "unplanned"))  # not in the plan: ignored
    line.begin(("s", "fabric", None))  # a stage never goes back
    assert line.stage_name() == "s: policy none"
    line.end()
    clock.now += 100
    assert (line.elapsed_s(), line.left_s()) == (19.0, 0.0)


# -- what a log shows ------------------------------------------------------------


def test_times_are_read_as_minutes():
    assert [minutes_text(s) for s in (0, 5.4, 75, 3725)] == ["0:00", "0:05", "1:15", "1:02:05"]
    assert [duration_text(s) for s in (45, 400)] == ["45 s", "6 min 40 s"]
    assert clock_text(65, 320) == "[1:05, about 5:20 left]"


def test_a_line_longer_than_a_log_takes_is_wrapped_at_spaces():
    text = "fabric up; jobs meet on 40 links, captured at " + ", ".join(f"leaf{i}->spine1" for i in range(40))
    lines = fit(text)
    assert len(lines) > 1 and all(len(line) <= MAX_LINE_CHARS for line in lines)
    assert " ".join(line.strip() for line in lines) == text and lines[1].startswith("    ")
    assert fit("short") == ["short"]


def test_a_measurement_names_its_iterations_and_the_links_load():
    assert measure_text("gate", 7.2, 13.5, {"alpha": 21, "beta": 10}, 0.634) == (
        "gate 7/14 s  iterations alpha:21 beta:10  link 63%")
    assert measure_text("solo alpha", 40.0, 3.3, {"alpha": 6}, None) == "solo alpha 3/3 s  iterations alpha:6"
    assert measure_text("solo alpha", 0.2, 3.3, {}, None) == "solo alpha 0/3 s"  # before its first sample


def test_a_log_gets_every_stage_but_progress_only_every_interval():
    log = PlainLog(interval_s=5.0)
    assert log.progress("a", 0.0, 0.0, 60.0) == ["[0:00, about 1:00 left]   a"]
    assert log.progress("b", 4.9, 4.9, 55.0) == []
    assert log.stage("calibrated", 5.5, 5.5, 54.5) == ["[0:06, about 0:54 left] calibrated"]
    assert log.progress("c", 9.0, 9.0, 51.0) == []  # 3.5 s after the stage line
    assert log.progress("d", 10.5, 10.5, 49.5) == ["[0:10, about 0:50 left]   d"]


# -- the display driven through a simulated demo into a pipe ---------------------


def demo_runs():
    scenarios = [spec.load(SCENARIOS_DIR / name) for name in DEMO_SCENARIOS]
    return [(s.name, {j.name: j.period_ms for j in s.jobs}, s.policies) for s in scenarios]


def simulate_demo(display: RunDisplay, clock: FakeClock, slower: float = 1.0) -> list[str]:
    """The demo's events, each stage taking ``slower`` × its estimate, a sample every second while
    measuring; returns the stage lines said."""
    said = []

    def wait(seconds, measuring=None):
        while seconds > 0:
            step = min(1.0, seconds)
            clock.now, seconds = clock.now + step, seconds - step
            if measuring:
                display.update(measuring, 0.5)

    display.introduce()
    for name, periods, policies in demo_runs():
        with display.showing():
            said.append(f"{name}: theory says something; {', '.join(policies)} for 12 s each")
            stages.info("%s", said[-1])
            for stage in display.timeline.stages:
                scenario, kind, what = stage.key
                if scenario != name:
                    continue
                display.begin(stage.key)
                if kind in ("calibrate", "policy"):
                    label = f"solo {what}" if kind == "calibrate" else what
                    display.start_measure(label, stage.estimate_s * slower)
                    wait(stage.estimate_s * slower, {job: 3 for job in periods})
                    display.end_measure()
                else:
                    wait(stage.estimate_s * slower)
                said.append(f"{name}: {kind} {what or ''} done " + "x" * 150)  # long enough to wrap
                stages.info("%s", said[-1])
    display.finish()
    return said


@pytest.fixture
def piped():
    """A display writing into a pipe (not a terminal), the pipe's reader, and the clock."""
    read_fd, write_fd = os.pipe()
    writer = os.fdopen(write_fd, "w")
    chunks = []
    reader = threading.Thread(target=lambda: chunks.append(os.fdopen(read_fd).read()))
    reader.start()
    clock = FakeClock()
    runs = demo_runs()
    timeline = Timeline([s for name, periods, policies in runs
                         for s in run_stages(name, periods, policies, DEMO_DURATION_S)], clock)
    intro = estimate_line([r[0] for r in runs], sum(len(r[2]) for r in runs), DEMO_DURATION_S, timeline.estimate_s)
    display = RunDisplay(writer, timeline, intro, clock=clock)

    def output() -> list[str]:
        writer.close()
        reader.join(timeout=10)
        return chunks[0].splitlines()

    return display, clock, output


def elapsed_of(line: str) -> float:
    minutes, seconds = re.match(r"\[(\d+):(\d\d), about", line).groups()
    return int(minutes) * 60 + int(seconds)


def test_the_demos_log_has_short_lines_a_line_per_stage_sparse_progress_and_what_is_left(piped):
    display, clock, output = piped
    assert not display.terminal
    said = simulate_demo(display, clock)
    lines = output()
    assert max(len(line) for line in lines) <= MAX_LINE_CHARS
    assert lines[0].startswith("classroom, two-jobs-coprime: about ") and " in all " in lines[0]
    for text in said:  # each stage's line once, the clock before it, wrapped but whole
        head = text.split(" xxx")[0]
        starts = [i for i, line in enumerate(lines) if head in line]
        assert len(starts) == 1, text
        assert re.match(r"\[\d+:\d\d, about \d+:\d\d left\] ", lines[starts[0]])
    progress = [line for line in lines if re.match(r"\[\d+:\d\d, about \d+:\d\d left\]   ", line)]
    assert progress and all("iterations" in line and "link 50%" in line for line in progress)
    times = [elapsed_of(line) for line in progress]
    assert all(b - a >= PLAIN_INTERVAL_S - 1 for a, b in zip(times, times[1:], strict=False))  # m:ss rounds
    assert len(progress) <= (clock.now - 1000.0) / PLAIN_INTERVAL_S + 1
    assert lines[-1].startswith("done in ") and "estimated" in lines[-1]


def test_on_time_the_estimate_of_what_is_left_falls_with_the_clock_to_zero(piped):
    display, clock, output = piped
    simulate_demo(display, clock)
    lines = [line for line in output() if line.startswith("[")]
    pairs = [(elapsed_of(line), int(m) * 60 + int(s))
             for line in lines for m, s in [re.search(r"about (\d+):(\d\d) left", line).groups()]]
    total = display.timeline.estimate_s
    assert all(abs(elapsed + left - total) <= 2 for elapsed, left in pairs)  # on time: elapsed + left = estimate
    assert pairs[-1][1] <= 1


def test_a_run_slower_than_estimated_says_so_at_the_end(piped):
    display, clock, output = piped
    simulate_demo(display, clock, slower=1.5)
    last = output()[-1]
    estimated = display.timeline.estimate_s
    assert last == f"done in {duration_text(1.5 * estimated)} (estimated {duration_text(estimated)} before it started)"


def test_the_runs_log_records_pass_through_the_display_and_the_handlers_come_back(piped):
    display, clock, output = piped
    root = logging.getLogger()
    before = list(root.handlers)
    with display.showing():
        assert root.handlers != before
        logging.getLogger("scenarios.experiment.drive").warning("solo a: measuring it again")
    assert root.handlers == before
    assert "solo a: measuring it again" in output()


def test_on_a_terminal_the_status_shows_the_run_and_the_measurement():
    clock = FakeClock()
    timeline = Timeline(run_stages("classroom", {"alpha": 300.0}, ("gate",), 12.0), clock)
    display = RunDisplay(io.StringIO(), timeline, "intro", terminal=True, clock=clock)
    timeline.begin(("classroom", "policy", "gate"))
    display.start_measure("gate", 13.5)
    clock.now += 7
    display.update({"alpha": 21}, 0.63)
    screen = Console(file=io.StringIO(), width=160, record=True)
    screen.print(_Status(display))
    text = screen.export_text()
    assert "0:07, about" in text and "left" in text and "classroom: policy gate" in text
    assert "gate 7/14 s  iterations alpha:21  link 63%" in text


def test_a_stage_that_says_it_is_done_leaves_only_the_stages_after_it():
    clock = FakeClock()
    line = Timeline([Stage(("s", "calibrate", "a"), 30.0), Stage(("s", "policy", "none"), 20.0)], clock)
    line.begin(("s", "calibrate", "a"))
    clock.now += 4  # done early: what is left is the policy, not 26 s more of calibration
    line.complete()
    assert line.left_s() == 20.0
    line.begin(("s", "policy", "none"))
    assert line.left_s() == 20.0
