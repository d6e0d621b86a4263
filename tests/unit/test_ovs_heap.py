"""topo/ovs_heap.py: the malloc setting for the daemons shiftbed starts, and when to warm a running one."""

from topo import ovs_heap


def test_start_environment_adds_the_trim_threshold():
    env = ovs_heap.start_environment({"PATH": "/usr/bin"})
    assert env == {"PATH": "/usr/bin", "GLIBC_TUNABLES": "glibc.malloc.trim_threshold=67108864"}


def test_start_environment_keeps_the_callers_tunables_and_does_not_repeat_ours():
    env = ovs_heap.start_environment({"GLIBC_TUNABLES": "glibc.malloc.arena_max=2"})
    assert env["GLIBC_TUNABLES"] == f"glibc.malloc.arena_max=2:{ovs_heap.TUNABLE}"
    assert ovs_heap.start_environment(env)["GLIBC_TUNABLES"] == env["GLIBC_TUNABLES"]


def test_environ_tuned_reads_a_proc_environ():
    assert ovs_heap.environ_tuned(b"HOME=/root\0GLIBC_TUNABLES=glibc.malloc.trim_threshold=67108864\0")
    assert ovs_heap.environ_tuned(b"GLIBC_TUNABLES=glibc.malloc.arena_max=2:glibc.malloc.trim_threshold=1\0")
    assert not ovs_heap.environ_tuned(b"HOME=/root\0GLIBC_TUNABLES=glibc.malloc.arena_max=2\0")
    assert not ovs_heap.environ_tuned(b"HOME=/root\0TRIM=glibc.malloc.trim_threshold=1\0")
    assert not ovs_heap.environ_tuned(b"")


def test_daemon_tuned_is_none_without_a_daemon(tmp_path):
    assert ovs_heap.daemon_tuned(tmp_path / "absent.pid") is None
    (tmp_path / "bad.pid").write_text("not a pid\n")
    assert ovs_heap.daemon_tuned(tmp_path / "bad.pid") is None


def test_warm_up_plan():
    assert ovs_heap.warm_up_plan(True, []) == ovs_heap.TUNED
    assert ovs_heap.warm_up_plan(True, ["netdev"]) == ovs_heap.TUNED
    # untuned or unreadable: warm it, unless another userspace bridge keeps the datapath alive
    assert ovs_heap.warm_up_plan(False, []) == ovs_heap.WARMED
    assert ovs_heap.warm_up_plan(None, ["system"]) == ovs_heap.WARMED
    assert ovs_heap.warm_up_plan(False, ["system", "netdev"]) == ovs_heap.SHARED


def test_minor_faults_reads_proc_stat(tmp_path):
    import os

    pidfile = tmp_path / "self.pid"
    pidfile.write_text(f"{os.getpid()}\n")
    assert ovs_heap.minor_faults(pidfile) > 0  # this Python has faulted in its own pages
