"""The one link a run's jobs share: the model predicts it and the run captures it.

Also what the configured links let each job put on it (flows shared max-min
fairly over host and fabric links), which the model's headroom, fidelity and
the fabric-load guard use. Pure scenario and wiring logic (no Mininet, no
pandas), so that ``shiftbed run`` can refuse a scenario before it builds anything.
"""

from __future__ import annotations

from dataclasses import dataclass

from controller.theory import fabricshare
from scenarios.routes import link_capacity_mbps, phase_routes


@dataclass(frozen=True)
class SharedLink:
    """The captured link: a leaf's uplink to a spine (one direction: leaf → spine), at the
    fabric links' rate ``mbps``: what the jobs' bursts share (a host link may be slower)."""

    leaf: int
    spine: int
    hosts_per_leaf: int
    mbps: float

    @property
    def name(self) -> str:
        return f"leaf{self.leaf}->spine{self.spine}"

    @property
    def interface(self) -> str:
        return f"leaf{self.leaf}-eth{self.port}"

    @property
    def uplink(self) -> tuple:
        """This link as :meth:`topo.wiring.Wiring.flow_links` names the links a flow crosses."""
        return ("up", self.leaf, self.spine)

    @property
    def downlink(self) -> tuple:
        """The same link's other direction (spine → leaf), which the same capture sees."""
        return ("down", self.spine, self.leaf)

    @property
    def port(self) -> int:
        return self.hosts_per_leaf + self.spine


def fabric_params(scenario):
    """The scenario's fabric as :class:`topo.wiring.FabricParams`."""
    from topo.wiring import FabricParams

    f = scenario.fabric
    return FabricParams(spines=f.spines, leaves=f.leaves, hosts_per_leaf=f.hosts_per_leaf,
                        host_link_mbps=f.host_link_mbps, fabric_link_mbps=f.fabric_link_mbps)


def job_uplinks(job, wiring) -> set[tuple[int, int]]:
    """The (leaf, spine) uplinks a job's bursts cross: every leaf of its workers, through its
    spine (``pin_spine``, else spine 1); none if its workers are all on one leaf."""
    leaves = {wiring.host(w).leaf for w in job.workers}
    return {(leaf, job.pin_spine or 1) for leaf in leaves} if len(leaves) >= 2 else set()


def shared_link(scenario, wiring) -> SharedLink:
    """The leaf uplink crossed by the most jobs' flows (ties: lowest leaf)."""
    counts: dict[tuple[int, int], set[str]] = {}
    for job in scenario.jobs:
        for uplink in job_uplinks(job, wiring):
            counts.setdefault(uplink, set()).add(job.name)
    if not counts:
        leaf, spine = wiring.host(scenario.jobs[0].workers[0]).leaf, scenario.jobs[0].pin_spine or 1
    else:
        (leaf, spine), _ = max(sorted(counts.items()), key=lambda kv: len(kv[1]))
    return SharedLink(leaf, spine, wiring.params.hosts_per_leaf, wiring.params.fabric_link_mbps)


def max_min_rates(paths: dict, capacity_mbps: dict) -> dict:
    """Max-min fair rates (progressive filling) of flows, each given as the links it crosses.

    ``paths``: flow -> its links; ``capacity_mbps``: link -> rate. Every flow's rate
    rises together until a link fills; its flows stop there and the rest go on
    (``controller.theory.fabricshare.max_min_rates``, which the fluid model uses too).
    """
    return fabricshare.max_min_rates(paths, capacity_mbps)


def _capacity(wiring, paths: dict) -> dict:
    """Every link the flows in ``paths`` cross, at its configured rate."""
    return link_capacity_mbps(wiring, {link for links in paths.values() for link in links})


def peak_load_mbps(scenario, wiring) -> float:
    """What the fabric forwards when every job bursts at once (Mbit/s): each job's largest
    phase, all their flows sharing the links max-min fairly. Flows that share a link
    split it, so jobs on one shared link load the machine far less than their flows'
    rates added up."""
    paths = {}
    for job, phases in phase_routes(scenario, wiring).items():
        for flow, links in max(phases, key=len).items():
            paths[(job, flow)] = links
    return sum(max_min_rates(paths, _capacity(wiring, paths)).values())


def planned_solo_mbps(scenario, wiring, home: dict[str, SharedLink]) -> dict[str, float]:
    """Per job, the rate its burst alone puts on its ``home`` link's uplink as planned (Mbit/s):
    each phase's flows share the fabric max-min fairly (a parameter server's link carries all its
    flows), and the busiest phase on that link counts. 0 for a job that does not cross it.
    """
    out = {}
    for job, phases in phase_routes(scenario, wiring).items():
        best = 0.0
        for paths in phases:
            rates = max_min_rates(paths, _capacity(wiring, paths))
            best = max(best, sum(r for f, r in rates.items() if home[job].uplink in paths[f]))
        out[job] = best
    return out


def planned_headroom(scenario, wiring, link: SharedLink) -> dict[str, float]:
    """Per job, the shared link's rate over the rate its burst alone puts on it (>= 1), as planned.

    A fabric faster than its host links carries several jobs' bursts at full rate
    (``fluid.FluidJob.link_headroom``); a run measures the same from the solo bursts.
    """
    solo = planned_solo_mbps(scenario, wiring, {job.name: link for job in scenario.jobs})
    return {name: max(1.0, link.mbps / mbps) if mbps > 0 else 1.0 for name, mbps in solo.items()}
