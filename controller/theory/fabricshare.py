"""Bursts on a fabric: how fast each job's burst goes when its flows share many links.

On one link, ``n`` bursts each get ``1/n`` of it (``policies.link_shares``). On a
fabric, a burst's flows cross several directed links (host links, leaf uplinks,
spine downlinks) and jobs meet only on some of them, so each burst's speed comes
from max-min fair rates over every link (progressive filling,
:func:`max_min_rates`): all flows' rates rise together until a link fills, the
flows through it stop there and the rest go on.

A job's burst is its flows, each moving the same bytes, and it ends when the last
one does; here all of a job's flows go at one rate (its slowest flow's, which is
what ends the burst), so a job is one bundle that puts ``k`` flows on each link it
crosses (:class:`JobLinks`). Its speed relative to alone is that rate over the rate
the same filling gives it alone on the fabric. The phases of a collective (a
parameter server's push, then its pull) are taken together: they cross opposite
directions of the same links, so they never slow each other, but a job met only on
one phase's links is slowed for its whole burst (an upper bound on that meeting).

Links are any hashable values (``topo.wiring.Wiring.flow_links`` gives tuples).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Iterable, Sequence

from controller.theory.floatsum import left_to_right_sum
from controller.theory.policies import progress_weights

_FULL_MBPS = 1e-9  # a link with less spare than this is full


def _counts(links) -> dict:
    """A flow's links as ``{link: how many times it crosses it}`` (a list counts each entry)."""
    return dict(links) if isinstance(links, dict) else dict(Counter(links))


def max_min_rates(paths: dict, capacity_mbps: dict, weights: dict | None = None) -> dict:
    """Max-min fair rates (progressive filling) of flows, each given as the links it crosses.

    ``paths``: flow -> its links (a list, or ``{link: count}`` for a bundle of
    ``count`` flows at one rate each); ``capacity_mbps``: link -> rate. Every
    flow's rate rises together (with ``weights``, in proportion to its weight,
    default 1) until a link fills; its flows stop there and the rest go on.
    Returns each flow's rate (per flow of a bundle).
    """
    weights = weights or {}
    counts = {f: _counts(links) for f, links in paths.items()}
    rate = dict.fromkeys(paths, 0.0)
    active = [f for f, links in counts.items() if links]  # in the order given: float sums repeat exactly
    while active:
        load = {}
        for f in active:
            for link, k in counts[f].items():
                load[link] = load.get(link, 0) + k * weights.get(f, 1)
        spare = {link: capacity_mbps[link] - left_to_right_sum(counts[f][link] * rate[f]
                                                                  for f in paths if link in counts[f])
                 for link in load}
        step = min(spare[link] / n for link, n in load.items())
        for f in active:
            rate[f] += step * weights.get(f, 1)
        full = {link for link in load if spare[link] - step * load[link] <= _FULL_MBPS}
        active = [f for f in active if not full.intersection(counts[f])]
    return rate


class JobLinks:
    """Per job, the links its burst's flows cross (``{link: flows}``), and every link's rate."""

    def __init__(self, flows_on: dict[str, dict[Hashable, int]], capacity_mbps: dict[Hashable, float]):
        for job, links in flows_on.items():
            for link, k in links.items():
                if link not in capacity_mbps:
                    raise ValueError(f"{job}: link {link!r} has no capacity")
                if isinstance(k, bool) or not isinstance(k, int) or k < 1:
                    raise ValueError(f"{job}: flows on {link!r} must be a whole number >= 1, got {k!r}")
        for link, mbps in capacity_mbps.items():
            if not mbps > 0:
                raise ValueError(f"link {link!r}: capacity must be > 0 Mbit/s, got {mbps!r}")
        self.flows_on = {job: dict(links) for job, links in flows_on.items()}
        self.capacity_mbps = dict(capacity_mbps)
        self._fair: dict[frozenset, dict[str, float]] = {}  # fair rates by the set of jobs sending

    @classmethod
    def from_routes(cls, routes: dict[str, dict[str, Iterable[Hashable]]],
                    capacity_mbps: dict[Hashable, float]) -> JobLinks:
        """From each job's flows and the links each crosses (``scenarios.routes.job_routes``)."""
        return cls({job: dict(Counter(link for links in flows.values() for link in links))
                    for job, flows in routes.items()}, capacity_mbps)

    def shared_links(self) -> list:
        """Links two or more jobs cross, in a stable order."""
        users = Counter(link for links in self.flows_on.values() for link in links)
        return sorted((link for link, n in users.items() if n >= 2), key=repr)

    def meeting(self, jobs: Iterable[str]) -> list:
        """The links two or more of ``jobs`` cross (where they meet while they all send)."""
        users = Counter(link for job in jobs for link in self.flows_on[job])
        return [link for link, n in users.items() if n >= 2]

    def overlap_stats(self, overlap_ms: dict, span_ms: float) -> dict:
        """``overlap_by_link`` (each shared link's overlapped ms over ``span_ms``) and ``overlap_share``
        (the busiest shared link's), from the overlapped ms per link a simulation tallied."""
        by_link = {link: ms / span_ms if span_ms > 0 else 0.0 for link, ms in overlap_ms.items()}
        return {"overlap_by_link": by_link, "overlap_share": max(by_link.values(), default=0.0)}

    def rates_mbps(self, jobs: Sequence[str], sharing: str = "fair", order: Sequence[str] = (),
                   weights: dict[str, float] | None = None) -> dict[str, float]:
        """Per-flow rate of each of ``jobs`` sending together. ``fair``: max-min (with
        ``weights``: weighted); ``priority``: in ``order``, each job takes what its links have left."""
        if sharing == "priority":
            left, out = dict(self.capacity_mbps), {}
            for job in order:
                links = self.flows_on[job]
                out[job] = max(0.0, min((left[lk] / k for lk, k in links.items()), default=0.0))
                for lk, k in links.items():
                    left[lk] -= k * out[job]
            return out
        if weights is None:
            key = frozenset(jobs)
            if key not in self._fair:
                self._fair[key] = max_min_rates({j: self.flows_on[j] for j in sorted(key)}, self.capacity_mbps)
            return self._fair[key]
        return max_min_rates({j: self.flows_on[j] for j in jobs}, self.capacity_mbps, weights)

    def solo_mbps(self, job: str) -> float:
        """The per-flow rate of ``job``'s burst alone on the fabric."""
        return self.rates_mbps([job])[job]

    def shares(self, jobs: Sequence, sending: list[int], sharing: str, rank: list[int],
               sent: list[float], remaining: list[float]) -> dict[int, float]:
        """Each sending burst's speed relative to alone, as ``policies.link_shares`` gives it on one
        link (same arguments; ``jobs`` need only a ``name``): ``mltcp`` and ``leader`` weight each job by
        ``1 + gain x the share of its burst already sent`` (``policies.progress_weights``)."""
        names = {i: jobs[i].name for i in sending}
        if sharing == "priority":
            rates = self.rates_mbps([], "priority", [names[i] for i in sorted(sending, key=lambda i: rank[i])])
        elif (weights := progress_weights(sending, sharing, sent, remaining)) is not None:
            rates = self.rates_mbps(list(names.values()), weights={names[i]: w for i, w in weights.items()})
        else:
            rates = self.rates_mbps(list(names.values()))
        out = {}
        for i, name in names.items():
            solo = self.solo_mbps(name)
            out[i] = min(1.0, rates[name] / solo) if solo > 0 else 1.0
        return out
