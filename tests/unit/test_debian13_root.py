"""`make test-debian13`'s pure parts, no root: the host's Open vSwitch swap (when it refuses, what it stops
and starts, how the next run recovers an interrupted one), the root's recipe hash and apt sources, the
scripts' one-line refusals, and the verdicts on check's and the demo's JSON."""

import json
import os
import pathlib
import subprocess
import sys

import pytest
from platform_verdict import MAX_ERROR_PCT, check_problems, demo_problems

from topo import hostovs
from topo.hostovs import HostOvs, OvsControl, Refused, Swap, SwapState

REPO = pathlib.Path(__file__).resolve().parents[2]
SCRIPTS = REPO / "topo" / "debian13"


class FakeOvs(OvsControl):
    """The host's Open vSwitch as these tests set it: what it answers, and what was asked of it."""

    def __init__(self, host: HostOvs):
        self.host = host
        self.calls: list[str] = []

    def probe(self) -> HostOvs:
        return self.host

    def stop(self, manager: str) -> None:
        self.calls.append(f"stop {manager}")
        self.host = HostOvs(running=False)

    def start(self, manager: str) -> None:
        self.calls.append(f"start {manager}")
        self.host = HostOvs(running=True, manager=manager)


SHIFTBEDS = {"leaf1": "sb-1234abcd", "spine1": "sb-1234abcd"}


def test_a_host_ovs_with_a_bridge_not_shiftbeds_is_refused_and_nothing_is_touched(tmp_path):
    ovs = FakeOvs(HostOvs(running=True, bridges={**SHIFTBEDS, "br-lab": "", "br0": ""}))
    swap = Swap(tmp_path / "state", ovs)
    assert swap.check() == hostovs.refusal(ovs.host)
    with pytest.raises(Refused) as refused:
        swap.stop()
    assert str(refused.value).startswith("the host's Open vSwitch has bridges that are not shiftbed's (br-lab, br0)")
    assert "\n" not in str(refused.value)
    assert ovs.calls == [] and not (tmp_path / "state").exists()


def test_a_host_ovs_with_only_shiftbeds_bridges_is_stopped_and_started_again(tmp_path):
    ovs = FakeOvs(HostOvs(running=True, bridges=SHIFTBEDS))
    swap = Swap(tmp_path / "state", ovs)
    assert swap.check() is None
    said = swap.stop()
    assert said == ["stopped the host's Open vSwitch (it had shiftbed's bridges leaf1, spine1) until the root's is done"]
    assert ovs.calls == ["stop ovs-ctl"]
    assert SwapState.load(tmp_path / "state") == SwapState(host_was_running=True, manager="ovs-ctl")
    assert swap.restore() == ["started the host's Open vSwitch again"]
    assert ovs.calls == ["stop ovs-ctl", "start ovs-ctl"] and not (tmp_path / "state").exists()
    assert swap.restore() == []  # idempotent: nothing recorded, nothing done


def test_a_host_ovs_that_systemd_runs_goes_back_through_systemd(tmp_path):
    ovs = FakeOvs(HostOvs(running=True, manager="systemd"))
    swap = Swap(tmp_path / "state", ovs)
    swap.stop()
    swap.restore()
    assert ovs.calls == ["stop systemd", "start systemd"]


def test_a_host_ovs_that_was_not_running_is_neither_stopped_nor_started(tmp_path):
    ovs = FakeOvs(HostOvs(running=False))
    swap = Swap(tmp_path / "state", ovs)
    assert swap.stop() == ["the host's Open vSwitch is not running: none to stop, none to start afterwards"]
    assert (tmp_path / "state").exists()  # the root's process is still recorded in it
    assert swap.restore() == [] and ovs.calls == []
    assert not (tmp_path / "state").exists()


def test_the_next_run_recovers_an_interrupted_one_before_it_stops_anything(tmp_path):
    """A run killed with the host's Open vSwitch down left its state file: the next run starts it
    first (and finds it running with shiftbed's bridges, as the killed run had found it)."""
    SwapState(host_was_running=True, manager="ovs-ctl").save(tmp_path / "state")
    ovs = FakeOvs(HostOvs(running=False))
    swap = Swap(tmp_path / "state", ovs)
    assert swap.stop() == ["an interrupted run recovered: started the host's Open vSwitch again",
                           "stopped the host's Open vSwitch (it had no bridges) until the root's is done"]
    assert ovs.calls == ["start ovs-ctl", "stop ovs-ctl"]
    assert SwapState.load(tmp_path / "state").host_was_running is True


def test_recovery_ends_the_roots_process_by_its_pid_and_leaves_a_recycled_pid_alone(tmp_path):
    root = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    stranger = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        swap = Swap(tmp_path / "state", FakeOvs(HostOvs(running=False)))
        swap.stop()
        swap.track(root.pid)
        assert swap.restore() == [f"ended the root's process {root.pid}"]
        assert root.wait(timeout=10) is not None
        # a state file whose process has gone, its PID now someone else's (another start time)
        SwapState(host_was_running=False, manager="ovs-ctl", root_pid=stranger.pid, root_start_ticks=1).save(
            tmp_path / "state")
        assert swap.restore() == []
        assert stranger.poll() is None
    finally:
        for process in (root, stranger):
            process.kill()
            process.wait()


def test_a_host_ovs_that_does_not_come_back_says_how_to_start_it(tmp_path):
    class Stubborn(FakeOvs):
        def start(self, manager):
            self.calls.append(f"start {manager}")

    SwapState(host_was_running=True, manager="ovs-ctl").save(tmp_path / "state")
    with pytest.raises(hostovs.SwapError, match=r"start it with `/usr/share/openvswitch/scripts/ovs-ctl start"):
        Swap(tmp_path / "state", Stubborn(HostOvs(running=False))).restore()
    assert (tmp_path / "state").exists()  # kept, so the next run tries again


def test_the_command_line_refuses_bad_usage_with_status_2():
    result = subprocess.run([sys.executable, "-m", "topo.hostovs", "track", "STATE"], cwd=REPO,
                            capture_output=True, text=True)
    assert result.returncode == 2
    assert result.stderr == "usage: python3 -m topo.hostovs check|stop|restore STATE, or track STATE PID\n"


def bash(script: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", f'die() {{ echo "$*" >&2; exit 1; }}; . topo/debianroot.sh; {script}'],
                          cwd=REPO, capture_output=True, text=True, env={**os.environ, **(env or {})}, timeout=60)


def test_the_recipe_hash_names_the_scripts_and_the_packages(tmp_path):
    script = tmp_path / "build.sh"
    script.write_text("echo one\n")

    def recipe(packages: str) -> str:
        result = bash(f'echo "{packages}" | recipe_hash {script}')
        assert result.returncode == 0, result.stderr
        return result.stdout.strip()

    first = recipe("mininet iperf3")
    assert len(first) == 12 and int(first, 16) >= 0
    assert recipe("mininet iperf3") == first
    assert recipe("mininet iperf3 tcpdump") != first
    script.write_text("echo two\n")
    assert recipe("mininet iperf3") != first


def test_the_roots_apt_sources_are_the_hosts_mirrors_for_the_roots_release(tmp_path):
    sources = tmp_path / "debian.sources"
    sources.write_text("Types: deb\nURIs: http://mirror.example/debian\nSuites: bookworm bookworm-updates\n"
                       "Components: main\n\nTypes: deb\nURIs: http://mirror.example/debian-security\n"
                       "Suites: bookworm-security\nComponents: main\n")
    result = bash("apt_sources_for trixie", {"HOST_APT_SOURCES": str(sources), "HOST_CODENAME": "bookworm"})
    assert result.returncode == 0, result.stderr
    assert result.stdout == sources.read_text().replace("bookworm", "trixie")
    missing = bash("apt_sources_for trixie", {"HOST_APT_SOURCES": str(tmp_path / "none")})
    assert missing.returncode == 1 and missing.stderr == f"no {tmp_path / 'none'}: this host is not Debian 12 or later\n"


@pytest.mark.parametrize("script", ["build-root.sh", "test-root.sh", "in-root.sh"])
def test_every_script_parses(script):
    result = subprocess.run(["bash", "-n", str(SCRIPTS / script)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_too_little_disk_for_the_root_is_one_line_before_anything_is_built(tmp_path):
    result = subprocess.run(["bash", str(SCRIPTS / "build-root.sh"), "mininet"], capture_output=True, text=True,
                            timeout=60, env={**os.environ, "SHIFTBED_ROOT_CACHE": str(tmp_path),
                                             "SHIFTBED_ROOT_NEED_GB": "100000000"})
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    if os.geteuid() == 0:
        assert lines[0].startswith("make test-debian13: not enough disk for the Debian 13 root: ")
        assert f"GB free in {tmp_path}, 100000000 GB needed (set SHIFTBED_ROOT_CACHE to a larger disk)" in lines[0]
        assert list(tmp_path.iterdir()) == []  # nothing built
    else:
        assert lines[0] == "make test-debian13: needs root (mmdebstrap, mounts and Open vSwitch); " \
                           "run: sudo make test-debian13"


CHECK_OK = {"ok": True, "problems": [], "ratio": 0.992, "controller": {"framework": "os-ken", "version": "4.2.2"}}


def test_the_check_verdict_wants_no_problem_a_faithful_link_and_the_named_framework():
    assert check_problems(CHECK_OK) == [] and check_problems(CHECK_OK, "os-ken") == []
    assert check_problems(CHECK_OK, "ryu") == ["check: the controller runs on os-ken, not ryu"]
    assert check_problems({**CHECK_OK, "ratio": 0.85}) == ["check: realized/configured rate 0.85 < 0.9"]
    lost = {**CHECK_OK, "ok": False, "ratio": None, "problems": ["Open vSwitch: not running; run `...`"]}
    assert check_problems(lost) == ["check: Open vSwitch: not running; run `...`",
                                    "check: realized/configured rate None < 0.9"]


def demo_doc(error_pct: float = 3.0, fidelity_ok: bool = True) -> dict:
    run = {"fidelity_ok": fidelity_ok, "crosschecks": {},
           "policies": {policy: {"jobs": {"alpha": {"error_pct": error_pct}, "beta": {"error_pct": -1.0}}}
                        for policy in ("none", "shift")}}
    return {"runs": {"classroom": run, "two-jobs-coprime": run}, "reports": {}}


def test_the_demo_verdict_wants_both_scenarios_with_fidelity_and_every_job_within_ten_percent(tmp_path):
    assert demo_problems(demo_doc()) == []
    assert demo_problems(demo_doc(error_pct=-MAX_ERROR_PCT)) == []
    off = demo_problems(demo_doc(error_pct=10.4))
    assert len(off) == 4 and off[0] == "demo: classroom none alpha off the model by +10.4 % (more than 10 %)"
    assert demo_problems(demo_doc(fidelity_ok=False))[0] == "demo: classroom lost fidelity ({})"
    one = demo_doc()
    del one["runs"]["two-jobs-coprime"]
    assert demo_problems(one) == ["demo: ran ['classroom'], not ['classroom', 'two-jobs-coprime']"]
    saved = tmp_path / "demo.json"
    saved.write_text("progress on stdout\n" + json.dumps(demo_doc(error_pct=12.0)) + "\n")
    result = subprocess.run([sys.executable, "tests/platform_verdict.py", "demo", str(saved)], cwd=REPO,
                            capture_output=True, text=True)
    assert result.returncode == 1 and result.stdout.splitlines()[0].startswith("demo: classroom none alpha off")
