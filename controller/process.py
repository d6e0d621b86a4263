"""Start and stop the fabric controller as its own process, by PID.

The controller must not share a process with Mininet (once Ryu has loaded
eventlet, ``import mininet.net`` fails), so bring-up code starts
``python -m controller`` as a subprocess, waits until its OpenFlow port
listens, later until every switch of the fabric has its rules (``GET
/fabric/status``), and stops it by PID.
"""

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from controller.fabric_config import FabricConfig

SCHEDULER_APP = "controller.scheduler_app"

REPO_ROOT = Path(__file__).resolve().parent.parent


class ControllerError(RuntimeError):
    """The controller process died or did not become ready; the message holds its log tail."""


def describe_framework(env: dict | None = None) -> dict:
    """Which framework ``python -m controller`` runs here (``framework``, ``version``, ``hub``, ``python``).

    Asked of a child process, since importing the framework (eventlet under Ryu) must stay
    out of a process that builds Mininet networks. ``ControllerError`` with its one-line reason.
    """
    environ = {**os.environ, **(env or {})}
    environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), environ.get("PYTHONPATH")]))
    try:
        done = subprocess.run([sys.executable, "-m", "controller", "--describe"], capture_output=True, text=True,
                              timeout=60, cwd=REPO_ROOT, env=environ)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ControllerError(f"python -m controller --describe: {exc}") from None
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or [f"exited {done.returncode}"])[-1]
        raise ControllerError(last.removeprefix("python -m controller: "))
    return json.loads(done.stdout)


def free_tcp_port() -> int:
    """A TCP port that is free on 127.0.0.1 right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class ControllerProcess:
    """``python -m controller [apps] --config FILE`` as a child process.

    Args:
        config_path: the fabric config JSON (``controller/fabric_config.py``).
        apps: extra Ryu apps to run next to the fabric app (module names).
        ofp_port, wsapi_port: OpenFlow and REST ports (free ports by default).
        log_path: where the controller's stdout/stderr go.
    """

    def __init__(self, config_path, apps=(), ofp_port=None, wsapi_port=None, log_path=None, env=None):
        self.config_path = str(config_path)
        self.apps = list(apps)
        self.ofp_port = ofp_port or free_tcp_port()
        self.wsapi_port = wsapi_port or free_tcp_port()
        self.log_path = str(log_path or Path(self.config_path).with_suffix(".controller.log"))
        self.env = dict(env or {})
        self.popen = None

    @property
    def pid(self) -> int | None:
        return self.popen.pid if self.popen else None

    @property
    def rest_url(self) -> str:
        return f"http://127.0.0.1:{self.wsapi_port}"

    def command(self) -> list[str]:
        return [sys.executable, "-m", "controller", *self.apps, "--config", self.config_path,
                "--ofp-port", str(self.ofp_port), "--wsapi-port", str(self.wsapi_port)]

    def start(self, timeout_s: float = 20.0) -> int:
        """Start the controller and wait until its OpenFlow port accepts connections. A scheduler's
        compiled search is made first, here, if it is not on disk (``controller/theory/warm.py``)."""
        if SCHEDULER_APP in self.apps:
            from controller.theory.warm import compile_schedule_loops

            compile_schedule_loops()
        env = {**os.environ, **self.env}
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
        with open(self.log_path, "ab") as log:
            self.popen = subprocess.Popen(self.command(), stdout=log, stderr=subprocess.STDOUT,
                                          stdin=subprocess.DEVNULL, env=env, cwd=REPO_ROOT,
                                          start_new_session=True)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            self._raise_if_dead()
            try:
                with socket.create_connection(("127.0.0.1", self.ofp_port), timeout=0.2):
                    return self.popen.pid
            except OSError:
                time.sleep(0.05)
        raise ControllerError(f"controller did not listen on port {self.ofp_port} within {timeout_s:.0f} s\n{self.log_tail()}")

    def set_pins(self, pins) -> dict:
        """Replace the fabric app's pins at run time (``PUT /fabric/pins``); returns its status."""
        body = json.dumps([pin.as_dict() if hasattr(pin, "as_dict") else pin for pin in pins]).encode()
        request = urllib.request.Request(f"{self.rest_url}/fabric/pins", data=body, method="PUT",
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=5) as reply:
            return json.load(reply)

    def status(self) -> dict:
        with urllib.request.urlopen(f"{self.rest_url}/fabric/status", timeout=2) as reply:
            return json.load(reply)

    def wait_ready(self, timeout_s: float = 30.0) -> dict:
        """Wait until every switch of the fabric is connected and has its rules."""
        deadline = time.monotonic() + timeout_s
        status = {}
        while time.monotonic() < deadline:
            self._raise_if_dead()
            try:
                status = self.status()
                if status.get("ready"):
                    return status
            except (OSError, urllib.error.URLError, ValueError):
                pass
            time.sleep(0.05)
        missing = sorted(set(status.get("expected_dpids", [])) - set(status.get("ready_dpids", [])))
        raise ControllerError(f"switches not ready after {timeout_s:.0f} s: DPIDs {[hex(d) for d in missing]}\n{self.log_tail()}")

    def alive(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    def stop(self, timeout_s: float = 5.0) -> None:
        """SIGTERM, then SIGKILL after ``timeout_s``; only this PID's process group."""
        if self.popen is None or self.popen.poll() is not None:
            return
        for sig, wait_s in ((signal.SIGTERM, timeout_s), (signal.SIGKILL, timeout_s)):
            try:
                os.killpg(self.popen.pid, sig)
            except ProcessLookupError:
                break
            try:
                self.popen.wait(timeout=wait_s)
                break
            except subprocess.TimeoutExpired:
                continue

    def log_tail(self, lines: int = 15) -> str:
        try:
            return "\n".join(Path(self.log_path).read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no controller log)"

    def _raise_if_dead(self):
        if self.popen.poll() is not None:
            raise ControllerError(f"controller exited with status {self.popen.returncode}\n{self.log_tail()}")


@dataclass(frozen=True)
class FabricController:
    """How to start the controller of one fabric: its extra apps, pins and port-stats output.

    ``topo.fabric.Fabric`` calls :meth:`start` during bring-up, so the fabric never
    imports the controller. Args mirror :class:`ControllerProcess` and
    :class:`controller.fabric_config.FabricConfig`.
    """

    apps: tuple[str, ...] = ()
    pins: tuple = ()
    stats_csv: str | None = None
    stats_hz: float = 10.0
    ofp_port: int | None = None
    wsapi_port: int | None = None
    env: dict = field(default_factory=dict)

    def start(self, params, workdir) -> ControllerProcess:
        """Write the fabric config into ``workdir`` and start the controller on it."""
        config_path = Path(workdir) / "fabric_config.json"
        stats_csv = str(self.stats_csv) if self.stats_csv else None
        FabricConfig(params, tuple(self.pins), stats_csv, self.stats_hz).write(str(config_path))
        process = ControllerProcess(config_path, apps=self.apps, ofp_port=self.ofp_port,
                                    wsapi_port=self.wsapi_port, log_path=Path(workdir) / "controller.log",
                                    env=self.env)
        process.start()
        return process
