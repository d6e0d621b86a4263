"""Where each job's flows go: the directed links every flow of a scenario crosses.

Jobs conflict only where they share a directed link (``controller/theory/conflicts.py``),
so the schedule needs each job's route through the fabric. A flow goes through its
job's ``pin_spine`` when the scenario sets one, else through the spine
:func:`ecmp_spine` hashes its 4-tuple to: the hash the controller installs as the
flow's pin, so the route predicted here is the one the run takes.

Flows are numbered as the job's driver numbers them (``apps.jobmodel.collective``):
the ``i``-th job's server ports count up from ``topo.tcp_ports.job_first_port(i)``,
phase by phase, and the data goes ``src:port -> dst:receiver_port(port)``.
"""

from __future__ import annotations

import ipaddress
import zlib

from apps.jobmodel import JobSpec, Worker, collective
from controller.theory.conflicts import ConflictGraph
from controller.theory.fabricshare import JobLinks
from topo.tcp_ports import job_first_port


def ecmp_spine(src_ip: str, dst_ip: str, src_port: int, dst_port: int, spines: int) -> int:
    """The spine (1-based) a flow's 4-tuple hashes to: CRC-32 of the packed addresses then the
    two ports (big-endian, 2 bytes each), modulo ``spines``. Stable across runs and machines."""
    if spines < 1:
        raise ValueError(f"spines: need at least 1, got {spines}")
    key = (ipaddress.IPv4Address(src_ip).packed + ipaddress.IPv4Address(dst_ip).packed
           + src_port.to_bytes(2, "big") + dst_port.to_bytes(2, "big"))
    return zlib.crc32(key) % spines + 1


def flow_label(src: str, dst: str, port: int) -> str:
    """A flow's name in :func:`job_routes`: sending host, receiving host, server port."""
    return f"{src}->{dst}:{port}"


def _job_spec(job, index: int, wiring) -> JobSpec:
    """The driver's view of a scenario job, enough to number its flows as the driver does."""
    workers = tuple(Worker(name, wiring.host(name).ip) for name in job.workers)
    return JobSpec(job.name, float(job.period_ms), float(job.comm_ms), workers, job.pattern,
                   base_port=job_first_port(index))


def phase_routes(scenario, wiring) -> dict[str, list[dict[str, list[tuple]]]]:
    """Per job, per phase of its collective (flows in a phase run together), each flow's
    (:func:`flow_label`) directed links (as :meth:`topo.wiring.Wiring.flow_links` names them)."""
    spines = wiring.params.spines
    routes: dict[str, list[dict[str, list[tuple]]]] = {}
    for index, job in enumerate(scenario.jobs):
        routes[job.name] = [
            {flow_label(t.src.name, t.dst.name, t.port): wiring.flow_links(
                t.src.name, t.dst.name, job.pin_spine or ecmp_spine(t.src.ip, t.dst.ip, t.port, t.cport, spines))
             for t in phase}
            for phase in collective(_job_spec(job, index, wiring))]
    return routes


def job_routes(scenario, wiring) -> dict[str, dict[str, list[tuple]]]:
    """Per job, per flow (:func:`flow_label`), the directed links it crosses, over every phase
    of its collective (links as :meth:`topo.wiring.Wiring.flow_links` names them)."""
    return {job: {flow: links for phase in phases for flow, links in phase.items()}
            for job, phases in phase_routes(scenario, wiring).items()}


def job_links(routes: dict[str, dict[str, list[tuple]]]) -> dict[str, set[tuple]]:
    """Per job, every directed link any of its flows crosses: fabric (up/down) and host links."""
    return {job: {link for links in flows.values() for link in links} for job, flows in routes.items()}


def conflicts_of(scenario, wiring) -> ConflictGraph:
    """Which jobs meet on which directed links, with the scenario's routes."""
    return ConflictGraph.from_links(job_links(job_routes(scenario, wiring)))


def link_capacity_mbps(wiring, links) -> dict[tuple, float]:
    """Each of ``links`` at its configured rate: host links at ``host_link_mbps``, leaf-spine links at
    ``fabric_link_mbps``."""
    p = wiring.params
    return {link: p.host_link_mbps if link[0].startswith("host") else p.fabric_link_mbps for link in links}


def fabric_links(routes: dict[str, dict[str, list[tuple]]], wiring) -> JobLinks:
    """The fluid model's view of the routes: per job, how many of its flows cross each link, and
    each link's rate."""
    every = {link for flows in routes.values() for links in flows.values() for link in links}
    return JobLinks.from_routes(routes, link_capacity_mbps(wiring, every))


def meeting_weights(scenario, wiring) -> dict[frozenset[str], int]:
    """The schedule's pair weights for the scenario's routes: 1 for each pair of jobs that shares a
    directed link, 0 for the rest (``ConflictGraph.meeting_weights``, as ``plan`` and the controller)."""
    return conflicts_of(scenario, wiring).meeting_weights()


def link_names(scenario, wiring) -> dict[str, list[str]]:
    """Per job, the names of the directed links its flows cross (what the controller is told)."""
    links = job_links(job_routes(scenario, wiring))
    return {job: sorted(wiring.link_name(link) for link in job_set) for job, job_set in links.items()}


def flow_spines(scenario, wiring) -> dict[int, int]:
    """Each flow's spine by its server port (unique over the run's jobs): the job's ``pin_spine``, else
    the spine :func:`ecmp_spine` hashes the flow's 4-tuple to; the run pins every flow there. A flow
    within one leaf crosses no spine and is left out."""
    spines = wiring.params.spines
    out = {}
    for index, job in enumerate(scenario.jobs):
        for phase in collective(_job_spec(job, index, wiring)):
            for t in phase:
                if wiring.host(t.src.name).leaf != wiring.host(t.dst.name).leaf:
                    out[t.port] = job.pin_spine or ecmp_spine(t.src.ip, t.dst.ip, t.port, t.cport, spines)
    return out
