"""`shiftbed check`'s verdict on the tiny fabric's measurement (scenarios/commands/check.fabric_problems)."""

from scenarios.commands.check import fabric_problems


def report(**overrides) -> dict:
    base = {"configured_mbps": 50.0, "realized_mbps": 49.4, "ratio": 0.988, "host_busy": None,
            "datapath": "user", "ovs_tx_sndbuf_bytes": 4_194_304, "ping_loss_pct": 0}
    return {**base, **overrides}


def test_a_healthy_fabric_has_no_problem():
    assert fabric_problems(report()) == []


def test_a_slow_fabric_on_a_quiet_host_loses_fidelity():
    (problem,) = fabric_problems(report(realized_mbps=39.3, ratio=0.786))
    assert problem.startswith("fidelity lost: realized 39.3 of 50 Mbit/s (79 % < 90 %)")


def test_a_busy_host_is_named_instead_of_advice_about_the_rate():
    busy = "the host took 12.0, 30.4, 30.4 % of the CPU in the 3 attempts at flows [('h1', 'h2')]"
    (problem,) = fabric_problems(report(realized_mbps=39.3, ratio=0.786, host_busy=busy))
    assert problem.startswith("host busy: the host took 12.0, 30.4, 30.4 %") and "39.3 of 50 Mbit/s" in problem
    assert "lower the rate" not in problem and "again when it is quieter" in problem


def test_every_other_problem_is_still_reported():
    problems = fabric_problems(report(ovs_tx_sndbuf_bytes=None, ping_loss_pct=50))
    assert len(problems) == 2 and "small buffer" in problems[0] and problems[1] == "fabric: ping loss 50 %"
