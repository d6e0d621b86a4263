"""The host's Open vSwitch, stopped while a Debian root runs its own, and started again as it was found.

A root shares the host's kernel and network, so only one ovs-vswitchd may run at a time:
``make test-debian13`` stops the host's (only if it is running), lets the root start its own, and
afterwards starts the host's again if it was running. It refuses, touching nothing, while the
host's has bridges that are not shiftbed's: someone else's network would go down with it.
shiftbed's own bridges (tagged ``external_ids:shiftbed-run``, topo/runrecord.py) are kept in the
host's database and come back with it.

The state file is written before the host's Open vSwitch is stopped and removed once it runs
again, so a run that was interrupted is recovered by the next: the root's process, if it still
runs, is ended by its PID (and start time), and the host's Open vSwitch is started if it was
running. Standard library only (the host's ``python3`` runs it, with no venv).

    python3 -m topo.hostovs check STATE       # refuse (exit 1, one line) before anything is built
    python3 -m topo.hostovs stop STATE        # refuse, or recover, record and stop
    python3 -m topo.hostovs track STATE PID   # record the root's first process
    python3 -m topo.hostovs restore STATE     # end that process; the host's OVS as it was found
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

from topo import ovs_heap, runrecord

OVS_CTL = "/usr/share/openvswitch/scripts/ovs-ctl"
SYSTEMD_UNIT = "openvswitch-switch"
# A root's first process, asked to end, has its processes end theirs: a demo tears its fabric down.
ROOT_STOP_S = 60.0


@dataclass(frozen=True)
class HostOvs:
    """What the host's Open vSwitch is doing: whether it answers, who started it, its bridges."""

    running: bool
    manager: str = "ovs-ctl"  # "systemd" when the openvswitch-switch unit runs it
    bridges: dict[str, str] = field(default_factory=dict)  # bridge -> its shiftbed-run tag, "" when none

    def foreign_bridges(self) -> list[str]:
        return sorted(name for name, tag in self.bridges.items() if not tag)


def refusal(host: HostOvs) -> str | None:
    """Why the host's Open vSwitch must not be stopped, or None."""
    foreign = host.foreign_bridges()
    if not foreign:
        return None
    return (f"the host's Open vSwitch has bridges that are not shiftbed's ({', '.join(foreign)}): stopping it "
            "would take them down, so it is left running and nothing was changed")


@dataclass
class SwapState:
    """What the next run needs to put the host back: written before the host's Open vSwitch stops."""

    host_was_running: bool
    manager: str
    root_pid: int | None = None
    root_start_ticks: int | None = None

    def save(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(path.name + ".part")
        partial.write_text(json.dumps(asdict(self)) + "\n")
        partial.replace(path)

    @classmethod
    def load(cls, path: Path) -> SwapState | None:
        try:
            return cls(**json.loads(path.read_text()))
        except FileNotFoundError:
            return None


class OvsControl:
    """The host's Open vSwitch through its own tools (the thin adapter :class:`Swap` decides for)."""

    def probe(self) -> HostOvs:
        if subprocess.run(["ovs-vsctl", "--timeout=3", "show"], capture_output=True).returncode != 0:
            return HostOvs(running=False)
        listing = subprocess.run(["ovs-vsctl", "--timeout=5", "--format=json", "--columns=name,external_ids",
                                  "list", "bridge"], capture_output=True, text=True, check=True).stdout
        bridges = {}
        for name, (_, pairs) in json.loads(listing)["data"]:
            bridges[name] = dict(pairs).get(runrecord.BRIDGE_TAG, "")
        return HostOvs(running=True, manager=self._manager(), bridges=bridges)

    def _manager(self) -> str:
        if Path("/run/systemd/system").is_dir() and subprocess.run(
                ["systemctl", "is-active", "--quiet", SYSTEMD_UNIT]).returncode == 0:
            return "systemd"
        return "ovs-ctl"

    def stop(self, manager: str) -> None:
        argv = ["systemctl", "stop", SYSTEMD_UNIT] if manager == "systemd" else [OVS_CTL, "stop"]
        subprocess.run(argv, capture_output=True, check=True)

    def start(self, manager: str) -> None:
        """As ``make ovs`` starts it (with the malloc setting of topo/ovs_heap.py), or by its unit."""
        if manager == "systemd":
            subprocess.run(["systemctl", "start", SYSTEMD_UNIT], capture_output=True, check=True)
        else:
            subprocess.run([OVS_CTL, "start", "--system-id=random"], capture_output=True,
                           env=ovs_heap.start_environment())


class SwapError(RuntimeError):
    """The host's Open vSwitch could not be put back; the message says what to run."""


class Refused(SwapError):
    """The host's Open vSwitch must not be stopped; nothing was changed."""


class Swap:
    """The host's Open vSwitch out of the way of a root's, and back: the decisions, over an :class:`OvsControl`."""

    def __init__(self, state_path: Path, ovs: OvsControl | None = None):
        self.state_path = state_path
        self.ovs = ovs or OvsControl()

    def check(self) -> str | None:
        """A refusal, or None: nothing is changed."""
        return refusal(self.ovs.probe())

    def stop(self) -> list[str]:
        """Recover an interrupted run, then stop the host's Open vSwitch if it runs: what was done, in
        words. :class:`Refused`, with nothing changed, while it has bridges that are not shiftbed's."""
        done = [f"an interrupted run recovered: {line}" for line in self.restore()]
        host = self.ovs.probe()
        problem = refusal(host)
        if problem:
            raise Refused(problem)
        SwapState(host_was_running=host.running, manager=host.manager).save(self.state_path)
        if not host.running:
            return done + ["the host's Open vSwitch is not running: none to stop, none to start afterwards"]
        self.ovs.stop(host.manager)
        bridges = f"shiftbed's bridges {', '.join(sorted(host.bridges))}" if host.bridges else "no bridges"
        return done + [f"stopped the host's Open vSwitch (it had {bridges}) until the root's is done"]

    def track(self, pid: int) -> None:
        state = SwapState.load(self.state_path)
        if state is None:
            raise SwapError(f"no {self.state_path}: stop the host's Open vSwitch first")
        state.root_pid, state.root_start_ticks = pid, runrecord.process_start_ticks(pid)
        state.save(self.state_path)

    def restore(self) -> list[str]:
        """Undo what the state file records (nothing when there is none); what was done, in words."""
        state = SwapState.load(self.state_path)
        if state is None:
            return []
        done = []
        if state.root_pid is not None:
            ref = runrecord.ProcessRef(state.root_pid, state.root_start_ticks or 0, "the root")
            if runrecord.stop_process(ref, timeout_s=ROOT_STOP_S):
                done.append(f"ended the root's process {state.root_pid}")
        if state.host_was_running and not self.ovs.probe().running:
            self.ovs.start(state.manager)
            if not self.ovs.probe().running:
                raise SwapError("the host's Open vSwitch does not answer after its restart; start it with "
                                + ("`systemctl start openvswitch-switch`" if state.manager == "systemd"
                                   else f"`{OVS_CTL} start --system-id=random`"))
            done.append("started the host's Open vSwitch again")
        self.state_path.unlink()
        return done


def main(argv: list[str]) -> int:
    if len(argv) not in (2, 3) or argv[0] not in ("check", "stop", "track", "restore") \
            or (argv[0] == "track") != (len(argv) == 3):
        print("usage: python3 -m topo.hostovs check|stop|restore STATE, or track STATE PID", file=sys.stderr)
        return 2
    swap = Swap(Path(argv[1]))
    try:
        if argv[0] == "check":
            problem = swap.check()
            if problem:
                raise Refused(problem)
        elif argv[0] == "track":
            swap.track(int(argv[2]))
        else:
            for line in swap.stop() if argv[0] == "stop" else swap.restore():
                print(f"make test-debian13: {line}", file=sys.stderr)
    except (SwapError, subprocess.CalledProcessError) as exc:
        print(f"make test-debian13: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
