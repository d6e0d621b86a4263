"""Plain rules → OpenFlow 1.3 messages (controller/openflow.py), built and encoded by the framework's
real v1.3 parser (Ryu's or os-ken's) without a switch; each flow-mod is decoded again and compared with
the rule it came from. The module runs on the framework chosen here; the last test runs it again, in a
process of its own, on every other framework installed."""

import importlib
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from controller import openflow
from controller.forwarding import GOTO_TABLE_AFTER_GATE, FabricForwarding, FlowRule, GroupRule, Pin
from controller.framework_choice import FRAMEWORK_ENV, PACKAGES, choose, installed
from controller.gate import DataFlow, GateFlowMod, MeterMod
from topo.wiring import FabricParams, leaf_dpid

FRAMEWORK = choose()
if FRAMEWORK == "ryu":
    importlib.import_module("controller.ryu_compat")  # the eventlet shim, before Ryu
ofproto_parser, ofproto_v1_3, ofproto_v1_3_parser = (
    importlib.import_module(f"{PACKAGES[FRAMEWORK]}.ofproto.{name}")
    for name in ("ofproto_parser", "ofproto_v1_3", "ofproto_v1_3_parser"))
OFP = ofproto_v1_3
COOKIE = 0x5B0F_0000_0000_0001


def datapath(dpid=0x101):
    return SimpleNamespace(id=dpid, ofproto=ofproto_v1_3, ofproto_parser=ofproto_v1_3_parser)


def on_the_wire(msg):
    """Encode ``msg`` as Ryu would send it, and decode the bytes again."""
    msg.xid = 1
    msg.serialize()
    buf = bytes(msg.buf)
    version, msg_type, length, xid = ofproto_parser.header(buf)
    assert version == OFP.OFP_VERSION and length == len(buf)
    return ofproto_parser.msg(msg.datapath, version, msg_type, length, xid, buf)


def plain_actions(instructions) -> tuple:
    """Decoded apply-actions back in the rules' own words."""
    if not instructions:
        return ()
    (apply,) = instructions
    assert apply.type == OFP.OFPIT_APPLY_ACTIONS
    out = []
    for action in apply.actions:
        if isinstance(action, ofproto_v1_3_parser.OFPActionOutput):
            out.append(("output", action.port))
        elif isinstance(action, ofproto_v1_3_parser.OFPActionGroup):
            out.append(("group", action.group_id))
        else:
            assert action.key == "ip_dscp"
            out.append(("set_dscp", action.value))
    return tuple(out)


def test_every_forwarding_rule_reaches_the_wire_as_written():
    pins = (Pin(spine=2, src_host="h1", dst_port_range=(5201, 5210), dscp=3), Pin(spine=1, proto="udp"))
    fabric = FabricForwarding(FabricParams(spines=2, leaves=2, hosts_per_leaf=2), pins)
    rules = fabric.flows()
    assert any(isinstance(v, tuple) for r in rules for v in r.match.values())  # masked ports among them
    assert {kind for r in rules for kind, _ in r.actions} == {"output", "group", "set_dscp"}
    for rule in rules:
        back = on_the_wire(openflow.flow_mod(datapath(rule.dpid), rule, COOKIE))
        assert (back.command, back.cookie, back.table_id, back.priority) == \
            (OFP.OFPFC_ADD, COOKIE, rule.table, rule.priority)
        assert dict(back.match.items()) == rule.match
        assert plain_actions(back.instructions) == rule.actions


def test_an_unknown_action_is_refused():
    with pytest.raises(ValueError, match="unknown action"):
        openflow.flow_mod(datapath(), FlowRule(0x101, 0, 10, {}, (("flood", 0),)), COOKIE)


def test_a_select_group_is_deleted_then_added_with_one_bucket_per_port():
    delete, add = openflow.select_group_mods(datapath(), GroupRule(leaf_dpid(1), 1, (3, 4)))
    assert (delete.command, delete.type, delete.group_id, delete.buckets) == \
        (OFP.OFPGC_DELETE, OFP.OFPGT_SELECT, 1, [])
    assert (add.command, add.type, add.group_id) == (OFP.OFPGC_ADD, OFP.OFPGT_SELECT, 1)
    assert [(b.weight, [a.port for a in b.actions]) for b in add.buckets] == [(1, [3]), (1, [4])]
    for msg in (delete, add):
        msg.serialize()  # Ryu can encode it
    with pytest.raises(ValueError, match="only select"):
        openflow.select_group_mods(datapath(), GroupRule(leaf_dpid(1), 1, (3,), kind="all"))


@pytest.mark.parametrize("table_id", [0, None])
def test_delete_by_cookie_in_one_table_or_all(table_id):
    back = on_the_wire(openflow.delete_by_cookie(datapath(), COOKIE, 0xFFFF_FF00_0000_0000, table_id))
    assert (back.command, back.cookie, back.cookie_mask) == (OFP.OFPFC_DELETE, COOKIE, 0xFFFF_FF00_0000_0000)
    assert back.table_id == (OFP.OFPTT_ALL if table_id is None else table_id)
    assert (back.out_port, back.out_group) == (OFP.OFPP_ANY, OFP.OFPG_ANY)


FLOW = DataFlow(0x101, "10.0.0.1", "10.0.0.3", 5201, 21585)


@pytest.mark.parametrize("mod, command, instructions", [
    (GateFlowMod("add", 0x101, FLOW.match()), OFP.OFPFC_ADD, []),  # closed: drop
    (GateFlowMod("delete", 0x101, FLOW.match()), OFP.OFPFC_DELETE_STRICT, []),  # open by delete
    (GateFlowMod("modify", 0x101, FLOW.match(), pass_through=True), OFP.OFPFC_MODIFY_STRICT,
     [("goto", GOTO_TABLE_AFTER_GATE)]),  # open by modify
    (GateFlowMod("add", 0x101, FLOW.match(), meter_id=2), OFP.OFPFC_ADD,
     [("meter", 2), ("goto", GOTO_TABLE_AFTER_GATE)]),  # floor
])
def test_gate_rules_reach_the_wire_as_written(mod, command, instructions):
    back = on_the_wire(openflow.gate_message(datapath(), mod, COOKIE))
    assert (back.command, back.cookie, back.table_id, back.priority) == (command, COOKIE, mod.table, mod.priority)
    assert dict(back.match.items()) == mod.match
    assert [("meter", i.meter_id) if i.type == OFP.OFPIT_METER else ("goto", i.table_id)
            for i in back.instructions] == instructions
    if mod.command == "delete":
        assert (back.out_port, back.out_group) == (OFP.OFPP_ANY, OFP.OFPG_ANY)


def test_a_udp_probe_flow_matches_its_udp_ports():
    udp = DataFlow(0x101, "10.0.0.1", "10.0.0.5", 7201, 7701, proto="udp")
    back = on_the_wire(openflow.gate_message(datapath(), GateFlowMod("add", 0x101, udp.match()), COOKIE))
    assert dict(back.match.items()) == {"eth_type": 0x0800, "ip_proto": 17, "ipv4_src": "10.0.0.1",
                                        "ipv4_dst": "10.0.0.5", "udp_src": 7201, "udp_dst": 7701}


def test_meters_are_added_with_one_drop_band_and_deleted_by_id():
    add = openflow.gate_message(datapath(), MeterMod("add", 0x101, 3, rate_kbps=1000, burst_kbit=250), COOKIE)
    assert (add.command, add.meter_id) == (OFP.OFPMC_ADD, 3)
    assert add.flags == OFP.OFPMF_KBPS | OFP.OFPMF_BURST | OFP.OFPMF_STATS
    [band] = add.bands
    assert (band.type, band.rate, band.burst_size) == (OFP.OFPMBT_DROP, 1000, 250)
    delete = openflow.gate_message(datapath(), MeterMod("delete", 0x101, 3), COOKIE)
    assert (delete.command, delete.meter_id) == (OFP.OFPMC_DELETE, 3)
    for msg in (add, delete):
        msg.serialize()
    with pytest.raises(TypeError):
        openflow.gate_message(datapath(), FlowRule(0x101, 0, 1, {}), COOKIE)


@pytest.mark.parametrize("framework", [f for f in installed() if f != FRAMEWORK])
def test_the_same_messages_on_every_other_framework(framework):
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", __file__,
                           "-k", "not every_other_framework"], capture_output=True, text=True, timeout=300,
                          env={**os.environ, FRAMEWORK_ENV: framework}, cwd=Path(__file__).resolve().parents[2])
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert " passed" in done.stdout and " failed" not in done.stdout
