"""Stolen CPU (apps.hoststeal): /proc/stat parsing, shares, and the meter over a measurement."""

import time

import pytest

from apps import hoststeal
from apps.hoststeal import (
    MAX_STEAL_PCT,
    HostBusy,
    Steal,
    StealMeter,
    cpu_ticks,
    steal_pct,
    undisturbed,
    wait_until_quiet,
)
from scenarios.experiment.drive import MEASURE_ATTEMPTS
from scenarios.experiment.fidelity import fidelity_advice

# a real /proc/stat head from this machine (2 vCPUs): user nice system idle iowait irq softirq steal guest guest_nice
STAT = """cpu  587416 0 413923 3549705 6462 0 55487 43434 0 0
cpu0 293000 0 207000 1774000 3200 0 27700 21700 0 0
intr 1 2 3
"""


def test_the_cpu_line_gives_steal_and_total_ticks():
    assert cpu_ticks(STAT) == (43434, 587416 + 413923 + 3549705 + 6462 + 55487 + 43434)


def test_a_kernel_without_a_steal_column_steals_nothing():
    assert cpu_ticks("cpu  10 0 5 100 0 0 0\n") == (0, 115)


def test_no_cpu_line_is_an_error():
    with pytest.raises(ValueError):
        cpu_ticks("intr 1 2\n")


def test_the_share_is_of_the_time_between_two_readings():
    assert steal_pct((100, 1000), (130, 1200)) == pytest.approx(15.0)
    assert steal_pct((100, 1000), (100, 1000)) == 0.0


def test_a_measurement_is_disturbed_only_above_the_limit():
    assert not Steal(MAX_STEAL_PCT, 20.0).disturbed
    assert Steal(MAX_STEAL_PCT + 0.1, 6.0).disturbed


def test_the_meter_reports_the_mean_and_the_worst_sample():
    # ticks: 10 % stolen in the first sample, 40 % in the second, none after
    readings = [(0, 0), (10, 100), (50, 200), (50, 300)]
    calls = []

    def read():
        calls.append(1)
        return readings[min(len(calls), len(readings)) - 1]

    meter = StealMeter(read=read, sample_s=0.005).start()
    while len(calls) < len(readings) + 1:  # every reading taken, and one more
        time.sleep(0.005)
    result = meter.stop()
    assert result.peak_pct == pytest.approx(40.0)
    assert result.mean_pct == pytest.approx(50 / 3)


def test_advice_names_each_disturbed_measurement_and_its_share():
    advice = fidelity_advice({}, 50.0, 0.97, [], 0, None, {"gate": 12.4, "solo beta": 7.0})
    assert advice.startswith(f"this machine's host took more than {MAX_STEAL_PCT:g} % of its CPU in all "
                             f"{MEASURE_ATTEMPTS} attempts at gate, solo beta (gate 12 %, solo beta 7 %)")


def test_a_disturbed_measurement_is_taken_again_and_the_last_is_returned(monkeypatch):
    # each measurement moves the clock by 100 ticks; the first two have 30 % stolen, the third 1 %
    stolen = iter([30, 30, 1])
    ticks = [0, 0]
    seen = []

    def measure(attempt):
        seen.append(attempt)
        ticks[0] += next(stolen)
        ticks[1] += 100
        return ticks[0]

    waits = []
    monkeypatch.setattr(hoststeal, "read_ticks", lambda: tuple(ticks))
    assert undisturbed(measure, "test", wait=lambda: waits.append(1)) == 61
    assert seen == [1, 2, 3] and len(waits) == 2  # a wait before each new attempt
    stolen = iter([30, 30, 30])
    assert undisturbed(measure, "test", attempts=2, wait=lambda: None) == 121  # still disturbed: the last result


def test_a_test_gets_host_busy_when_every_attempt_was_disturbed(monkeypatch):
    ticks, stolen = [0, 0], iter([30, 12])

    def measure(_attempt):
        ticks[0] += next(stolen)
        ticks[1] += 100
        return "result"

    monkeypatch.setattr(hoststeal, "read_ticks", lambda: tuple(ticks))
    with pytest.raises(HostBusy, match=r"took 30\.0, 12\.0 % of the CPU in the 2 attempts at flows") as busy:
        undisturbed(measure, "flows", attempts=2, busy_raises=True, wait=lambda: None)
    assert busy.value.steal_pcts == [30.0, 12.0] and busy.value.result == "result"  # the last attempt's


def _clock(stolen_per_sample):
    """A fake /proc/stat reader and sleep: each sleep of a sample moves 100 ticks, ``stolen`` of them stolen."""
    ticks, slept = [0, 0], []
    stolen = iter(stolen_per_sample)

    def sleep(seconds):
        slept.append(seconds)
        if seconds == 2.0:
            ticks[0] += next(stolen)
            ticks[1] += 100

    return (lambda: tuple(ticks)), sleep, slept


def test_waiting_for_a_quiet_host_ends_at_the_first_quiet_sample():
    read, sleep, slept = _clock([20, 9, 3, 40])
    assert wait_until_quiet(pause_s=5.0, max_wait_s=40.0, sample_s=2.0, read=read, sleep=sleep) == pytest.approx(3.0)
    assert slept == [5.0, 2.0, 2.0, 2.0]


def test_waiting_for_a_quiet_host_gives_up_after_its_limit():
    read, sleep, slept = _clock([20] * 50)
    assert wait_until_quiet(pause_s=5.0, max_wait_s=11.0, sample_s=2.0, read=read, sleep=sleep) == pytest.approx(20.0)
    assert slept == [5.0, 2.0, 2.0, 2.0]  # 5 + 3 samples of 2 s reach the 11-s limit


def test_the_shares_that_made_a_run_measure_again_are_read_back_from_its_output(monkeypatch, caplog):
    """A test whose deadline passed while a run re-measured on a busy host reads the host's shares
    from the run's own warnings (both kinds: a run's measurement and :func:`undisturbed`'s)."""
    from scenarios.experiment import drive

    ticks, stolen = [0, 0], iter([30, 2])

    def measure(_attempt):
        ticks[0] += next(stolen)
        ticks[1] += 100

    monkeypatch.setattr(hoststeal, "read_ticks", lambda: tuple(ticks))
    caplog.set_level("WARNING")
    drive.log.warning(drive.DISTURBED_LINE, "solo b", 12.34, hoststeal.MAX_STEAL_PCT)
    undisturbed(measure, "flows", attempts=2, wait=lambda: None)
    assert hoststeal.measured_again_pcts(caplog.text) == [12.3, 30.0]
    assert hoststeal.measured_again_pcts("solo b: 5 iterations\nnone: measured") == []
