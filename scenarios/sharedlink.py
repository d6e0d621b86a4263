"""The one link a run's jobs share: the model predicts it and the run captures it.

Pure scenario and wiring logic (no Mininet, no pandas), so that ``shiftbed run``
can refuse a scenario whose jobs do not share a link before it builds anything.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SharedLink:
    """The captured link: a leaf's uplink to a spine (one direction: leaf → spine)."""

    leaf: int
    spine: int
    hosts_per_leaf: int

    @property
    def name(self) -> str:
        return f"leaf{self.leaf}->spine{self.spine}"

    @property
    def interface(self) -> str:
        return f"leaf{self.leaf}-eth{self.port}"

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
        leaf = wiring.host(scenario.jobs[0].workers[0]).leaf
        return SharedLink(leaf, scenario.jobs[0].pin_spine or 1, wiring.params.hosts_per_leaf)
    (leaf, spine), _ = max(sorted(counts.items()), key=lambda kv: len(kv[1]))
    return SharedLink(leaf, spine, wiring.params.hosts_per_leaf)


def jobs_off_link(scenario, wiring, link: SharedLink) -> list[str]:
    """Jobs whose bursts do not cross ``link``. The model has every job's bursts share one
    link, and that link is the one captured, so such a job could be neither predicted nor
    measured."""
    return [job.name for job in scenario.jobs if (link.leaf, link.spine) not in job_uplinks(job, wiring)]
