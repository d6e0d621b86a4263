"""The time-scale factor K (scenarios/timescale.py): the scenario the fabric runs, and its figures turned back."""

import json
import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest
from results_example import EPOCHS_S, MEASURED_MS, summary_json, write_example

from apps.jobmodel import burst_bytes
from controller.gate import DataFlow, GateWindow, MeterMod, WindowGate
from scenarios import spec
from scenarios.errors import InputError
from scenarios.experiment.runner import gate_floor_options
from scenarios.experiment.summary import summary_in_scenario_units
from scenarios.report.terminal import print_table
from scenarios.results import load_results
from scenarios.summary_record import SummaryRecord
from scenarios.timescale import (
    in_scenario_units,
    on_wire,
    on_wire_units,
    scaled,
    tables_in_scenario_units,
)
from topo.leafspine import JUMBO_MTU, FabricIntf
from topo.wiring import DEFAULT_QUEUE_MS, KERNEL_TCP_RTO_MIN_MS

REPO = Path(__file__).resolve().parents[2]
SHIFTBED = str(Path(sys.executable).with_name("shiftbed"))
PAIR = """
name: pair
quantum_ms: 1
duration_s: 6
guard_ms: 5
fabric: {spines: 1, leaves: 2, hosts_per_leaf: 2, host_link_mbps: 50, fabric_link_mbps: 40}
jobs:
  - {name: alpha, period_ms: 300, comm_ms: 100, workers: [h1, h3], jitter_ms: 4, gradient_mb: 0.5}
  - {name: beta, period_ms: 600, comm_ms: 150, workers: [h2, h4]}
"""


def pair(time_scale: float | None = None) -> spec.Scenario:
    return spec.parse(PAIR + (f"time_scale: {time_scale}\n" if time_scale is not None else ""), "pair.yaml")


def test_on_wire_multiplies_every_time_by_k_and_divides_every_rate_by_k():
    written, wire = pair(4), on_wire(pair(4))
    assert wire.time_scale == 4 and wire.quantum_ms == 4 and wire.duration_s == 24 and wire.knobs.guard_ms == 20
    assert [(j.period_ms, j.comm_ms, j.jitter_ms) for j in wire.jobs] == [(1200, 400, 16), (2400, 600, 0)]
    assert (wire.fabric.host_link_mbps, wire.fabric.fabric_link_mbps) == (12.5, 10)
    assert wire.fabric.queue_ms == 4 * DEFAULT_QUEUE_MS  # the default queue, scaled as any other
    assert wire.fabric.tcp_rto_min_ms == 4 * KERNEL_TCP_RTO_MIN_MS  # a round trip is K times longer, so is a timeout
    assert [j.gradient_mb for j in wire.jobs] == [j.gradient_mb for j in written.jobs]  # bytes stay


def test_a_burst_and_a_queue_hold_the_same_bytes_on_the_wire():
    for k in (1.5, 3, 4, 5):
        written, wire = pair(k), on_wire(pair(k))
        for a, b in zip(written.jobs, wire.jobs, strict=True):  # comm_ms at the link's rate: the burst's bits
            assert b.comm_ms * wire.fabric.host_link_mbps == pytest.approx(a.comm_ms * written.fabric.host_link_mbps)
        queue_bits = (written.fabric.queue_ms or DEFAULT_QUEUE_MS) * written.fabric.fabric_link_mbps
        assert wire.fabric.queue_ms * wire.fabric.fabric_link_mbps == pytest.approx(queue_bits)


def link_mbps(wire: spec.Scenario) -> float:
    """The rate the run gives each job's flows (``runner.Experiment``): the slower of the two links."""
    return min(wire.fabric.host_link_mbps, wire.fabric.fabric_link_mbps)


def test_a_bursts_bytes_are_the_same_at_k_1_and_k_4():
    for fill in (1.0, 0.8):
        moved = {k: [burst_bytes(j.comm_ms, link_mbps(on_wire(pair(k))), fill) for j in on_wire(pair(k)).jobs]
                 for k in (1, 4)}
        assert moved[1] == moved[4] and moved[1][0] == int(40e6 / 8 * 0.1 * fill)


def gate_meters(k: float) -> list[MeterMod]:
    """Every meter message of a gated job over one period of the pair run at ``k``, the floor as the run asks."""
    wire = on_wire(pair(k))
    alpha = wire.jobs[0]
    gate = WindowGate({"alpha": GateWindow(alpha.period_ms, 0.0, alpha.comm_ms)},
                      {"alpha": [DataFlow(0x101, "10.0.0.1", "10.0.0.3", 5701)]}, 0.0,
                      **gate_floor_options(link_mbps(wire), wire.time_scale))
    edges = gate.edges(0.0, 1.5 * alpha.period_ms / 1000)
    return [m for m in gate.setup() + [m for e in edges for m in e.mods] if isinstance(m, MeterMod)]


def test_the_gates_meters_hold_the_same_bytes_at_k_1_and_k_4():
    one, four = gate_meters(1), gate_meters(4)
    assert [m.burst_kbit for m in one] == [m.burst_kbit for m in four]
    floor = {m.rate_kbps: m.burst_kbit for m in one if m.command == "add"}
    assert floor == {800: 200}  # 2 % of 40 Mbit/s, a quarter of a second's bucket
    floor_four = [m for m in four if m.command == "add"]
    assert [(m.rate_kbps, m.burst_kbit) for m in floor_four] == [(200, 200)]  # a quarter of the rate, as many bits
    assert floor_four[0].burst_kbit * 1000 / 8 > JUMBO_MTU  # a full segment fits the bucket


def port_byte_sizes(bw_mbps: float, queue_ms: float, on_host: bool) -> tuple[list[str], list[float]]:
    """A fabric port's tc commands: every size in bytes (limits, bursts, quanta) and every rate in Mbit/s."""
    intf = FabricIntf.__new__(FabricIntf)  # no interface is touched
    intf.mtu, intf.queue_ms, intf.node = JUMBO_MTU, queue_ms, object() if on_host else None
    text = " ".join(intf.bwCmds(bw=bw_mbps)[0])
    sizes = re.findall(r"\b(?:limit|burst|cburst|quantum) (\S+)", text)
    rates = [float(r) for r in re.findall(r"\b(?:rate|ceil) ([0-9.e+-]+)Mbit", text)]
    return sizes, rates


def test_every_port_queue_and_bucket_holds_the_same_bytes_at_k_1_and_k_4():
    for on_host in (False, True):
        sizes, rates = {}, {}
        for k in (1, 4):
            fabric = on_wire(pair(k)).fabric  # the fabric's default queue where the scenario gives none
            sizes[k], rates[k] = port_byte_sizes(fabric.fabric_link_mbps, fabric.queue_ms or DEFAULT_QUEUE_MS, on_host)
        assert sizes[1] == sizes[4] and len(sizes[1]) > 10
        assert rates[4] == pytest.approx([r / 4 for r in rates[1]]) and len(rates[1]) > 10
    switch_sizes, _ = port_byte_sizes(40, DEFAULT_QUEUE_MS, on_host=False)
    assert "100000" in switch_sizes  # the data queue: 20 ms at 40 Mbit/s, in bytes


def test_the_scenario_at_k_1_is_the_scenario_and_scaling_back_round_trips():
    assert on_wire(pair()) == pair()
    for k in (2, 3, 4.5):
        back = scaled(on_wire(pair(k)), 1 / k)
        assert back.quantum_ms == pytest.approx(1) and back.duration_s == pytest.approx(6)
        assert [t for j in back.jobs for t in (j.period_ms, j.comm_ms)] == pytest.approx([300, 100, 600, 150])
        assert back.fabric.fabric_link_mbps == pytest.approx(40)


def test_the_model_sees_the_scenario_as_written_whatever_k():
    assert pair(4).timings() == pair().timings() and pair(4).time_scale == 4 and pair().time_scale == 1


@pytest.mark.parametrize("value, message", [
    ("0.5", "pair.yaml: time_scale: must be >= 1, got 0.5"),
    ("x", "pair.yaml: time_scale: must be a number, got 'x'"),
    ("true", "pair.yaml: time_scale: must be a number, got True"),
    (".inf", "pair.yaml: time_scale: must be finite"),
    ("600", "pair.yaml: time_scale: the ports' queue of 20 ms times 600 is more than the 10000 ms"),
    ("6", "pair.yaml: time_scale: the hosts' minimum TCP retransmission timeout of 200 ms times 6 is more than"),
])
def test_a_bad_time_scale_in_the_file_is_one_line_naming_the_field(value, message):
    with pytest.raises(InputError) as raised:
        spec.parse(PAIR + f"time_scale: {value}\n", "pair.yaml")
    assert str(raised.value).startswith(message) and "\n" not in str(raised.value)


def test_a_period_times_k_beyond_a_jobs_longest_is_refused():
    with pytest.raises(InputError, match=r"--time-scale: alpha's period 300 ms times 3000 is more than"):
        spec.with_time_scale(replace(pair(), fabric=replace(pair().fabric, queue_ms=1, tcp_rto_min_ms=0.1),
                                     knobs=replace(pair().knobs, guard_ms=0)), 3000)


@pytest.mark.parametrize("knob, value_ms, message", [
    ("quantum_ms", 50, "--time-scale: quantum_ms 50 times 300 is more than the 10000 ms the controller accepts"),
    ("guard_ms", 40, "--time-scale: guard_ms 40 times 300 is more than the 1000 ms the controller accepts"),
])
def test_a_quantum_or_guard_band_times_k_beyond_what_the_controller_accepts_is_refused(knob, value_ms, message):
    """Refused when the scenario is loaded: the controller would refuse the policy half-way through the run."""
    quiet = replace(pair(), fabric=replace(pair().fabric, queue_ms=1, tcp_rto_min_ms=1))
    doc = {"quantum_ms": replace(quiet, quantum_ms=value_ms),
           "guard_ms": replace(quiet, knobs=replace(quiet.knobs, guard_ms=value_ms))}[knob]
    with pytest.raises(InputError) as raised:
        spec.with_time_scale(doc, 300)
    assert str(raised.value) == message
    assert spec.with_time_scale(doc, 10).time_scale == 10


@pytest.mark.parametrize("field, value", [("quantum_ms", 10_001), ("guard_ms", 1_001)])
def test_a_quantum_or_guard_band_beyond_what_the_controller_accepts_is_refused_in_the_file(field, value):
    with pytest.raises(InputError, match=rf"^pair.yaml: {field}: must be <= "):
        spec.parse(PAIR + f"{field}: {value}\n", "pair.yaml")


@pytest.mark.parametrize("value", ["0.99", "abc", "inf", "-4"])
def test_a_bad_time_scale_on_the_command_line_exits_2_before_anything_is_built(value, tmp_path):
    result = subprocess.run([SHIFTBED, "run", str(REPO / "scenarios" / "classroom.yaml"), "--time-scale", value,
                             "--out", str(tmp_path)], capture_output=True, text=True, cwd=REPO)
    assert result.returncode == 2
    assert result.stderr.startswith("shiftbed run: --time-scale: must be a number >= 1") and not list(tmp_path.iterdir())


def test_figures_come_back_in_the_scenarios_units_by_their_names():
    wire = {"mean_iteration_ms": 1200.0, "predicted_range_ms": [1180.0, 1260.0], "offsets_ms": {"a": 400.0},
            "expected_solo_mbps": {"a": 12.5}, "burst_mbps": 10.0, "epoch_s": 1.79e9, "iterations": 20,
            "error_pct": 3.0, "knife_edge": False, "solo": {"a": {"link_samples_ms": [40.0, 80.0]}}}
    back = in_scenario_units(wire, 4)
    assert back == {"mean_iteration_ms": 300.0, "predicted_range_ms": [295.0, 315.0], "offsets_ms": {"a": 100.0},
                    "expected_solo_mbps": {"a": 50.0}, "burst_mbps": 40.0, "epoch_s": 1.79e9, "iterations": 20,
                    "error_pct": 3.0, "knife_edge": False, "solo": {"a": {"link_samples_ms": [10.0, 20.0]}}}
    assert on_wire_units(back, 4) == wire


def test_a_summary_from_the_wire_says_k_and_gives_every_time_in_the_scenarios_units():
    on_the_wire = SummaryRecord.from_dict(on_wire_units(summary_json(), 4))
    summary = summary_in_scenario_units(on_the_wire, 4)
    assert summary.time_scale == 4
    assert summary.policies["gate"].jobs["a"].mean_iteration_ms == pytest.approx(MEASURED_MS["gate"]["a"])
    assert summary.policies["gate"].epoch_s == EPOCHS_S["gate"]  # an instant, not a duration
    assert summary.to_dict()["time_scale"] == 4 and SummaryRecord.from_dict(summary.to_dict()) == summary
    assert summary_in_scenario_units(on_the_wire, 1) is on_the_wire


def test_the_tables_come_back_counted_from_each_policys_epoch_over_k():
    epoch = 1000.0
    iterations = pd.DataFrame({"policy": ["gate"] * 2, "job": ["a"] * 2, "start": [epoch + 1.2, epoch + 2.4],
                               "comm_start": [epoch + 2.0, epoch + 3.2], "comm_end": [epoch + 2.4, epoch + 3.6],
                               "end": [epoch + 2.4, epoch + 3.6]})
    bandwidth = pd.DataFrame({"policy": ["gate"], "link": ["l"], "t_s": [0.04], "job": ["a"], "mbps": [12.5]})
    windows = pd.DataFrame({"policy": ["gate"], "job": ["a"], "open_s": [0.8], "close_s": [1.2]})
    it, bw, win = tables_in_scenario_units(iterations, bandwidth, windows, {"gate": epoch}, 4)
    assert list(it["start"] - epoch) == pytest.approx([0.3, 0.6]) and list(it["end"] - epoch) == pytest.approx([0.6, 0.9])
    assert (bw["t_s"].item(), bw["mbps"].item()) == pytest.approx((0.01, 50.0))
    assert (win["open_s"].item(), win["close_s"].item()) == pytest.approx((0.2, 0.3))


def test_a_folder_of_a_slowed_run_reads_back_in_the_scenarios_units_and_its_report_says_k(tmp_path):
    from scenarios.report.draw import draw_report

    folder = write_example(tmp_path)
    plain = load_results(folder)
    written = json.loads((folder / "summary.json").read_text())
    (folder / "summary.json").write_text(json.dumps({**written, "time_scale": 2}))
    for name, frame in (("iterations.csv", plain.iterations), ("windows.csv", plain.windows)):
        columns = ["start", "comm_start", "comm_end", "end"] if name == "iterations.csv" else ["open_s", "close_s"]
        wire = frame.copy()
        for policy, rows in wire.groupby("policy"):  # as the wire of a run at K = 2 measured them
            origin = EPOCHS_S[policy] if name == "iterations.csv" else 0.0
            wire.loc[rows.index, columns] = origin + (rows[columns] - origin) * 2
        wire.to_csv(folder / name, index=False)
    slowed = load_results(folder)
    assert slowed.summary.time_scale == 2
    pd.testing.assert_frame_equal(slowed.iterations, plain.iterations, check_exact=False)
    pd.testing.assert_frame_equal(slowed.windows, plain.windows, check_exact=False)
    draw_report(folder)
    assert "Time scale K = 2: the fabric ran every time 2 times longer" in (folder / "report.md").read_text()
    assert "Time scale K = 2" in (folder / "report.html").read_text()
    unscaled = write_example(tmp_path / "plain")
    draw_report(unscaled)
    assert "Time scale K" not in (unscaled / "report.md").read_text()


def test_the_run_table_states_k_only_when_it_is_not_1(capsys):
    from scenarios.analysis.verdict import policy_changes

    for k in (1, 4):
        summary = replace(SummaryRecord.from_dict(summary_json()), time_scale=k)
        print_table(summary, Path("/r"), policy_changes(summary))
        first = capsys.readouterr().out.splitlines()[0]
        assert first.startswith("time scale K = 4: the fabric ran 4 times slower") == (k == 4)
