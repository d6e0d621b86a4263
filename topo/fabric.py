"""Bring a leaf-spine fabric up with its controller, and down again, leaving nothing behind.

Typical use (as root)::

    from topo.fabric import Fabric
    from topo.wiring import FabricParams

    with Fabric(FabricParams(spines=2, leaves=4, hosts_per_leaf=2),
                controller_apps=["controller.scheduler_app"],
                stats_csv="results/port_stats.csv") as fabric:
        fabric.run("h1", ["ping", "-c", "1", fabric.ip("h8")])
        server = fabric.spawn("h8", ["iperf3", "-s", "-p", "5201"], label="iperf3-server")
        ...

What :class:`Fabric` takes care of, in order: root, Open vSwitch running
(started if not), the datapath (``kernel`` when ``/sys/module/openvswitch``
exists, else ``user``; override with ``datapath=`` or ``$SHIFTBED_DATAPATH``),
a machine-wide lock (one shiftbed fabric at a time), stale runs of crashed
processes (cleaned from their records), a run record written *before*
anything is created (``topo/runrecord.py``), the controller process
(``python -m controller``), the Mininet network (HTB rates, MTU 9000 on
hosts and switch ports, checksum offload off, static ARP, bridges tagged
``external_ids:shiftbed-run=<run_id>``), and waiting until every switch has
its rules. Teardown stops what was started in hosts, the network, the
controller, then removes whatever the record still lists.
"""

import hashlib
import logging
import os
import shutil
import subprocess
import time
import uuid
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from mininet.log import setLogLevel
from mininet.net import Mininet
from mininet.node import OVSSwitch, RemoteController

from topo import ovs_heap, ovs_txbuf, runrecord
from topo.leafspine import (
    DEFAULT_QUEUE_MS,
    FAIR_CLASSES,
    JUMBO_MTU,
    FabricLink,
    LeafSpineTopo,
    data_class_cmd,
    source_port_filter,
)
from topo.wiring import FabricParams, check_tcp_rto_min_ms, fabric_wiring, rto_min_route_cmd

# mininet.log makes every logger created after it a MininetLogger (its own handler without
# newlines, its own level), which doubled warnings and hid INFO lines of modules imported
# later; loggers made from here on are plain again.
logging.setLoggerClass(logging.Logger)
log = logging.getLogger(__name__)

DATAPATH_ENV = "SHIFTBED_DATAPATH"
OVS_CTL = "/usr/share/openvswitch/scripts/ovs-ctl"


class FabricError(RuntimeError):
    """The fabric cannot be brought up; the message names the cause and the fix."""


def choose_datapath(override: str | None = None) -> str:
    """``kernel`` when the openvswitch module is loaded, else ``user``; an override wins."""
    choice = override or os.environ.get(DATAPATH_ENV) or (
        "kernel" if Path("/sys/module/openvswitch").exists() else "user")
    if choice not in ("kernel", "user"):
        raise ValueError(f"datapath: must be 'kernel' or 'user', got {choice!r}")
    return choice


def ovs_version() -> str | None:
    """The running Open vSwitch version, or None when ovs-vsctl gets no answer."""
    if not shutil.which("ovs-vsctl"):
        return None
    result = subprocess.run(["ovs-vsctl", "--timeout=3", "get", "Open_vSwitch", ".", "ovs_version"],
                            capture_output=True, text=True)
    return result.stdout.strip().strip('"') if result.returncode == 0 else None


def ensure_ovs_running() -> str:
    """Start Open vSwitch (without systemd) if it does not answer; return its version."""
    version = ovs_version()
    if version:
        return version
    if not shutil.which("ovs-vsctl") or not Path(OVS_CTL).exists():
        raise FabricError("Open vSwitch is not installed: run `sudo make install` "
                          "(or `apt-get install openvswitch-switch`)")
    subprocess.run([OVS_CTL, "start", "--system-id=random"], capture_output=True, env=ovs_heap.start_environment())
    version = ovs_version()
    if not version:
        raise FabricError(f"Open vSwitch does not answer after `{OVS_CTL} start --system-id=random`; "
                          "see /var/log/openvswitch/ovs-vswitchd.log")
    return version


class StartedController(RemoteController):
    """Mininet's RemoteController without its telnet probe of the port.

    ``ControllerProcess.start`` has already waited until the port accepts
    connections, and the probe itself crashed a run: telnet printed Ryu's
    binary OpenFlow HELLO and Mininet's reader raised UnicodeDecodeError.
    """

    def checkListening(self):
        pass


class ShiftbedSwitch(OVSSwitch):
    """An OVS switch whose bridge is tagged with the run id and whose ports ask for jumbo MTU.

    The tag is set in the same ``ovs-vsctl`` transaction that creates the
    bridge, so there is no moment when shiftbed owns an untagged bridge.
    """

    def __init__(self, name, run_id="", mtu=JUMBO_MTU, **params):
        self.run_id = run_id
        self.mtu = mtu
        super().__init__(name, **params)

    def bridgeOpts(self):
        return super().bridgeOpts() + f" external_ids:{runrecord.BRIDGE_TAG}={self.run_id}"

    def intfOpts(self, intf):
        opts = super().intfOpts(intf)
        return (opts or f" -- set Interface {intf}") + f" mtu_request={self.mtu}"


@dataclass
class HostProcess:
    """A background process started in a host: its Popen and its record entry."""

    host: str
    popen: subprocess.Popen
    ref: runrecord.ProcessRef

    @property
    def pid(self) -> int:
        return self.popen.pid


class Fabric:
    """A running leaf-spine fabric with its controller (context manager).

    Args:
        params: fabric shape and link rates.
        run_id: names the run record and tags the bridges (random by default).
        controller: how to start the fabric's controller: an object whose
            ``start(params, workdir)`` starts it and returns the running process
            (``pid``, ``ofp_port``, ``wsapi_port``, ``log_path``, ``rest_url``,
            ``wait_ready(timeout_s)``, ``set_pins(pins)``, ``alive()``, ``stop()``),
            e.g. :class:`controller.process.FabricController`. The fabric does not
            import the controller: the controller sits above it (it computes its
            rules from ``topo/wiring.py``).
        datapath: ``kernel``/``user``/None (automatic).
        mtu: host and switch port MTU (9000 by default).
        queue_ms: each port's queue, in ms at its link rate (``topo/leafspine.py``).
        tcp_rto_min_ms: the hosts' minimum TCP retransmission timeout (None: the kernel's, 200 ms).
        workdir: for the controller config and log (default ``/run/shiftbed/<run_id>``).
        ready_timeout_s: how long switches may take to get their rules.
    """

    def __init__(self, params: FabricParams, controller, run_id: str | None = None,
                 datapath: str | None = None, mtu: int = JUMBO_MTU, queue_ms: float = DEFAULT_QUEUE_MS,
                 tcp_rto_min_ms: float | None = None, workdir=None, ready_timeout_s: float = 30.0):
        self.params = params
        self.run_id = run_id or f"sb-{uuid.uuid4().hex[:8]}"
        self.controller_launcher = controller
        self.datapath = choose_datapath(datapath)
        self.mtu = mtu
        self.queue_ms = queue_ms
        if tcp_rto_min_ms is not None:
            check_tcp_rto_min_ms(tcp_rto_min_ms)  # before anything is touched
        self.tcp_rto_min_ms = tcp_rto_min_ms
        self.workdir = Path(workdir or runrecord.RUN_DIR / self.run_id)
        self.ready_timeout_s = ready_timeout_s
        self.wiring = fabric_wiring(params)
        self.topo = LeafSpineTopo(**params.as_dict(), mtu=mtu, queue_ms=queue_ms)  # validates before anything is touched
        self.net = None
        self.controller = None
        self.record = None
        self.processes: list[HostProcess] = []
        self.startup_s = None
        self.ovs_version = None
        self.ovs_tx_sndbuf_bytes = None  # OVS's shared transmit socket buffer (userspace datapath)
        self.ovs_heap = None  # topo/ovs_heap.py: what was found or done (userspace datapath)
        self._lock = runrecord.FabricLock()

    # -- bring-up -------------------------------------------------------------

    def __enter__(self) -> "Fabric":
        return self.up()

    def __exit__(self, *_exc):
        self.down()

    def up(self) -> "Fabric":
        """Bring everything up; on any failure tear down what was made and re-raise."""
        if os.geteuid() != 0:
            raise FabricError("building a fabric needs root: run with sudo")
        started = time.monotonic()
        self._lock.acquire(self.run_id)  # first: no OVS started while another fabric or a Debian root runs
        try:
            self.ovs_version = ensure_ovs_running()
        except BaseException:
            self._lock.release()
            raise
        try:
            self._clean_stale_runs()
            self._refuse_conflicts()
            self.record = runrecord.RunRecord.new(self.run_id)
            self.record.bridges = list(self.wiring.dpids())
            self.record.interfaces = self._switch_interfaces()
            self.record.notes = {"datapath": self.datapath, "mtu": self.mtu, "fabric": self.params.as_dict()}
            self.record.save()
            self._prepare_ovs_heap()
            self._start_controller()
            self._start_network()
            self.controller.wait_ready(self.ready_timeout_s)
            self._widen_ovs_tx_buffer()
        except BaseException:
            self.down()
            raise
        self.startup_s = time.monotonic() - started
        log.info("fabric %s up in %.1f s (%s datapath, MTU %d)", self.run_id, self.startup_s, self.datapath, self.mtu)
        return self

    def _prepare_ovs_heap(self) -> None:
        """Userspace datapath only: keep ovs-vswitchd out of its first-minutes page-fault churn
        (``topo/ovs_heap.py`` says why)."""
        if self.datapath != "user":
            return
        bridge = "sbwarm-" + hashlib.sha1(self.run_id.encode()).hexdigest()[:6]
        self.ovs_heap = ovs_heap.prepare(bridge, (runrecord.BRIDGE_TAG, self.run_id))
        self.record.notes["ovs_heap"] = self.ovs_heap
        self.record.save()
        if self.ovs_heap == ovs_heap.SHARED:
            log.info("ovs-vswitchd runs without %s and other userspace bridges exist, so it is not "
                     "warmed; if it has never freed a large block, connection set-up is 2-4x slower "
                     "(topo/ovs_heap.py)", ovs_heap.TUNABLE)

    def _widen_ovs_tx_buffer(self) -> None:
        """Userspace datapath only: give OVS's shared transmit socket room for
        every queue of the fabric (``topo/ovs_txbuf.py`` says why). OVS makes
        that socket on its first send, hence the ping first."""
        if self.datapath != "user":
            return
        first, second = self.net.hosts[0], self.net.hosts[1 % len(self.net.hosts)]
        first.cmd("ping -c1 -W1", second.IP())
        try:
            widened = ovs_txbuf.widen()
        except (ovs_txbuf.TxBufferError, OSError) as exc:
            log.warning("OVS's transmit socket keeps its small buffer (%s): queued packets beyond ~200 kB "
                        "will be dropped silently", exc)
            return
        if widened:
            self.ovs_tx_sndbuf_bytes = min(buf.after_bytes for buf in widened)
        self.record.notes["ovs_tx_sndbuf_bytes"] = self.ovs_tx_sndbuf_bytes
        self.record.save()

    def _switch_interfaces(self) -> list[str]:
        return [f"{node}-eth{port}" for link in self.wiring.links()
                for node, port in ((link[0], link[1]), (link[2], link[3])) if not node.startswith("h")]

    def _clean_stale_runs(self) -> None:
        """Runs whose owner died (we hold the lock, so no live fabric owns them)."""
        for record in runrecord.all_records():
            if not record.owner_alive():
                log.warning("cleaning up crashed run %s", record.run_id)
                runrecord.clean_run(record)

    def _refuse_conflicts(self) -> None:
        for bridge in self.wiring.dpids():
            owner = runrecord.bridge_run_id(bridge)
            if owner is not None:
                whose = f"shiftbed run {owner}" if owner else "not shiftbed's"
                raise FabricError(f"an OVS bridge named {bridge} already exists ({whose}); "
                                  f"remove it (`ovs-vsctl del-br {bridge}`) if it is yours and unused")
        for name in self._switch_interfaces():
            if runrecord.interface_exists(name):
                raise FabricError(f"a network interface named {name} already exists; another network is using the name")

    def _start_controller(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.controller = self.controller_launcher.start(self.params, self.workdir)
        self.record.add_process(self.controller.pid, "controller")
        self.record.notes["controller"] = {"ofp_port": self.controller.ofp_port,
                                           "wsapi_port": self.controller.wsapi_port,
                                           "log": self.controller.log_path}
        self.record.save()

    def _start_network(self) -> None:
        setLogLevel(os.environ.get("SHIFTBED_MININET_LOG", "warning"))
        switch = partial(ShiftbedSwitch, datapath=self.datapath, run_id=self.run_id, mtu=self.mtu,
                         protocols="OpenFlow13")
        self.net = Mininet(topo=self.topo, switch=switch, link=FabricLink, controller=None,
                           autoStaticArp=True, build=False, waitConnected=False)
        self.net.addController("c0", controller=StartedController, ip="127.0.0.1", port=self.controller.ofp_port)
        self.net.build()
        for node in self.net.hosts + self.net.switches + self.net.controllers:
            if node.pid:
                self.record.processes.append(runrecord.ProcessRef.of(node.pid, f"node:{node.name}"))
        self.record.save()
        self.net.start()
        self._set_hosts_rto_min()

    def _set_hosts_rto_min(self) -> None:
        """Each host's minimum TCP retransmission timeout, on its fabric route (its namespace only)."""
        if self.tcp_rto_min_ms is None:
            return
        for host in self.net.hosts:
            out = host.cmd(rto_min_route_cmd(str(host.defaultIntf()), host.IP(), self.tcp_rto_min_ms)).strip()
            if out:
                raise FabricError(f"{host.name}: ip route change (tcp_rto_min_ms): {out}")

    # -- using it -------------------------------------------------------------

    def host(self, name: str):
        """The Mininet host object (``fabric.host("h1").cmd(...)`` works too)."""
        return self.net.get(name)

    def ip(self, name: str) -> str:
        return self.wiring.host(name).ip

    def run(self, host: str, argv: list[str], timeout_s: float = 60.0) -> subprocess.CompletedProcess:
        """Run a command in a host's namespace and wait for it (killed after ``timeout_s``)."""
        popen = self.host(host).popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True)
        ref = self.record.add_process(popen.pid, f"host:{host}:{argv[0]}")
        try:
            stdout, stderr = popen.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            runrecord.stop_process(ref)
            stdout, stderr = popen.communicate()
            raise TimeoutError(f"{host}: {' '.join(argv)}: still running after {timeout_s} s") from None
        finally:
            self._forget(ref)
        return subprocess.CompletedProcess(argv, popen.returncode, stdout, stderr)

    def spawn(self, host: str, argv: list[str], label: str | None = None, stdout=None, stderr=None) -> HostProcess:
        """Start a background process in a host, tracked by PID until :meth:`stop_process` or teardown.

        ``stdout``/``stderr`` are file paths (default: discarded). Do not let the
        command daemonise (no ``iperf3 -D``): its PID would not be the one tracked.
        """
        out = open(stdout, "wb") if stdout else subprocess.DEVNULL
        err = open(stderr, "wb") if stderr else (subprocess.STDOUT if stdout else subprocess.DEVNULL)
        try:
            popen = self.host(host).popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err)
        finally:
            for stream in (out, err):
                if hasattr(stream, "close"):
                    stream.close()
        ref = self.record.add_process(popen.pid, label or f"host:{host}:{argv[0]}")
        process = HostProcess(host, popen, ref)
        self.processes.append(process)
        return process

    def track(self, pid: int, label: str) -> runrecord.ProcessRef:
        """Record a PID this run is responsible for (e.g. read from a daemon's pid file)."""
        return self.record.add_process(pid, label)

    def stop_process(self, process: HostProcess, timeout_s: float = 3.0) -> int | None:
        """Stop one background process (SIGTERM, then SIGKILL) and return its exit status."""
        runrecord.stop_process(process.ref, timeout_s)
        try:
            status = process.popen.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            status = None
        if process in self.processes:
            self.processes.remove(process)
        self._forget(process.ref)
        return status

    def classify_egress(self, host: str, src_port: int, dscp: int) -> None:
        """Send ``host``'s packets from TCP/UDP ``src_port`` into the data class of ``dscp`` on its link.

        Pins mark packets at the ingress leaf; a host's own link comes
        before that, so there the class is chosen by source port.
        """
        node = self.host(host)
        out = node.cmd(source_port_filter(str(node.defaultIntf()), src_port, dscp)).strip()
        if out:
            raise FabricError(f"{host}: tc filter for source port {src_port}: {out}")

    def rank_job_classes(self, ranks: dict[int, int] | None) -> None:
        """Strict priority between the jobs' data classes on every shaped interface: ``ranks[dscp]``
        (0 first; ``topo.leafspine.data_class_cmd``), or back to fair shares for every class (None)."""
        dscps = range(1, FAIR_CLASSES + 1)
        for node in self.net.hosts + self.net.switches:
            for intf in node.intfList():
                bw = intf.params.get("bw") if hasattr(intf, "params") else None
                if not bw:
                    continue
                for dscp in dscps:
                    rank = None if ranks is None else ranks.get(dscp)
                    out = node.cmd(data_class_cmd(str(intf), bw, dscp, rank, self.mtu)).strip()
                    if out:
                        raise FabricError(f"{intf}: tc class change for DSCP {dscp}: {out}")

    def set_pins(self, pins) -> dict:
        """Replace the controller's pins at run time (``PUT /fabric/pins``); returns its status."""
        status = self.controller.set_pins(pins)
        self.controller.wait_ready(self.ready_timeout_s)
        return status

    def _forget(self, ref: runrecord.ProcessRef) -> None:
        if self.record:
            self.record.remove_process(ref)

    # -- teardown ---------------------------------------------------------------

    def down(self) -> None:
        """Stop host processes, the network, the controller; remove what the record still lists."""
        for process in list(self.processes):
            try:
                self.stop_process(process)
            except Exception:  # keep tearing down
                log.exception("stopping %s", process.ref.label)
        if self.net is not None:
            try:
                self.net.stop()
                for controller in self.net.controllers:  # RemoteController.stop() leaves its shell
                    controller.terminate()
            except Exception:
                log.exception("mininet stop")
            self.net = None
        if self.controller is not None:
            self.controller.stop()
        if self.record is not None:
            leftovers = runrecord.clean_run(self.record)
            if any(leftovers[key] for key in ("processes", "bridges", "interfaces")):
                log.warning("teardown removed leftovers: %s", leftovers)
            self.record = None
        if self._workdir_is_ours():
            shutil.rmtree(self.workdir, ignore_errors=True)
        self._lock.release()

    def _workdir_is_ours(self) -> bool:
        return self.workdir.parent == runrecord.RUN_DIR and self.workdir.name == self.run_id
