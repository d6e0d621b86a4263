"""Keep a fresh ovs-vswitchd out of its page-fault churn (userspace datapath).

Why this exists. glibc's malloc gives the top of its heap back to the kernel
whenever more than ``M_TRIM_THRESHOLD`` is free there. That threshold starts
at 128 KiB and is raised only once the process frees a large ``mmap()``-ed
block. A freshly started ovs-vswitchd has freed none, so with the userspace
datapath it shrinks and regrows its heap around its packet batches. ovs-ctl
locks the daemon's memory (``mlockall``), so every regrown page is faulted in
at once.

Measured (docs/accuracy.md): 2.09 million minor page faults in 8 s of one 40 Mbit/s iperf3
flow, against 0-34 once warm. The daemon stays so until it frees a large
block, which in practice happens when its last userspace bridge is deleted,
i.e. after the first fabric's teardown. Until then every packet pays:

- a burst's launch-to-first-data took 20-40 ms instead of 8-10;
- the gate's launch leads, calibrated in that state, were too long for the
  policies that ran after the daemon warmed;
- data met closed windows and was policed, and a gated 50-ms job measured
  +41 % against the model.

Two remedies, neither touching anyone else's bridges:

- a daemon that shiftbed starts itself (``topo.fabric.ensure_ovs_running``,
  ``make install``) gets :data:`TUNABLE` in ``GLIBC_TUNABLES``;
- a daemon already running without it is warmed before a userspace fabric is
  built: one empty userspace bridge of the run's own, created and deleted.
  Afterwards the same flow caused 33 faults.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

OVS_PIDFILE = Path("/var/run/openvswitch/ovs-vswitchd.pid")
TRIM_THRESHOLD_BYTES = 64 * 1024 * 1024  # far above anything the daemon frees at its heap's top
TUNABLE = f"glibc.malloc.trim_threshold={TRIM_THRESHOLD_BYTES}"
TUNABLES_VAR = "GLIBC_TUNABLES"

# What :func:`prepare` found or did, as recorded in the environment record.
TUNED = "tuned"  # the daemon runs with TUNABLE
WARMED = "warmed"  # an empty userspace bridge of ours was created and deleted
SHARED = "shared"  # another userspace bridge exists: deleting ours would free nothing


def start_environment(environ: dict[str, str] | None = None) -> dict[str, str]:
    """The environment to start Open vSwitch's daemons with: ``environ`` plus :data:`TUNABLE`."""
    env = dict(os.environ if environ is None else environ)
    current = env.get(TUNABLES_VAR, "")
    if TUNABLE not in current.split(":"):
        env[TUNABLES_VAR] = f"{current}:{TUNABLE}" if current else TUNABLE
    return env


def environ_tuned(environ: bytes) -> bool:
    """Does a ``/proc/<pid>/environ`` (NUL-separated) set a trim threshold in ``GLIBC_TUNABLES``?"""
    prefix = f"{TUNABLES_VAR}=".encode()
    for entry in environ.split(b"\0"):
        if entry.startswith(prefix):
            return any(item.startswith("glibc.malloc.trim_threshold=")
                       for item in entry[len(prefix):].decode(errors="replace").split(":"))
    return False


def daemon_tuned(pidfile: Path = OVS_PIDFILE) -> bool | None:
    """Whether the running ovs-vswitchd has a trim threshold set; None when it cannot be read."""
    try:
        pid = int(pidfile.read_text().strip())
        return environ_tuned(Path(f"/proc/{pid}/environ").read_bytes())
    except (OSError, ValueError):
        return None


def minor_faults(pidfile: Path = OVS_PIDFILE) -> int:
    """ovs-vswitchd's minor page faults so far (``minflt`` of ``/proc/<pid>/stat``)."""
    pid = int(pidfile.read_text().strip())
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat.rsplit(")", 1)[1].split()[7])  # fields after "(comm)": state is 3rd, minflt 10th


def warm_up_plan(tuned: bool | None, datapath_types: list[str]) -> str:
    """What :func:`prepare` should do: :data:`TUNED`, :data:`SHARED`, or :data:`WARMED` (warm it up).

    ``datapath_types``: the ``datapath_type`` of every existing bridge. Deleting
    our bridge frees the userspace datapath only if no other bridge uses it.
    Unknown (None) counts as untuned: warming a tuned daemon costs only time."""
    if tuned:
        return TUNED
    if "netdev" in datapath_types:
        return SHARED
    return WARMED


def _vsctl(*args: str) -> str:
    return subprocess.run(["ovs-vsctl", "--timeout=10", *args], capture_output=True, text=True,
                          check=True).stdout


def prepare(bridge: str, tag: tuple[str, str]) -> str:
    """Before a userspace fabric: warm the daemon if it needs it (see the module docstring).

    ``bridge`` is a name of the run's own; ``tag`` the ``(key, value)`` of
    ``external_ids`` that marks it as the run's, so a crash in between leaves
    a bridge the run's clean-up removes. Returns what was found or done."""
    plan = warm_up_plan(daemon_tuned(), _vsctl("--bare", "--columns=datapath_type", "list", "bridge").split())
    if plan == WARMED:
        key, value = tag
        _vsctl("add-br", bridge, "--", "set", "bridge", bridge, "datapath_type=netdev",
               f"external_ids:{key}={value}")
        _vsctl("del-br", bridge)
    return plan


if __name__ == "__main__":  # `make install` starts the daemons with: GLIBC_TUNABLES="$(python -m topo.ovs_heap)"
    print(start_environment()[TUNABLES_VAR])
