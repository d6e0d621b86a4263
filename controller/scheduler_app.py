"""The LCM window scheduler as a thin controller app: REST in, gate messages out, on time.

Run next to the fabric app: ``python -m controller controller.scheduler_app``.
Requests are validated and the state is kept by
:class:`controller.scheduler.SchedulerCore` (plain, unit-tested);
:class:`controller.gate.WindowGate` decides which flow-mods each edge needs.
This app only (1) answers REST on the server it shares with the fabric app
(127.0.0.1 by default), (2) fires the gate's edges from a ``hub`` task on the
controller's wall clock — sleep in the hub until ~2 ms before the edge, then
in a plain, high-resolution sleep until it is due, send the edge's flow-mods
and a barrier — and (3) records for each edge its due time, the time its
messages were handed to the switch connection and the time the barrier reply
came back (``GET /shiftbed/edges``), and where a late edge lost its time:
``GET /shiftbed/status`` sums up per stage (``stages_ms``) how late the hub
woke the firer against its plan, how long the messages took to prepare, how
late the plain sleep returned and how long the sends took.

``advance_ms`` (policy option, default 0) sends every edge that much early:
the switch applies a flow-mod ~1.3-1.9 ms after it is sent (barrier replies,
docs/gate.md), so a measured constant can be pre-compensated; lateness in
``GET /shiftbed/status`` is always against the *scheduled* time.

Gate rules carry :data:`GATE_COOKIE`, so the fabric app never deletes them and
``POST /shiftbed/stop`` removes all of them (and the meters) at once.

The schedule is computed on a native thread (``framework.run_blocking``), not
in the hub. Under an eventlet hub (Ryu) every green thread — the edge firer,
each switch connection's echo replies and barriers, each REST request — runs
in one OS thread, and CPU-bound NumPy work never yields, so ``hub.spawn``
would only move the stall to another green thread; under os-ken's native hub
every task is a thread already. On a native thread the computation lets the
hub run (the interpreter hands the GIL over every few ms, NumPy and the
compiled search release it), and its size is bounded before it starts
(``controller/limits.py``). Requests that change the state are served one at
a time (:attr:`SchedulerApp.changes`), since a request now yields while its
schedule is computed; jobs and policy are refused while the gate runs, so a
computation never competes with the edges.
"""

import itertools
import logging
import time

from controller import openflow
from controller.edge_timing import stages_ms, summary
from controller.framework import (
    DEAD_DISPATCHER,
    MAIN_DISPATCHER,
    BaseApp,
    RestService,
    hub,
    ofp_event,
    ofproto_v1_3,
    precise_sleep,
    run_blocking,
    set_ev_cls,
)
from controller.gate import GateWindow, WindowGate
from controller.scheduler import ApiError, SchedulerCore, parse_body
from controller.theory.policies import load_from_environment

GATE_COOKIE = 0x5B0F_6A7E_0000_0000
HORIZON_S = 0.5  # edges are computed this far ahead
HUB_SLEEP_MARGIN_S = 0.002  # the hub's epoll sleeps wake up to ~1 ms late; the rest is a precise sleep
MAX_EDGE_RECORDS = 100_000

log = logging.getLogger(__name__)


class SchedulerApp(BaseApp):
    """Window scheduler: REST API + edge firing; see the module docstring."""

    OFP_VERSIONS = [ofproto_v1_3.OFP_VERSION]
    _CONTEXTS = {"rest": RestService}

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        names = load_from_environment()  # policy files the run was given (SHIFTBED_POLICY_FILES)
        if names:
            log.info("policies loaded from files: %s", ", ".join(names))
        self.core = SchedulerCore(compute_with=run_blocking)
        self.changes = hub.Semaphore(1)  # one state-changing request at a time
        self.datapaths = {}
        self.gate: WindowGate | None = None
        self._runner = None
        self._generation = 0
        self.edges = []  # dicts: due_s, sent_s, barrier_s, job, opening
        self._pending = {}  # (dpid, xid) -> edge record
        self.errors = []
        SchedulerRest(self).register(kwargs["rest"])

    # -- switches ----------------------------------------------------------------------
    @set_ev_cls(ofp_event.EventOFPStateChange, [MAIN_DISPATCHER, DEAD_DISPATCHER])
    def _on_state_change(self, ev):
        dp = ev.datapath
        if ev.state == MAIN_DISPATCHER and dp.id is not None:
            self.datapaths[dp.id] = dp
        elif ev.state == DEAD_DISPATCHER and dp.id is not None and self.datapaths.get(dp.id) is dp:
            del self.datapaths[dp.id]

    @set_ev_cls(ofp_event.EventOFPBarrierReply, MAIN_DISPATCHER)
    def _on_barrier(self, ev):
        record = self._pending.pop((ev.msg.datapath.id, ev.msg.xid), None)
        if record is not None:
            record["barrier_s"] = max(record.get("barrier_s") or 0.0, time.time())

    @set_ev_cls(ofp_event.EventOFPErrorMsg, MAIN_DISPATCHER)
    def _on_error(self, ev):
        if len(self.errors) < 1000:
            self.errors.append({"dpid": ev.msg.datapath.id, "type": ev.msg.type, "code": ev.msg.code,
                                "time_s": time.time()})

    # -- messages ----------------------------------------------------------------------
    def prepare(self, mods, record=None) -> list:
        """Serialise ``mods`` and one barrier per switch touched, ahead of time: ``[(dp, bytes)]``.

        Ryu serialises in Python (~0.1 ms a message); doing it before the edge
        leaves only socket writes for the edge itself.
        """
        out, touched = [], []
        for mod in mods:
            dp = self.datapaths.get(mod.dpid)
            if dp is None:
                if record is not None:
                    record["missing_dpids"] = sorted(set(record.get("missing_dpids", [])) | {mod.dpid})
                continue
            msg = openflow.gate_message(dp, mod, GATE_COOKIE)
            dp.set_xid(msg)
            msg.serialize()
            out.append((dp, msg.buf))
            if dp not in touched:
                touched.append(dp)
        for dp in touched:
            barrier = dp.ofproto_parser.OFPBarrierRequest(dp)
            dp.set_xid(barrier)
            barrier.serialize()
            if record is not None:
                self._pending[(dp.id, barrier.xid)] = record
            out.append((dp, barrier.buf))
        return out

    def send(self, mods, record=None) -> None:
        """Send ``mods`` now, each switch's followed by a barrier."""
        self.send_prepared(self.prepare(mods, record), record)

    @staticmethod
    def send_prepared(prepared, record=None) -> None:
        for dp, buf in prepared:
            dp.send(buf)
        if record is not None:
            record["sent_s"] = time.time()
        hub.sleep(0)  # let each switch connection's send loop write now

    # -- the gate ----------------------------------------------------------------------
    def start_gate(self) -> None:
        core = self.core
        windows = {name: [GateWindow(*w) for w in arcs] for name, arcs in core.window_arcs_ms().items()}
        flows = {name: list(job.flows) for name, job in core.jobs.items()}
        self.gate = WindowGate(windows, flows, core.policy.epoch_s, mode=core.policy.mode,
                               floor_kbps=core.policy.floor_kbps, toggle=core.policy.toggle,
                               floor_burst_ms=core.policy.floor_burst_ms)
        self.edges, self._pending = [], {}
        self.send(self.gate.setup())
        core.gating = True
        self._generation += 1
        self._runner = hub.spawn(self._fire_edges, self._generation)
        log.info("gate started: epoch %.3f, %d job(s), mode %s", core.policy.epoch_s, len(windows),
                 core.policy.mode)

    def stop_gate(self) -> None:
        self._generation += 1  # the runner sees this and returns
        if self.gate is not None:
            self.send(self.gate.teardown())
        for dp in list(self.datapaths.values()):  # and anything left with our cookie
            dp.send_msg(openflow.delete_by_cookie(dp, GATE_COOKIE, 0xFFFF_FFFF_FFFF_FFFF))
        self.gate = None
        self.core.gating = False

    def _fire_edges(self, generation: int) -> None:
        advance_s = self.core.policy.advance_ms / 1000
        cursor_s = max(time.time() + advance_s, self.gate.epoch_s - 1.0)
        while generation == self._generation:
            edges = self.gate.edges(cursor_s, cursor_s + HORIZON_S)
            # edges due at the same instant (one job closes as the next opens) go out as one
            # batch with one barrier per switch: sent one after the other, the second waited
            # for the first's barrier and datapath revalidation and landed 3-7 ms late (measured)
            for due_s, group in itertools.groupby(edges, key=lambda e: e.time_s):
                group = list(group)
                send_at_s = due_s - advance_s
                delay_s = send_at_s - time.time()
                if delay_s > HUB_SLEEP_MARGIN_S:
                    hub.sleep(delay_s - HUB_SLEEP_MARGIN_S)
                record = {"due_s": due_s, "job": ",".join(e.job for e in group),
                          "opening": ",".join("open" if e.opening else "close" for e in group),
                          "sent_s": None, "barrier_s": None, "send_at_s": send_at_s, "woke_s": time.time()}
                prepared = self.prepare([m for e in group for m in e.mods], record)
                record["prepared_s"] = time.time()
                # The last stretch blocks the hub (at most HUB_SLEEP_MARGIN_S) instead of
                # yielding in a loop, which kept a whole core busy for 3 ms before every
                # edge; it sends ~0.2 ms after send_at_s (docs/gate.md).
                remaining_s = send_at_s - time.time()
                if remaining_s > 0:
                    precise_sleep(remaining_s)
                record["slept_s"] = time.time()
                if generation != self._generation:
                    return
                self.send_prepared(prepared, record)
                if len(self.edges) < MAX_EDGE_RECORDS:
                    self.edges.append(record)
            cursor_s += HORIZON_S
            if not edges:
                hub.sleep(max(0.0, cursor_s - time.time() - HORIZON_S))

    def status(self) -> dict:
        fired = [e for e in self.edges if e["sent_s"] is not None]
        late_ms = [(e["sent_s"] - e["due_s"]) * 1000 for e in fired]
        barrier_ms = [(e["barrier_s"] - e["due_s"]) * 1000 for e in fired if e["barrier_s"]]
        return {"policy": self.core.policy.policy if self.core.policy else None,
                "gating": self.core.gating, "jobs": sorted(self.core.jobs),
                "datapaths": sorted(self.datapaths), "edges_fired": len(fired),
                "send_lateness_ms": summary(late_ms), "barrier_lateness_ms": summary(barrier_ms),
                "stages_ms": stages_ms(fired, HUB_SLEEP_MARGIN_S),
                "openflow_errors": len(self.errors), "last_errors": self.errors[-5:]}


class SchedulerRest:
    """``/shiftbed/...``: every handler answers JSON; bad requests get 4xx, never a crash."""

    def __init__(self, app: SchedulerApp):
        self.app = app

    def register(self, rest) -> None:
        rest.add("GET", "/shiftbed/jobs", self.list_jobs)
        rest.add("POST", "/shiftbed/jobs", self.add_job)
        rest.add("DELETE", "/shiftbed/jobs/{name}", self.remove_job)
        rest.add("GET", "/shiftbed/schedule", self.get_schedule)
        rest.add(("POST", "PUT"), "/shiftbed/policy", self.set_policy)
        rest.add("POST", "/shiftbed/stop", self.stop)
        rest.add("GET", "/shiftbed/status", self.get_status)
        rest.add("GET", "/shiftbed/edges", self.get_edges)

    @staticmethod
    def _answer(fn, status=200) -> tuple[int, dict]:
        try:
            return status, fn()
        except ApiError as exc:  # any other exception is the router's 500 (controller/rest.py)
            return exc.status, exc.body()

    def _change(self, fn, status=200) -> tuple[int, dict]:
        """Answer a request that changes the state, after any other such request has finished."""
        def serialised():
            with self.app.changes:
                return fn()
        return self._answer(serialised, status)

    def list_jobs(self, _body):
        return self._answer(lambda: {"jobs": [j.as_dict() for j in self.app.core.jobs.values()]})

    def add_job(self, body):
        def do():
            job = self.app.core.add_job(parse_body(body))
            return {"job": job.as_dict(), "schedule": self.app.core.schedule_doc()}
        return self._change(do, 201)

    def remove_job(self, _body, name):
        def do():
            self.app.core.remove_job(name)
            return {"removed": name, "schedule": self.app.core.schedule_doc()}
        return self._change(do)

    def get_schedule(self, _body):
        return self._answer(self.app.core.schedule_doc)

    def set_policy(self, body):
        def do():
            self.app.core.set_policy(parse_body(body))
            if self.app.core.enforces_windows:
                self.app.start_gate()
            return self.app.core.schedule_doc()
        return self._change(do)

    def stop(self, _body):
        def do():
            self.app.stop_gate()
            return self.app.status()
        return self._change(do)

    def get_status(self, _body):
        return self._answer(self.app.status)

    def get_edges(self, _body):
        return self._answer(lambda: {"edges": list(self.app.edges)})
