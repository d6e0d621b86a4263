"""Standing connections (apps/stream.py, apps.transports.StreamTransport) on the loopback: no root needed."""

import socket
import subprocess
import sys
import threading
import time

import pytest

from apps import iperf, stream
from apps.jobmodel import TRANSPORTS, JobSpec, Worker, collective, iteration_phases
from apps.transports import StreamTransport
from topo.tcp_ports import receiver_port

# every test takes the first free loopback ports from 7201 up: two run side by side would take the same
# ones between the check and the bind (make test's workers), so the module's tests run one at a time
pytestmark = pytest.mark.xdist_group("loopback-ports")


def bindable(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_base_port(count: int) -> int:
    """A job's first server port such that its first ``count`` server ports and their receivers'
    ports are free here."""
    for base in range(7201, 16000 - count):
        if all(bindable(p) and bindable(receiver_port(p)) for p in range(base, base + count)):
            return base
    raise RuntimeError("no free ports")


def loopback_spec(pattern: str = "ring", workers: int = 2) -> JobSpec:
    base = free_base_port(2 * (workers - 1) if pattern == "ps" else workers)
    hosts = tuple(Worker(f"h{i}", "127.0.0.1") for i in range(workers))
    return JobSpec("a", 300.0, 100.0, hosts, pattern, link_mbps=100.0, base_port=base, transport="persistent")


def alive(proc) -> bool:
    return proc.poll() is None


def test_every_burst_arrives_whole_over_one_connection_per_flow():
    spec = loopback_spec()
    transport = StreamTransport(spec)
    try:
        pids = [p.pid for p in transport.procs]
        for _ in range(3):
            for phase in collective(spec):
                results = transport(phase)
                assert len(results) == len(phase)
                for r in results:
                    assert r.error == ""
                    assert r.bytes_sent == r.transfer.nbytes
                    assert r.end_s >= r.start_s
                    assert 0 < r.data_s <= r.end_s - r.start_s + 1e-6
        # the same processes (and so the same connections) carried every burst
        assert [p.pid for p in transport.procs] == pids
        assert all(alive(p) for p in transport.procs)
    finally:
        transport.close()
    assert not any(alive(p) for p in transport.procs)


def test_parameter_server_runs_its_two_phases_one_after_the_other():
    spec = loopback_spec("ps", workers=3)
    transport = StreamTransport(spec)
    try:
        push, pull = collective(spec)
        pushed = transport(push)
        pulled = transport(pull)
        assert [r.bytes_sent for r in pushed + pulled] == [t.nbytes for t in push + pull]
        assert min(r.start_s for r in pulled) >= max(r.end_s for r in pushed)
    finally:
        transport.close()


@pytest.mark.parametrize("side, index", [("receiver", 0), ("sender", 1)])  # a flow starts its receiver first
def test_a_flow_whose_process_is_gone_reports_an_error_and_the_others_go_on(side, index):
    spec = loopback_spec()
    transport = StreamTransport(spec)
    try:
        phase = collective(spec)[0]
        gone = transport.procs[index]
        iperf.kill_pid(gone.pid, 1.0)
        gone.wait()
        results = transport(phase)
        assert side in results[0].error and results[0].bytes_sent == 0
        assert results[1].error == "" and results[1].bytes_sent == results[1].transfer.nbytes
    finally:
        transport.close()
    assert not any(alive(p) for p in transport.procs)


def test_the_receiver_splits_the_byte_stream_into_bursts_by_count():
    """Bytes arriving in any chunking make one line per whole burst, and only then; the receiver
    ends when its standard input does (its driver gone), though the connection stays open."""
    port = receiver_port(free_base_port(1))
    recv = subprocess.Popen([sys.executable, stream.__file__, "recv", "--port", str(port), "--burst-bytes", "3"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert recv.stdout.readline() == b"listening\n"
        with socket.create_connection(("127.0.0.1", port)) as conn:
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            bursts = []
            for chunk in (b"x" * 2, b"x" * 2, b"x" * 5, b"x" * 3):  # 12 bytes: four bursts of 3
                conn.sendall(chunk)
                time.sleep(0.05)
            for _ in range(4):
                bursts.append(recv.stdout.readline().split())
            assert [b[0] for b in bursts] == [b"0", b"1", b"2", b"3"]
            assert all(float(b[1]) <= float(b[2]) for b in bursts)
            recv.stdin.close()
            assert recv.wait(timeout=5) == 0
    finally:
        if recv.poll() is None:
            iperf.kill_pid(recv.pid, 1.0)
        recv.wait()


def test_bad_burst_size_is_refused():
    with pytest.raises(SystemExit) as exc:
        stream.main(["recv", "--port", "1", "--burst-bytes", "0"])
    assert exc.value.code == 2


def test_hosts_get_no_time_wait_and_a_small_unsent_limit_and_nothing_else():
    assert iperf.host_tcp_settings() == ["net.ipv4.tcp_max_tw_buckets=0",
                                         f"net.ipv4.tcp_notsent_lowat={iperf.NOTSENT_LOWAT_BYTES}"]
    with pytest.raises(ValueError, match="root namespace"):
        iperf.tune_host_tcp(None)


def test_a_job_spec_names_a_known_transport():
    assert TRANSPORTS == ("iperf3", "persistent")
    with pytest.raises(ValueError, match="transport"):
        JobSpec("a", 300.0, 100.0, (Worker("h1", "1.1.1.1"), Worker("h2", "1.1.1.2")), transport="udp")


def test_the_stream_script_needs_nothing_but_the_standard_library():
    with open(stream.__file__) as f:
        imports = [line for line in f if line.startswith(("import ", "from "))]
    assert all(line.split()[1].split(".")[0] in {"__future__", "argparse", "select", "socket", "struct", "sys", "time"}
               for line in imports), imports


# -- a pattern job: one burst per phase, in turn, over the same connections ---------------------------


def loopback_pattern_spec() -> JobSpec:
    """Three workers; phases at 0, 15 and 20 ms of a 60-ms comm part, of 10, 40 and 20 % of its bytes."""
    base = free_base_port(3)
    hosts = tuple(Worker(f"h{i}", "127.0.0.1") for i in range(3))
    return JobSpec("p", 150.0, 60.0, hosts, link_mbps=100.0, fill=0.8, base_port=base, transport="persistent",
                   phases=((0.0, 0.1), (15.0, 0.4), (20.0, 0.2)))


def test_each_phase_of_a_pattern_job_arrives_whole_in_turn_over_the_same_connections():
    spec = loopback_pattern_spec()
    transport = StreamTransport(spec)
    try:
        pids = [p.pid for p in transport.procs]
        for _ in range(2):
            for _start_ms, steps in iteration_phases(spec):
                (step,) = steps
                results = transport(step)
                assert [r.error for r in results] == [""] * 3
                assert [r.bytes_sent for r in results] == [t.nbytes for t in step] == [step[0].nbytes] * 3
        assert [p.pid for p in transport.procs] == pids and all(alive(p) for p in transport.procs)
    finally:
        transport.close()


def run_on_time(driver, iterations: int):
    """``driver.run`` as the driver's own process runs it: under ``SCHED_FIFO`` (``keep_time``, which
    applies to the calling thread only, here a thread of its own), so that its wake-ups keep time."""
    from apps.dltjob import keep_time

    outcome = []

    def body():
        keep_time()
        try:
            outcome.append(driver.run(iterations=iterations))
        except BaseException as exc:  # handed to the test's thread
            outcome.append(exc)

    thread = threading.Thread(target=body)
    thread.start()
    thread.join()
    if isinstance(outcome[0], BaseException):
        raise outcome[0]
    return outcome[0]


# In the real-fabric tier, alone on the machine: a phase that waits for the one before it waits for
# that phase's receiver and sender to say so, and they run at normal priority, as in a run
# (SCHED_RESET_ON_FORK); beside the parallel tier's other worker one such report came 21 ms late.
@pytest.mark.root(why="the driver keeps time under SCHED_FIFO, as in a run, alone on the machine")
def test_a_pattern_job_on_the_loopback_sends_each_phase_at_its_offset(tmp_path):
    """The driver, its standing connections and its clock for real: each phase goes within a few ms of
    its offset (or of the end of the one before it), with its bytes, and is recorded."""
    import pandas as pd

    from apps.dltjob import IterationLog, JobDriver, phases_csv_path
    from apps.jobmodel import PHASE_CSV_FIELDS, JobPlan, phase_bytes

    spec = loopback_pattern_spec()
    csv_path = str(tmp_path / "p.csv")
    log, phase_log = IterationLog(csv_path), IterationLog(phases_csv_path(csv_path), PHASE_CSV_FIELDS)
    transport = StreamTransport(spec)
    try:
        plan = JobPlan("none", time.time() + 0.3, 0.0, spec.period_ms, spec.comm_ms)
        assert run_on_time(JobDriver(spec, plan, transport, log.write, phase_log=phase_log.write), 4) == 4
    finally:
        transport.close()
        log.close()
        phase_log.close()
    phases = pd.read_csv(phases_csv_path(csv_path))
    assert len(phases) == 12 and (phases["error"].isna()).all()
    assert list(phases.groupby("phase")["bytes"].first()) == [3 * n for n in phase_bytes(spec)]
    origin = phases[phases["phase"] == 0].set_index("iteration")["due"]
    offsets_ms = (phases["due"] - phases["iteration"].map(origin)) * 1000
    assert offsets_ms.groupby(phases["phase"]).mean().tolist() == pytest.approx([0.0, 15.0, 20.0], abs=1e-3)
    previous_end = phases["end"].shift(1).where(phases["phase"] > 0)
    intended = phases["due"].where(~(previous_end > phases["due"]), previous_end)
    late_ms = (phases["launch"] - intended) * 1000
    assert late_ms.min() >= -0.5 and late_ms.quantile(0.95) < 5.0, late_ms.tolist()
    it = pd.read_csv(csv_path)
    assert len(it) == 12 and list(it.columns) == list(pd.read_csv(csv_path, nrows=0).columns)
    assert (it["bytes"] == sum(phase_bytes(spec))).all()
