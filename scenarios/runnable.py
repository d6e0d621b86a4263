"""Whether this machine can run a scenario on the emulated fabric, checked before anything is built.

``run`` checks each scenario with these, and ``batch`` every scenario it draws, so that a batch
refuses at once what ``run`` would refuse later: a policy only the model has, a burst the run
could not capture, a load this machine cannot forward faithfully, a transport its iperf3 cannot
keep time with.
"""

from __future__ import annotations

import sys
from dataclasses import replace

from controller.theory.policies import get_policy
from scenarios.errors import InputError

# Measured here (docs/fabric.md): the userspace datapath keeps >= 90 % fidelity
# up to about this many Mbit/s of concurrent traffic on 2 cores with MTU 9000.
MAX_FAITHFUL_MBPS = 400.0


def emulation_load_mbps(scenario) -> float:
    """Peak traffic the fabric must forward: every job bursting at once, its flows sharing the
    links max-min fairly (Mbit/s; ``sharedlink.peak_load_mbps``)."""
    from scenarios.sharedlink import fabric_params, peak_load_mbps
    from topo.wiring import fabric_wiring

    return peak_load_mbps(scenario, fabric_wiring(fabric_params(scenario)))


def require_capturable(scenario, path: str) -> None:
    """Every job's bursts must cross the fabric, where the run captures them (``runlinks.run_links``)."""
    from scenarios.runlinks import run_links
    from scenarios.sharedlink import fabric_params
    from topo.wiring import fabric_wiring

    try:
        run_links(scenario, fabric_wiring(fabric_params(scenario)))
    except ValueError as exc:
        raise InputError(f"{path}: {exc}") from None


def require_emulated(scenario, path: str, policies: tuple[str, ...]) -> None:
    """InputError (before anything is built) for what only the model has: a policy the fabric cannot
    run, re-alignment (``realign_s``; the job drivers do not re-shift), or a policy that cannot
    schedule the scenario's jobs (``runner.policy_schedules``)."""
    from scenarios.experiment.runner import policy_schedules

    model_only = [p for p in policies if not get_policy(p).emulated]
    if model_only:
        raise InputError(f"--policy: {', '.join(model_only)}: a model only (shiftbed plan and sweep predict it; "
                         "the fabric cannot run it)")
    if scenario.knobs.realign_s is not None:
        raise InputError(f"{path}: realign_s: re-alignment is predicted by plan and sweep; the run does not "
                         "re-shift its jobs (remove realign_s to run)")
    if scenario.pattern_jobs:
        from controller.scheduler import PATTERN_POLICIES

        others = [p for p in policies if p not in PATTERN_POLICIES]
        if others:
            raise InputError(f"--policy: {', '.join(others)}: not run with pattern jobs ({scenario.path}); "
                             f"use {', '.join(PATTERN_POLICIES)}")
    policy_schedules(scenario, policies)


def require_runnable_here(scenario, path: str, policies: tuple[str, ...], force: bool = False) -> None:
    """What ``run`` checks of a scenario beyond its file, before anything is built (InputError naming
    ``path``): every policy emulated, every burst captured, a load this machine forwards faithfully
    (unless ``force``)."""
    from scenarios.timescale import on_wire

    require_emulated(scenario, path, policies)
    require_capturable(scenario, path)
    load = emulation_load_mbps(on_wire(scenario))  # as the fabric runs it: K times slower
    if load > MAX_FAITHFUL_MBPS and not force:
        raise InputError(f"{path}: fabric: the jobs would push ~{load:.0f} Mbit/s through the fabric, "
                         f"more than this machine forwards faithfully (~{MAX_FAITHFUL_MBPS:.0f}); lower the link "
                         "rates, raise --time-scale or pass --force")


def burst_transport_here(scenario, scenario_text: str, version: tuple[int, int] | None = None):
    """The scenario as this machine can run it, and its text as the results folder keeps it.

    An iperf3 from 3.16 on ends each test at its next report tick (``apps.iperf``), so a fresh
    test per burst cannot keep a job's time: a scenario that leaves the transport to the default
    runs over standing connections, said in one line and written into the kept ``scenario.yaml``
    (so ``report --repredict`` models what ran); one that asks for ``transport: iperf3`` is refused.
    """
    from apps import iperf

    version = version or iperf.installed_version()
    if scenario.transport != "iperf3" or version is None or version < iperf.ENDS_AT_REPORT_TICK_FROM:
        return scenario, scenario_text
    tick = (f"this machine's iperf3 {version[0]}.{version[1]} ends each test at its next report tick "
            "(~1 s a burst)")
    if scenario.transport_given:
        raise InputError(f"{scenario.path}: transport: iperf3: {tick}, so no burst could keep its time; "
                         "use transport: persistent (standing connections)")
    print(f"shiftbed run: {tick}: the jobs' flows use standing connections (transport: persistent)",
          file=sys.stderr)
    kept = scenario_text.rstrip("\n") + (f"\n# shiftbed run: {tick}, so the default transport was\n"
                                         "transport: persistent\n")
    return replace(scenario, transport="persistent"), kept
