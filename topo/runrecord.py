"""Run records: what one fabric run created, so cleanup removes exactly that.

A run writes ``/run/shiftbed/<run_id>.json`` *before* it creates anything
and updates it as it goes: the OVS bridges it will create (each also tagged
``external_ids:shiftbed-run=<run_id>`` when created), the root-namespace
interfaces of its switches, and every process it started (Mininet node
shells, the controller, processes in hosts) as PID + kernel start time, so a
recycled PID is never killed. :func:`clean_run` undoes a record; it is what
teardown falls back on and what ``shiftbed clean`` runs for crashed runs.
Nothing is ever found by name matching or killed by process name.
"""

import fcntl
import json
import os
import shutil
import signal
import subprocess
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

RUN_DIR = Path(os.environ.get("SHIFTBED_RUN_DIR", "/run/shiftbed"))
LOCK_NAME = "fabric.lock"
BRIDGE_TAG = "shiftbed-run"
_SAVE_LOCK = threading.Lock()  # hosts' processes may be started from several threads


@dataclass
class ProcessRef:
    """A process we started: PID plus its start time (in clock ticks since boot)."""

    pid: int
    start_ticks: int
    label: str

    @classmethod
    def of(cls, pid: int, label: str) -> "ProcessRef":
        return cls(pid, process_start_ticks(pid) or 0, label)

    def is_alive(self) -> bool:
        """Alive and still the same process (not a recycled PID)."""
        ticks = process_start_ticks(self.pid)
        return ticks is not None and ticks == self.start_ticks


@dataclass
class RunRecord:
    run_id: str
    owner_pid: int
    owner_start_ticks: int
    created_s: float = field(default_factory=time.time)
    bridges: list[str] = field(default_factory=list)
    interfaces: list[str] = field(default_factory=list)
    processes: list[ProcessRef] = field(default_factory=list)
    notes: dict = field(default_factory=dict)

    @property
    def path(self) -> Path:
        return RUN_DIR / f"{self.run_id}.json"

    def owner_alive(self) -> bool:
        return ProcessRef(self.owner_pid, self.owner_start_ticks, "owner").is_alive()

    def save(self) -> None:
        """Write atomically (temporary file, then rename)."""
        with _SAVE_LOCK:
            RUN_DIR.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_suffix(".json.tmp")
            tmp.write_text(json.dumps(asdict(self), indent=2))
            os.replace(tmp, self.path)

    def add_process(self, pid: int, label: str) -> ProcessRef:
        ref = ProcessRef.of(pid, label)
        with _SAVE_LOCK:
            self.processes.append(ref)
        self.save()
        return ref

    def remove_process(self, ref: ProcessRef) -> None:
        with _SAVE_LOCK:
            if ref in self.processes:
                self.processes.remove(ref)
        self.save()

    @classmethod
    def load(cls, path: Path) -> "RunRecord":
        data = json.loads(Path(path).read_text())
        data["processes"] = [ProcessRef(**p) for p in data.get("processes", [])]
        return cls(**data)

    @classmethod
    def new(cls, run_id: str) -> "RunRecord":
        return cls(run_id, os.getpid(), process_start_ticks(os.getpid()) or 0)


def process_start_ticks(pid: int) -> int | None:
    """Field 22 of /proc/<pid>/stat; None when there is no such process or it is a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()
    if fields[0] == "Z":
        return None
    return int(fields[19])


def all_records() -> list[RunRecord]:
    records = []
    for path in sorted(RUN_DIR.glob("*.json")):
        try:
            records.append(RunRecord.load(path))
        except (OSError, ValueError, TypeError):
            continue
    return records


def stop_process(ref: ProcessRef, timeout_s: float = 3.0) -> bool:
    """SIGTERM (its process group if it leads one), then SIGKILL. True if it was running."""
    if not ref.is_alive():
        return False
    try:
        leads_group = os.getpgid(ref.pid) == ref.pid
    except ProcessLookupError:
        return False
    for sig in (signal.SIGTERM, signal.SIGKILL):
        if not ref.is_alive():
            break
        try:
            os.killpg(ref.pid, sig) if leads_group else os.kill(ref.pid, sig)
        except ProcessLookupError:
            break
        deadline = time.monotonic() + timeout_s
        while ref.is_alive() and time.monotonic() < deadline:
            _reap(ref.pid)
            time.sleep(0.02)
    _reap(ref.pid)
    return True


def _reap(pid: int) -> None:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def tagged_bridges(run_id: str) -> list[str]:
    """Bridges whose ``external_ids:shiftbed-run`` is ``run_id``."""
    out = _vsctl("--bare", "--columns=name", "find", "bridge", f"external_ids:{BRIDGE_TAG}={run_id}")
    return sorted(line.strip() for line in out.splitlines() if line.strip())


def bridge_run_id(bridge: str) -> str | None:
    """The run tag of an existing bridge; '' when untagged; None when absent."""
    if subprocess.run(["ovs-vsctl", "--timeout=5", "br-exists", bridge]).returncode != 0:
        return None
    out = _vsctl("--if-exists", "get", "bridge", bridge, f"external_ids:{BRIDGE_TAG}")
    return out.strip().strip('"')


def interface_exists(name: str) -> bool:
    return Path(f"/sys/class/net/{name}").exists()


def clean_run(record: RunRecord) -> dict:
    """Undo one run record: its processes, its tagged bridges, its interfaces; then the record.

    Idempotent. Returns what was removed.
    """
    stopped = [ref.label for ref in reversed(record.processes) if stop_process(ref)]
    bridges = tagged_bridges(record.run_id)
    if bridges:
        _vsctl(*[arg for bridge in bridges for arg in ("--", "--if-exists", "del-br", bridge)])
    interfaces = []
    for name in record.interfaces + bridges:  # userspace bridges leave a tap device behind
        if interface_exists(name):
            subprocess.run(["ip", "link", "del", name], capture_output=True)
            interfaces.append(name)
    shutil.rmtree(RUN_DIR / record.run_id, ignore_errors=True)  # the run's default workdir (config, controller log)
    record.path.unlink(missing_ok=True)
    return {"run_id": record.run_id, "processes": stopped, "bridges": bridges, "interfaces": interfaces}


def _vsctl(*args: str) -> str:
    result = subprocess.run(["ovs-vsctl", "--timeout=10", *args], capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"ovs-vsctl {' '.join(args)}: {result.stderr.strip()}")
    return result.stdout


class FabricLock:
    """One shiftbed fabric per machine: an exclusive ``flock`` held for the fabric's life.

    The kernel drops it when the holder dies, so a crashed run never blocks the next.
    """

    def __init__(self):
        self.path = RUN_DIR / LOCK_NAME
        self._fd = None

    def acquire(self, run_id: str) -> None:
        RUN_DIR.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 200).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise FabricBusy(f"another shiftbed fabric is running ({holder}); wait for it to finish") from None
        os.ftruncate(fd, 0)
        os.write(fd, f"run {run_id}, pid {os.getpid()}".encode())
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


class FabricBusy(RuntimeError):
    """Another shiftbed fabric holds the lock."""
