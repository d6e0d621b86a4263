"""Where a run's jobs meet, and where each job is measured: the leaf-spine ports a run captures.

Jobs meet where their flows share a directed fabric link (``scenarios/routes.py``: a
flow takes its job's ``pin_spine``, else the spine the ECMP hash gives it, and the run
pins it there). Two directed links that carry the very same flows are one meeting
point (``leaf1->spine1`` and ``spine1->leaf2`` on a two-leaf fabric): the packets that
cross one cross the other. One tcpdump on a leaf's port to a spine sees both directions
of that link, so the run captures the fewest ports that see every meeting point
(greedy: the port that sees most of those not yet seen, lowest leaf and spine first).

Each job is measured on one captured port, its *home*: a port its flows leave a leaf
through, where most jobs meet. Its bursts' spans, its solo rate and its fidelity come
from there. A job that meets no one is captured at its own first uplink. Pure
scenario and wiring logic (no Mininet), so that ``shiftbed run`` can refuse a scenario
before it builds anything.
"""

from __future__ import annotations

import itertools
from collections import Counter
from dataclasses import dataclass, field

from controller.theory.fabricshare import JobLinks
from scenarios.routes import job_links, job_routes, link_capacity_mbps
from scenarios.sharedlink import SharedLink


@dataclass(frozen=True)
class RunLinks:
    """The run's captured ports (the busiest first), each job's home port, and where jobs meet."""

    ports: tuple[SharedLink, ...]
    home: dict[str, SharedLink]  # job -> the port it is measured on
    meetings: dict[tuple, tuple[str, ...]]  # directed fabric link two or more jobs share -> those jobs
    names: dict[tuple, str]  # directed link -> its name (``topo.wiring.Wiring.link_name``)
    same_as: dict[tuple, tuple]  # a meeting link -> the captured link that carries the same flows
    flows_on: dict[str, dict[tuple, int]] = field(default_factory=dict)  # job -> link -> its flows on it
    capacity_mbps: dict[tuple, float] = field(default_factory=dict)  # every link a job crosses -> its rate

    @property
    def primary(self) -> SharedLink:
        return self.ports[0]

    def home_jobs(self, port: SharedLink) -> list[str]:
        """The jobs measured on ``port``."""
        return [job for job, home in self.home.items() if home == port]

    def recorded(self) -> list[tuple[SharedLink, str, tuple]]:
        """``(port, "up" | "down", link)`` for every meeting link a captured port sees, and the uplink
        of a port where no jobs meet (a job's own, captured to measure it), in order: what
        ``link_bandwidth.csv`` has a row set for."""
        out = []
        for port in self.ports:
            both = (("up", port.uplink), ("down", port.downlink))
            met = [(port, direction, link) for direction, link in both if link in self.meetings]
            out += met or [(port, "up", port.uplink)]
        return out

    def model_links(self, solo: dict[str, dict]) -> JobLinks | None:
        """The fluid model's fabric for a run that captures more than one port (None: one port, where
        the one-link model with each job's measured headroom holds): every job's flows on every link
        at its configured rate, and one more link per job, ``("solo", job)``, at the per-flow rate its
        bursts reached alone on its home uplink (``solo[job]["burst_mbps"]`` over its flows there),
        so that a job alone goes as fast as it was measured to, and a shared link slows it only
        where its share falls below that."""
        if len(self.ports) < 2:
            return None
        flows_on, capacity = {}, dict(self.capacity_mbps)
        for job, links in self.flows_on.items():
            flows_on[job] = dict(links)
            mbps = solo.get(job, {}).get("burst_mbps") or 0.0
            if mbps > 0:
                flows_on[job][("solo", job)] = 1
                capacity[("solo", job)] = mbps / max(1, links.get(self.home[job].uplink, 1))
        return JobLinks(flows_on, capacity)

    def meeting_pairs(self) -> set[frozenset]:
        """Every pair of jobs that shares a link."""
        return {frozenset(pair) for jobs in self.meetings.values() for pair in itertools.combinations(jobs, 2)}

    def record(self) -> dict[str, dict]:
        """``summary.json``'s ``links``: every directed link two or more jobs share, its jobs, whether
        a captured port sees it, and the captured link carrying the same flows where it is not."""
        seen = {link for port in self.ports for link in (port.uplink, port.downlink)}
        out = {}
        for link, jobs in self.meetings.items():
            entry = {"jobs": list(jobs), "captured": link in seen}
            if link not in seen and link in self.same_as:
                entry["same_flows_as"] = self.names[self.same_as[link]]
            out[self.names[link]] = entry
        return out


def _flows_on(routes: dict) -> dict[tuple, frozenset]:
    """Every directed fabric link -> the (job, flow) pairs crossing it."""
    out: dict[tuple, set] = {}
    for job, flows in routes.items():
        for flow, links in flows.items():
            for link in links:
                if link[0] in ("up", "down"):
                    out.setdefault(link, set()).add((job, flow))
    return {link: frozenset(f) for link, f in out.items()}


def _port_of(link: tuple) -> tuple[int, int]:
    """The (leaf, spine) port a directed fabric link belongs to."""
    return (link[1], link[2]) if link[0] == "up" else (link[2], link[1])


def run_links(scenario, wiring) -> RunLinks:
    """The ports the run captures and each job's home (module docstring). ValueError naming a job
    whose workers are all on one leaf: its bursts cross no fabric link to capture."""
    routes = job_routes(scenario, wiring)
    flows_on = _flows_on(routes)
    jobs_on = {link: tuple(sorted({job for job, _ in flows}, key=[j.name for j in scenario.jobs].index))
               for link, flows in flows_on.items()}
    meetings = {link: jobs for link, jobs in sorted(jobs_on.items()) if len(jobs) >= 2}
    # one meeting point per distinct set of flows; prefer naming it by an uplink
    points: dict[frozenset, list[tuple]] = {}
    for link in sorted(meetings, key=lambda lk: (lk[0] != "up", lk)):
        points.setdefault(flows_on[link], []).append(link)
    unseen = dict(points)
    chosen: list[tuple[int, int]] = []
    while unseen:
        covers = {}
        for flows, links in unseen.items():
            for port in {_port_of(lk) for lk in links}:
                covers.setdefault(port, []).append(flows)
        port = max(sorted(covers), key=lambda p: len(covers[p]))
        chosen.append(port)
        for flows in covers[port]:
            del unseen[flows]
    same_as = {}
    for links in points.values():
        seen = [lk for lk in links if _port_of(lk) in chosen]
        for link in links:
            same_as[link] = seen[0] if seen else link
    p = wiring.params

    def port(leaf_spine) -> SharedLink:
        return SharedLink(leaf_spine[0], leaf_spine[1], p.hosts_per_leaf, p.fabric_link_mbps)

    met = {pt: sum(1 for link in meetings if _port_of(link) == pt) for pt in chosen}
    users = {pt: len({j for link, jobs in meetings.items() if _port_of(link) == pt for j in jobs}) for pt in chosen}
    chosen.sort(key=lambda pt: (-users[pt], -met[pt], pt))
    links_of = job_links(routes)
    home = {}
    for i, job in enumerate(scenario.jobs):
        ups = sorted(_port_of(lk) for lk in links_of[job.name] if lk[0] == "up")
        if not ups:
            raise ValueError(f"jobs[{i}] ({job.name}).workers: all on leaf{wiring.host(job.workers[0]).leaf}, so "
                             "its bursts cross no fabric link to capture; put a worker on another leaf")
        mine = [pt for pt in chosen if pt in ups]
        if not mine:
            chosen.append(ups[0])
            mine = [ups[0]]
        home[job.name] = port(mine[0])
    counts = {job: dict(Counter(link for links in flows.values() for link in links)) for job, flows in routes.items()}
    return RunLinks(ports=tuple(port(pt) for pt in chosen), home=home, meetings=meetings,
                    names={link: wiring.link_name(link) for port in chosen for link in (
                        ("up", *port), ("down", port[1], port[0]))} | {link: wiring.link_name(link) for link in flows_on},
                    same_as=same_as, flows_on=counts,
                    capacity_mbps=link_capacity_mbps(wiring, {lk for c in counts.values() for lk in c}))
