"""Plain rules → OpenFlow 1.3 messages: the one place where the fabric's and the gate's rules meet Ryu.

``controller/forwarding.py`` (:class:`FlowRule`, :class:`GroupRule`) and
``controller/gate.py`` (:class:`GateFlowMod`, :class:`MeterMod`) describe
rules as plain data; the Ryu apps (``fabric_app.py``, ``scheduler_app.py``)
send what these functions build. Each takes the switch's Ryu datapath for
its ``ofproto`` constants and ``ofproto_parser`` classes, so this module
imports no Ryu itself and a unit test can hand it Ryu's real v1.3 modules
without a switch (``tests/unit/test_openflow.py``).
"""

from __future__ import annotations

from controller.forwarding import GOTO_TABLE_AFTER_GATE, FlowRule, GroupRule
from controller.gate import GateFlowMod, MeterMod


def flow_mod(dp, rule: FlowRule, cookie: int):
    """Add one forwarding rule: its match, and its actions applied (none: drop)."""
    ofp, parser = dp.ofproto, dp.ofproto_parser
    actions = []
    for kind, value in rule.actions:
        if kind == "output":
            actions.append(parser.OFPActionOutput(value))
        elif kind == "group":
            actions.append(parser.OFPActionGroup(value))
        elif kind == "set_dscp":
            actions.append(parser.OFPActionSetField(ip_dscp=value))
        else:
            raise ValueError(f"unknown action {kind!r}")
    instructions = [parser.OFPInstructionActions(ofp.OFPIT_APPLY_ACTIONS, actions)] if actions else []
    return parser.OFPFlowMod(dp, cookie=cookie, table_id=rule.table, priority=rule.priority,
                             match=parser.OFPMatch(**rule.match), instructions=instructions)


def select_group_mods(dp, group: GroupRule) -> list:
    """Replace one select group: delete it, then add it with one equal-weight bucket per port."""
    if group.kind != "select":
        raise ValueError(f"group {group.group_id}: only select groups, got {group.kind!r}")
    ofp, parser = dp.ofproto, dp.ofproto_parser
    buckets = [parser.OFPBucket(weight=1, watch_port=ofp.OFPP_ANY, watch_group=ofp.OFPG_ANY,
                                actions=[parser.OFPActionOutput(port)]) for port in group.ports]
    return [parser.OFPGroupMod(dp, ofp.OFPGC_DELETE, ofp.OFPGT_SELECT, group.group_id, []),
            parser.OFPGroupMod(dp, ofp.OFPGC_ADD, ofp.OFPGT_SELECT, group.group_id, buckets)]


def delete_by_cookie(dp, cookie: int, cookie_mask: int, table_id: int | None = None):
    """Delete every rule whose cookie matches ``cookie`` under ``cookie_mask``, in one table or all (None)."""
    ofp, parser = dp.ofproto, dp.ofproto_parser
    return parser.OFPFlowMod(dp, cookie=cookie, cookie_mask=cookie_mask,
                             table_id=ofp.OFPTT_ALL if table_id is None else table_id,
                             command=ofp.OFPFC_DELETE, out_port=ofp.OFPP_ANY, out_group=ofp.OFPG_ANY)


def gate_message(dp, mod: GateFlowMod | MeterMod, cookie: int):
    """One gate message: a meter added, modified or deleted, or a gate rule added, modified or deleted (strict)."""
    ofp, parser = dp.ofproto, dp.ofproto_parser
    if isinstance(mod, MeterMod):
        if mod.command in ("add", "modify"):
            band = parser.OFPMeterBandDrop(rate=mod.rate_kbps, burst_size=mod.burst_kbit)
            command = ofp.OFPMC_ADD if mod.command == "add" else ofp.OFPMC_MODIFY
            return parser.OFPMeterMod(dp, command=command,
                                      flags=ofp.OFPMF_KBPS | ofp.OFPMF_BURST | ofp.OFPMF_STATS,
                                      meter_id=mod.meter_id, bands=[band])
        return parser.OFPMeterMod(dp, command=ofp.OFPMC_DELETE, meter_id=mod.meter_id)
    if not isinstance(mod, GateFlowMod):
        raise TypeError(f"not a gate message: {mod!r}")
    match = parser.OFPMatch(**mod.match)
    if mod.command == "delete":
        return parser.OFPFlowMod(dp, cookie=cookie, table_id=mod.table, priority=mod.priority,
                                 command=ofp.OFPFC_DELETE_STRICT, match=match,
                                 out_port=ofp.OFPP_ANY, out_group=ofp.OFPG_ANY)
    instructions = []
    if mod.meter_id is not None:
        instructions = [parser.OFPInstructionMeter(mod.meter_id),
                        parser.OFPInstructionGotoTable(GOTO_TABLE_AFTER_GATE)]
    elif mod.pass_through:
        instructions = [parser.OFPInstructionGotoTable(GOTO_TABLE_AFTER_GATE)]
    command = ofp.OFPFC_MODIFY_STRICT if mod.command == "modify" else ofp.OFPFC_ADD
    return parser.OFPFlowMod(dp, cookie=cookie, table_id=mod.table, priority=mod.priority,
                             command=command, match=match, instructions=instructions)
