"""Which jobs meet where: the conflict (affinity) graph of jobs over directed links.

Two jobs' bursts slow each other only on a directed link both cross; jobs that share
no link can burst at the same time at no cost. The graph has a node per job and an
edge between two jobs that share at least one link, weighted by how many they share
(:meth:`ConflictGraph.weight`); :meth:`ConflictGraph.pair_weights` is the form
``schedule.compute_schedule`` takes. Jobs in different connected components never
meet, so their shifts can be chosen independently.

Links are any hashable values (``topo.wiring.Wiring.flow_links`` gives tuples);
this module only compares them.
"""

from __future__ import annotations

import itertools
import numbers
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass


def _sorted_links(links: Iterable[Hashable]) -> list:
    """Links in a stable order: natural order when they compare, else by their repr."""
    links = list(links)
    try:
        return sorted(links)
    except TypeError:
        return sorted(links, key=repr)


@dataclass(frozen=True)
class ConflictGraph:
    """Jobs and the directed links each crosses; edges are the links two jobs share."""

    job_links: dict[str, frozenset]

    @classmethod
    def from_links(cls, job_links: dict[str, Iterable[Hashable]]) -> ConflictGraph:
        """From each job's set of links (a job that crosses none is a node with no edge)."""
        return cls({str(job): frozenset(links) for job, links in job_links.items()})

    @property
    def jobs(self) -> list[str]:
        return sorted(self.job_links)

    def shared_links(self) -> dict:
        """``{link: sorted jobs}`` for every link that two or more jobs cross."""
        users: dict = {}
        for job in self.jobs:
            for link in self.job_links[job]:
                users.setdefault(link, []).append(job)
        return {link: users[link] for link in _sorted_links(users) if len(users[link]) >= 2}

    def pairs(self) -> dict[tuple[str, str], list]:
        """``{(a, b): sorted shared links}`` (``a < b``) for every pair that shares a link."""
        out = {}
        for a, b in itertools.combinations(self.jobs, 2):
            common = self.job_links[a] & self.job_links[b]
            if common:
                out[(a, b)] = _sorted_links(common)
        return out

    def weight(self, a: str, b: str) -> int:
        """How many directed links jobs ``a`` and ``b`` share (0: they never meet)."""
        for job in (a, b):
            if job not in self.job_links:
                raise KeyError(f"no job {job!r} in the conflict graph")
        return 0 if a == b else len(self.job_links[a] & self.job_links[b])

    def pair_weights(self) -> dict[frozenset[str], int]:
        """Every pair that shares a link, with its :meth:`weight` (missing pairs weigh 0)."""
        return {frozenset(pair): len(links) for pair, links in self.pairs().items()}

    def meeting_weights(self) -> dict[frozenset[str], int]:
        """``compute_schedule``'s pair weights: 1 for every pair of jobs that shares a link, however
        many (bursts that meet slow each other at their common bottleneck once, not once per link),
        0 for the rest. Where every pair meets this is the one-link schedule, figure for figure."""
        return {frozenset(pair): 1 for pair in self.pairs()}

    def components(self) -> list[list[str]]:
        """Connected components, each sorted, in order of their first job; a job that meets
        nobody is its own component."""
        return components(self.jobs, self.pairs())


def components(jobs: Iterable, edges: Iterable[Iterable]) -> list[list]:
    """Connected components of the graph on ``jobs`` (names, or any values that sort) with
    the given edges (pairs of jobs), each sorted, in order of their smallest job."""
    parent = {job: job for job in jobs}

    def root(job):
        while parent[job] != job:
            parent[job] = parent[parent[job]]
            job = parent[job]
        return job

    for edge in edges:
        a, b = edge
        ra, rb = root(a), root(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    groups: dict = {}
    for job in sorted(parent):
        groups.setdefault(root(job), []).append(job)
    return sorted(groups.values(), key=lambda group: group[0])


def weight_matrix(names: Sequence[str], pair_weights: dict[frozenset[str], int] | None) -> list[list[int]] | None:
    """``pair_weights`` as a symmetric matrix by job index (missing pairs 0); ``None`` stays
    ``None`` (every pair weighs 1). ValueError naming the pair for an unknown job or a weight
    that is not a whole number >= 0."""
    if pair_weights is None:
        return None
    index = {name: i for i, name in enumerate(names)}
    if len(index) != len(names):
        raise ValueError("pair_weights: the jobs' names must be distinct")
    w = [[0] * len(names) for _ in names]
    for pair, weight in pair_weights.items():
        ends = sorted(pair)
        if len(ends) != 2 or any(name not in index for name in ends):
            raise ValueError(f"pair_weights: {ends!r} is not a pair of these jobs")
        if isinstance(weight, bool) or not isinstance(weight, numbers.Integral) or weight < 0:
            raise ValueError(f"pair_weights: weight of {ends!r} must be a whole number >= 0, got {weight!r}")
        a, b = index[ends[0]], index[ends[1]]
        w[a][b] = w[b][a] = int(weight)
    return w


def index_components(n: int, weights: list[list[int]] | None) -> list[list[int]]:
    """Indices ``0..n-1`` grouped by the pairs of positive weight (``None``: all one group),
    each group ascending, groups in order of their first index."""
    if weights is None:
        return [list(range(n))]
    edges = [(a, b) for a in range(n) for b in range(a + 1, n) if weights[a][b] > 0]
    return components(range(n), edges)
