"""The one link a run's jobs share: the model predicts it and the run captures it.

Also what the configured links let each job put on it (flows shared max-min
fairly over host and fabric links), which the model's headroom, fidelity and
the fabric-load guard use. Pure scenario and wiring logic (no Mininet, no
pandas), so that ``shiftbed run`` can refuse a scenario before it builds anything.
"""

from __future__ import annotations

from dataclasses import dataclass

from controller.theory import fabricshare


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


def jobs_off_link(scenario, wiring, link: SharedLink) -> list[str]:
    """Jobs whose bursts do not cross ``link``. The model has every job's bursts share one
    link, and that link is the one captured, so such a job could be neither predicted nor
    measured."""
    return [job.name for job in scenario.jobs if (link.leaf, link.spine) not in job_uplinks(job, wiring)]


def max_min_rates(paths: dict, capacity_mbps: dict) -> dict:
    """Max-min fair rates (progressive filling) of flows, each given as the links it crosses.

    ``paths``: flow -> its links; ``capacity_mbps``: link -> rate. Every flow's rate
    rises together until a link fills; its flows stop there and the rest go on
    (``controller.theory.fabricshare.max_min_rates``, which the fluid model uses too).
    """
    return fabricshare.max_min_rates(paths, capacity_mbps)


def _link_capacity_mbps(wiring, paths: dict) -> dict:
    """Every link the flows in ``paths`` cross, at its configured rate."""
    p = wiring.params
    return {lk: p.host_link_mbps if lk[0].startswith("host") else p.fabric_link_mbps
            for links in paths.values() for lk in links}


def peak_load_mbps(scenario, wiring) -> float:
    """What the fabric forwards when every job bursts at once (Mbit/s): each job's largest
    phase, all their flows sharing the links max-min fairly. Flows that share a link
    split it, so jobs on one shared link load the machine far less than their flows'
    rates added up."""
    from apps.dltjob import phase_pairs

    paths = {}
    for job in scenario.jobs:
        phase = max(phase_pairs(job.workers, job.pattern), key=len)
        for i, (src, dst) in enumerate(phase):
            paths[(job.name, i)] = wiring.flow_links(src, dst, job.pin_spine or 1)
    return sum(max_min_rates(paths, _link_capacity_mbps(wiring, paths)).values())


def planned_solo_mbps(scenario, wiring, link: SharedLink) -> dict[str, float]:
    """Per job, the rate its burst alone puts on ``link`` as planned (Mbit/s): each phase's flows
    share the fabric max-min fairly (a parameter server's link carries all its flows), and the
    busiest phase on ``link`` counts. 0 for a job that does not cross it.
    """
    from apps.dltjob import phase_pairs

    out = {}
    for job in scenario.jobs:
        spine = job.pin_spine or 1
        best = 0.0
        for phase in phase_pairs(job.workers, job.pattern):
            paths = {i: wiring.flow_links(s, d, spine) for i, (s, d) in enumerate(phase)}
            rates = max_min_rates(paths, _link_capacity_mbps(wiring, paths))
            best = max(best, sum(r for i, r in rates.items() if link.uplink in paths[i]))
        out[job.name] = best
    return out


def planned_headroom(scenario, wiring, link: SharedLink) -> dict[str, float]:
    """Per job, the shared link's rate over the rate its burst alone puts on it (>= 1), as planned.

    A fabric faster than its host links carries several jobs' bursts at full rate
    (``fluid.FluidJob.link_headroom``); a run measures the same from the solo bursts.
    """
    solo = planned_solo_mbps(scenario, wiring, link)
    return {name: max(1.0, link.mbps / mbps) if mbps > 0 else 1.0 for name, mbps in solo.items()}
