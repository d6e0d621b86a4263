"""The fabric app (OpenFlow 1.3, on Ryu or os-ken): sends what ``controller/forwarding.py`` computes.

The rules become OpenFlow messages in ``controller/openflow.py``; this app
connects switches, sends those messages, polls port counters and answers REST.

Run it with ``.venv/bin/python -m controller`` (either framework) or, on Ryu,
``.venv/bin/ryu-manager controller/fabric_app.py``; the config (fabric
parameters, pins, port-stats CSV) comes from ``$SHIFTBED_FABRIC_CONFIG``
(see ``controller/fabric_config.py``).

For other Ryu apps in the same ``ryu-manager``:
``app_manager.lookup_service_brick("FabricApp")`` returns this app;
``.datapaths`` maps DPID -> Ryu datapath (connected switches),
``.ready_dpids`` holds the DPIDs whose rules are installed (barrier
answered), ``.forwarding`` is the :class:`~controller.forwarding.FabricForwarding`
in force and ``.set_pins(pins)`` re-pins at run time.

REST (the one server the apps share, ``controller/framework.py``, ``--wsapi-port``):
``GET /fabric/status`` and ``PUT /fabric/pins`` (body: a JSON list of pins).

Every rule this app installs carries :data:`FABRIC_COOKIE`; it only ever
deletes rules with that cookie, so other apps' rules (the window scheduler's)
are left alone.
"""

import csv
import json
import logging
import time

from controller import openflow
from controller.fabric_config import load_config
from controller.forwarding import FORWARDING_TABLES, FabricForwarding, Pin
from controller.framework import (
    CONFIG_DISPATCHER,
    DEAD_DISPATCHER,
    MAIN_DISPATCHER,
    BaseApp,
    RestService,
    describe,
    hub,
    ofp_event,
    ofproto_v1_3,
    set_ev_cls,
)
from topo.wiring import switch_name_for_dpid

FABRIC_COOKIE = 0x5B0F_AB00_0000_0000
FABRIC_COOKIE_MASK = 0xFFFF_FF00_0000_0000
STATS_COLUMNS = ["time_s", "dpid", "switch", "port", "rx_bytes", "tx_bytes", "rx_packets",
                 "tx_packets", "rx_dropped", "tx_dropped", "rx_errors", "tx_errors"]

log = logging.getLogger(__name__)


class FabricApp(BaseApp):
    """Proactive leaf-spine forwarding plus OpenFlow port-counter polling."""

    OFP_VERSIONS = [ofproto_v1_3.OFP_VERSION]
    _CONTEXTS = {"rest": RestService}

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.config = load_config()
        self.forwarding = FabricForwarding(self.config.params, self.config.pins)
        self.expected_dpids = set(self.forwarding.dpids())
        self.datapaths = {}
        self.ready_dpids = set()
        self._barrier_xids = {}
        self._stats_file = None
        self._stats_writer = None
        if self.config.stats_csv:
            self._stats_file = open(self.config.stats_csv, "w", newline="")
            self._stats_writer = csv.writer(self._stats_file)
            self._stats_writer.writerow(STATS_COLUMNS)
            self._stats_file.flush()
            self._poller = hub.spawn(self._poll_port_stats)
        rest = kwargs["rest"]
        rest.add("GET", "/fabric/status", lambda _body: (200, self.status()))
        rest.add("PUT", "/fabric/pins", self.put_pins)
        log.info("fabric %s, %d pin(s), stats %s at %.1f Hz", self.config.params.as_dict(),
                 len(self.config.pins), self.config.stats_csv, self.config.stats_hz)

    # -- switches ------------------------------------------------------------

    @set_ev_cls(ofp_event.EventOFPSwitchFeatures, CONFIG_DISPATCHER)
    def _on_switch_features(self, ev):
        datapath = ev.msg.datapath
        self.datapaths[datapath.id] = datapath
        if datapath.id not in self.expected_dpids:
            log.warning("switch %#x is not part of this fabric; it gets no rules", datapath.id)
            return
        self._install(datapath)

    @set_ev_cls(ofp_event.EventOFPStateChange, [MAIN_DISPATCHER, DEAD_DISPATCHER])
    def _on_state_change(self, ev):
        datapath = ev.datapath
        if ev.state == DEAD_DISPATCHER and datapath.id is not None:
            if self.datapaths.get(datapath.id) is datapath:
                del self.datapaths[datapath.id]
                self.ready_dpids.discard(datapath.id)
                log.warning("switch %s disconnected", switch_name_for_dpid(datapath.id))

    def _install(self, datapath):
        """Replace this app's rules on one switch, then ask for a barrier."""
        self.ready_dpids.discard(datapath.id)
        for table in FORWARDING_TABLES:
            datapath.send_msg(openflow.delete_by_cookie(datapath, FABRIC_COOKIE, FABRIC_COOKIE_MASK, table))
        for group in self.forwarding.groups_for(datapath.id):
            for msg in openflow.select_group_mods(datapath, group):
                datapath.send_msg(msg)
        for rule in self.forwarding.flows_for(datapath.id):
            datapath.send_msg(openflow.flow_mod(datapath, rule, FABRIC_COOKIE))
        barrier = datapath.ofproto_parser.OFPBarrierRequest(datapath)
        datapath.set_xid(barrier)
        self._barrier_xids[datapath.id] = barrier.xid
        datapath.send_msg(barrier)

    @set_ev_cls(ofp_event.EventOFPBarrierReply, MAIN_DISPATCHER)
    def _on_barrier(self, ev):
        dpid = ev.msg.datapath.id
        if self._barrier_xids.get(dpid) == ev.msg.xid:
            del self._barrier_xids[dpid]
            self.ready_dpids.add(dpid)
            log.info("%s ready (%d/%d)", switch_name_for_dpid(dpid), len(self.ready_dpids), len(self.expected_dpids))

    @set_ev_cls(ofp_event.EventOFPErrorMsg, [CONFIG_DISPATCHER, MAIN_DISPATCHER])
    def _on_error(self, ev):
        msg = ev.msg
        log.error("switch %s: OpenFlow error type=%d code=%d", switch_name_for_dpid(msg.datapath.id), msg.type, msg.code)

    def set_pins(self, pins) -> None:
        """Recompute the rules with new pins and reinstall them on every connected switch."""
        self.forwarding = FabricForwarding(self.config.params, tuple(pins))
        for dpid, datapath in list(self.datapaths.items()):
            if dpid in self.expected_dpids:
                self._install(datapath)

    def status(self) -> dict:
        return {
            "fabric": self.config.params.as_dict(),
            "expected_dpids": sorted(self.expected_dpids),
            "connected_dpids": sorted(self.datapaths),
            "ready_dpids": sorted(self.ready_dpids),
            "ready": self.expected_dpids <= self.ready_dpids,
            "pins": [pin.as_dict() for pin in self.forwarding.pins],
            "stats_csv": self.config.stats_csv,
            "stats_hz": self.config.stats_hz,
            "controller": describe(),
        }

    # -- port counters ----------------------------------------------------------

    def _poll_port_stats(self):
        """Ask every switch for its port counters at ``stats_hz``, on a fixed grid."""
        interval_s = 1.0 / self.config.stats_hz
        next_s = time.monotonic()
        while True:
            for datapath in list(self.datapaths.values()):
                parser, ofp = datapath.ofproto_parser, datapath.ofproto
                datapath.send_msg(parser.OFPPortStatsRequest(datapath, 0, ofp.OFPP_ANY))
            next_s += interval_s
            now_s = time.monotonic()
            if next_s < now_s:  # fell behind: skip the missed ticks rather than burst
                next_s = now_s
            hub.sleep(next_s - now_s)

    @set_ev_cls(ofp_event.EventOFPPortStatsReply, MAIN_DISPATCHER)
    def _on_port_stats(self, ev):
        if self._stats_writer is None:
            return
        now_s = time.time()
        dpid = ev.msg.datapath.id
        switch = switch_name_for_dpid(dpid)
        local = ev.msg.datapath.ofproto.OFPP_LOCAL
        for stat in sorted(ev.msg.body, key=lambda s: s.port_no):
            if stat.port_no == local:
                continue
            self._stats_writer.writerow([f"{now_s:.6f}", dpid, switch, stat.port_no, stat.rx_bytes, stat.tx_bytes,
                                         stat.rx_packets, stat.tx_packets, stat.rx_dropped, stat.tx_dropped,
                                         stat.rx_errors, stat.tx_errors])
        self._stats_file.flush()

    def close(self):
        if self._stats_file is not None:
            self._stats_file.close()
        super().close()

    # -- REST --------------------------------------------------------------------------

    def put_pins(self, body: bytes) -> tuple[int, dict]:
        """``PUT /fabric/pins`` with a JSON list of pins: 400 on bad input, before any switch is touched."""
        try:
            doc = json.loads(body or b"null")
            if not isinstance(doc, list):
                raise ValueError("body: must be a JSON list of pins")
            pins = [Pin.from_dict(item) if isinstance(item, dict) else _not_a_pin(item) for item in doc]
            FabricForwarding(self.config.params, tuple(pins))  # validate before touching switches
        except (ValueError, TypeError) as exc:
            return 400, {"error": str(exc)}
        self.set_pins(pins)
        return 200, self.status()


def _not_a_pin(item):
    raise ValueError(f"pin: must be a JSON object, got {item!r}")
