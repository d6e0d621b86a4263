"""Disk space: the estimate before a run, the reserve the results folder holds, the floor that stops
a measurement, and SIGHUP on Ctrl-C's path. The full disk on a real run is in
``tests/integration/test_reliability.py``."""

import signal
from types import SimpleNamespace

import pytest

from scenarios import interrupts
from scenarios.errors import EnvironmentProblem
from scenarios.experiment import disk, drive, session
from scenarios.results import RESERVE_BYTES, RESERVE_FILE, ResultsWriter


def test_the_estimate_counts_every_captured_second_at_1500_byte_frames():
    # 50 Mbit/s = 4166.67 frames of 1500 B per second, 96 + 16 B kept of each: 466 667 B/s;
    # calibration of one 300-ms job: 3 sizing rounds of 6 iterations and 3 model runs of 21, 81 x 0.3 s;
    # two policies of 10 s: 44.3 s captured in all, plus the fixed 20 MiB and the 4 MiB reserve.
    expected = int(50e6 / 8 / 1500 * 112 * (0.3 * 81 + 2 * 10)) + 20 * 2**20 + 4 * 2**20
    assert disk.estimated_bytes(50, [300.0], 2, 10.0) == expected


def test_a_run_that_does_not_fit_is_refused_in_one_line(monkeypatch, tmp_path):
    scenario = SimpleNamespace(fabric=SimpleNamespace(host_link_mbps=50, fabric_link_mbps=50),
                               jobs=[SimpleNamespace(period_ms=300.0)])
    monkeypatch.setattr(disk, "free_bytes", lambda path: 10 * 2**20)
    with pytest.raises(EnvironmentProblem) as refused:
        session.check_free_space(str(tmp_path), scenario, 2, 10.0)
    message = str(refused.value)
    assert "\n" not in message and "10 MB free" in message and "--duration" in message
    monkeypatch.setattr(disk, "free_bytes", lambda path: 10 * 2**30)
    session.check_free_space(str(tmp_path), scenario, 2, 10.0)  # fits: no error


def test_free_bytes_reads_the_nearest_existing_parent(tmp_path):
    assert disk.free_bytes(tmp_path / "not" / "yet") == disk.free_bytes(tmp_path) > 0


def test_the_results_folder_holds_a_real_reserve_until_it_finishes(tmp_path):
    writer = ResultsWriter(tmp_path, "demo")
    reserve = writer.partial_dir / RESERVE_FILE
    assert reserve.stat().st_size == RESERVE_BYTES
    assert reserve.stat().st_blocks * 512 >= RESERVE_BYTES  # allocated, not a sparse file
    writer.release_reserve()
    writer.release_reserve()  # idempotent
    assert not reserve.exists()
    final = writer.finish(complete=False, reason="test")
    assert not (final / RESERVE_FILE).exists()


def test_finish_gives_the_reserve_back_itself(tmp_path):
    writer = ResultsWriter(tmp_path, "demo")
    final = writer.finish(complete=False, reason="test")
    assert not (final / RESERVE_FILE).exists()


class _Alive:
    pid = 1

    @staticmethod
    def alive():
        return True


def test_a_measurement_stops_when_the_disk_is_nearly_full(monkeypatch, tmp_path):
    fabric = SimpleNamespace(controller=_Alive(), track=lambda pid, label: None)
    measurer = drive.Measurer(fabric, links=None, raw_dir=tmp_path, notes=drive.MeasureLog())
    running = {"a": SimpleNamespace(poll=lambda: None)}
    monkeypatch.setattr(disk, "free_bytes", lambda path: disk.DISK_FLOOR_BYTES - 1)
    with pytest.raises(drive.DiskFull, match="disk holding the results is full"):
        measurer._watch(running, str(tmp_path), "none", budget_s=5)
    monkeypatch.setattr(disk, "free_bytes", lambda path: disk.DISK_FLOOR_BYTES)
    done = {"a": SimpleNamespace(poll=lambda: 0)}
    measurer._watch(done, str(tmp_path), "none", budget_s=5)  # enough room: returns when the drivers end
    assert issubclass(drive.DiskFull, drive.RunAborted)  # `shiftbed run` keeps the results and says why


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_sigterm_and_sighup_take_the_ctrl_c_path_and_name_the_signal(sig):
    with pytest.raises(KeyboardInterrupt) as interrupted:
        interrupts._raise_interrupt(sig, None)
    assert interrupted.value.args == (signal.Signals(sig).name,)
