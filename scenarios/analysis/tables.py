"""Measurements → numbers: iteration times, per-job bandwidth on a link, cross-checks.

Pure pandas/numpy on the tables a run produces (driver rows from
``apps/dltjob.py``, packets from ``scenarios/analysis/pcap.py``, OpenFlow port counters
from the fabric app), so every figure in a report can be recomputed from the
results folder and unit-tested without a network.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from scenarios.analysis.meetings import MEETING_PARTS, meeting_figures

BIN_MS = 10.0


def job_means(it: pd.DataFrame, warmup: int = 1) -> dict[str, dict]:
    """Per job: iterations measured, mean and median iteration time, mean comm time and the mean's
    standard error, skipping ``warmup`` iterations.

    The median is what a gated job is held to (its window period); the mean adds
    the windows it missed when a burst ran long.

    The first iteration is skipped by default: it starts at the policy's epoch
    minus a compute phase, before any contention pattern has formed. With
    ``2 × MEETING_PARTS`` iterations or more, ``mean_iteration_last_third_ms`` is
    the mean of the last third: free-running jobs may still be sorting
    themselves out early in a run, so the last third is nearest its steady state.
    """
    out = {}
    for job, rows in it.groupby("job", sort=True):
        steady = rows[rows["iteration"] >= warmup]
        if steady.empty:
            steady = rows
        steady = steady.sort_values("iteration")
        out[str(job)] = {"iterations": int(len(steady)),
                         "mean_iteration_ms": float(steady["iteration_ms"].mean()),
                         "median_iteration_ms": float(steady["iteration_ms"].median()),
                         "iteration_se_ms": batch_means_se(steady["iteration_ms"].to_numpy()),
                         "mean_comm_ms": float(steady["comm_ms"].mean())}
        if len(steady) >= 2 * MEETING_PARTS:
            last = steady["iteration_ms"].to_numpy()[-(len(steady) // MEETING_PARTS):]
            out[str(job)]["mean_iteration_last_third_ms"] = float(last.mean())
    return out


BATCHES = 5  # consecutive batches for the standard error of a run's mean


def batch_means_se(values: np.ndarray, batches: int = BATCHES) -> float | None:
    """Standard error of the mean of a series whose neighbours depend on each other, by batch means.

    Under ``gate`` one late burst costs a period and shifts which windows meet
    next, so consecutive iterations are not independent and the plain
    ``sd / sqrt(n)`` understates the noise. The series is cut into
    ``batches`` consecutive parts of (nearly) equal length; the standard error
    is the sd of their means over ``sqrt(batches)``. Measured: on an infeasible
    three-job set under ``gate``, the two halves of one 20-s run differed by up
    to 20 % (docs/accuracy.md). None below two values a batch.
    """
    values = np.asarray(values, dtype=float)
    if len(values) < 2 * batches:
        return None
    means = [part.mean() for part in np.array_split(values, batches)]
    return float(np.std(means, ddof=1) / np.sqrt(batches))


def bandwidth_bins(packets: pd.DataFrame, job_of_packet: pd.Series, t0_s: float, t1_s: float,
                   bin_ms: float = BIN_MS) -> pd.DataFrame:
    """Mbit/s per job in ``bin_ms`` bins over ``[t0_s, t1_s)`` (wire bytes; times relative to ``t0_s``).

    Every job gets every bin (zeros included) so stacked plots and means are honest.
    """
    bin_s = bin_ms / 1000.0
    n_bins = max(1, int(np.ceil((t1_s - t0_s) / bin_s - 1e-9)))  # no extra bin from rounding
    edges = t0_s + bin_s * np.arange(n_bins + 1)
    frames = []
    for job in sorted(j for j in job_of_packet.unique() if j):
        mine = packets[job_of_packet == job]
        sums, _ = np.histogram(mine["time_s"].to_numpy(), bins=edges, weights=mine["wire_bytes"].to_numpy())
        frames.append(pd.DataFrame({"t_s": np.round(edges[:-1] - t0_s, 6), "job": job,
                                    "mbps": sums * 8 / bin_s / 1e6}))
    if not frames:
        return pd.DataFrame(columns=["t_s", "job", "mbps"])
    return pd.concat(frames, ignore_index=True)


def burst_rates_mbps(packets: pd.DataFrame, job_of_packet: pd.Series, it: pd.DataFrame,
                     sender_ips: set[str], skip_fraction: float = 0.0) -> np.ndarray:
    """Realised rate of each burst on the link: wire bytes / time between data packets.

    Only packets from ``sender_ips`` (one direction of the link) count, so a
    burst's rate is comparable with the link rate. ``skip_fraction`` leaves
    out the first part of each burst (TCP's slow start on a fresh
    connection), giving the rate the fabric sustains.
    """
    data = packets[(packets["payload_bytes"] > 0) & packets["src_ip"].isin(sender_ips)]
    labels = job_of_packet.loc[data.index]
    rates = []
    for row in it.itertuples():
        t = data["time_s"].to_numpy()
        mask = (labels.to_numpy() == row.job) & (t >= row.comm_start) & (t <= row.comm_end)
        times = t[mask]
        if len(times) < 10:
            continue
        begin = times.min() + skip_fraction * (times.max() - times.min())
        kept = mask & (t >= begin)
        seconds = times.max() - begin
        if seconds > 0 and kept.sum() > 1:
            # bytes after the first kept packet, over the time they took
            wire = data["wire_bytes"].to_numpy()[kept]
            rates.append((wire.sum() - wire[0]) * 8 / (t[kept].max() - t[kept].min()) / 1e6)
    return np.asarray(rates)


def burst_spans(packets: pd.DataFrame, job_of_packet: pd.Series, it: pd.DataFrame,
                everyone: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per burst in ``it`` with data on the link: ``lead_ms`` (launch → first data packet),
    ``all_flows_ms`` (launch → the first data packet of its last flow to start),
    ``data_ms`` (first → last data packet), ``after_ms`` (last data packet →
    the iteration's end: iperf3's closing exchange and the processes' exit;
    ``comm_end`` where ``it`` has no ``end``) and ``busy_start`` (another job's
    burst in ``it`` had its data on the link, between its first and last data
    packet, when this one launched, or launched within :data:`TOGETHER_S` of
    it) and ``quiet`` (no other job's burst, from
    its launch to its iteration's end, overlapped this one's: ``everyone``'s
    bursts, by default ``it``'s).

    Both directions of the link count: a burst's data phase runs from its
    first to its last data packet, whichever flow carries them. A flow is one
    direction of one connection.
    """
    data = packets[(packets["payload_bytes"] > 0) & (job_of_packet != "")]
    labels = job_of_packet.loc[data.index].to_numpy()
    t = data["time_s"].to_numpy()
    flow, _ = pd.factorize(pd.MultiIndex.from_frame(data[["src_ip", "dst_ip", "sport", "dport"]]))
    jobs, leads, all_flows, spans, after, launch, first, last, met = [], [], [], [], [], [], [], [], []
    everyone = it if everyone is None else everyone
    other_job = everyone["job"].to_numpy()
    other_from = everyone["comm_start"].to_numpy(dtype=float)
    other_to = (everyone["end"] if "end" in everyone else everyone["comm_end"]).to_numpy(dtype=float)
    for row in it.itertuples():
        mine = (labels == row.job) & (t >= row.comm_start) & (t <= row.comm_end)
        times = t[mine]
        if len(times) > 1:
            jobs.append(str(row.job))
            leads.append((times.min() - row.comm_start) * 1000)
            all_flows.append((pd.Series(times).groupby(flow[mine]).min().max() - row.comm_start) * 1000)
            spans.append((times.max() - times.min()) * 1000)
            after.append((getattr(row, "end", row.comm_end) - times.max()) * 1000)
            launch.append(float(row.comm_start))
            first.append(float(times.min()))
            last.append(float(times.max()))
            until = getattr(row, "end", row.comm_end)
            beside = (other_job != row.job) & (other_from < until) & (other_to > row.comm_start)
            met.append(tuple(sorted(set(other_job[beside]))))
    job_of = np.asarray(jobs, dtype=object)
    first_a, last_a = np.asarray(first, dtype=float), np.asarray(last, dtype=float)
    launch_a = np.asarray(launch, dtype=float)
    busy = [bool(np.any((job_of != job) & (((first_a <= at) & (last_a > at))  # another job's data going ...
                                           | (np.abs(launch_a - at) <= TOGETHER_S))))  # ... or launching
            for job, at in zip(jobs, launch, strict=True)]
    return pd.DataFrame({"job": pd.Series(jobs, dtype=object), "lead_ms": pd.Series(leads, dtype=float),
                         "all_flows_ms": pd.Series(all_flows, dtype=float), "data_ms": pd.Series(spans, dtype=float),
                         "after_ms": pd.Series(after, dtype=float), "busy_start": pd.Series(busy, dtype=bool),
                         "quiet": pd.Series([not m for m in met], dtype=bool),
                         "met": pd.Series(met, dtype=object), "first_s": pd.Series(first_a, dtype=float),
                         "last_s": pd.Series(last_a, dtype=float)})


BUSY_START_MIN_BURSTS = 3  # fewer such bursts than this give no figure
# What a burst that starts while another job's is on the link costs beyond its
# solo length when the run has no figure of its own (a single policy, or fewer than
# three such bursts elsewhere): on one machine its first data packet came 2-6 ms
# later than alone (medians per job and policy, 5.1 over all; measured 2026-12-01).
BUSY_START_MS = 5.0
# Bursts of two jobs launched this close together start as late as one launched while another's data
# goes: their processes start side by side on the machine's two cores. Over 37 kept runs (2026-12-03),
# launch to first data beyond the solo lead, medians: 3.6-4.2 ms launched together, 4.2-4.9 beside
# another's data, -0.3-0.5 alone (docs/accuracy.md).
TOGETHER_S = 0.010


def apart_slowdown(spans: pd.DataFrame, solo_data_ms: dict[str, float], meets: set[frozenset],
                   min_bursts: int = BUSY_START_MIN_BURSTS) -> dict[str, float | None]:
    """Per job in ``solo_data_ms``: how much longer its data phase took while another job's data was
    going but no job it meets (``meets``: the pairs that share a link) had data going, over alone
    (median of such bursts' ``data_ms`` / the solo data phase). Such bursts share no link, so only
    the machine (the switches' shared cores) can slow them. None for a job with fewer than
    ``min_bursts`` such bursts (or none at all: every job meets every other on one link)."""
    out: dict[str, float | None] = {}
    if spans.empty or "first_s" not in spans:
        return dict.fromkeys(solo_data_ms)
    job = spans["job"].to_numpy()
    first, last = spans["first_s"].to_numpy(dtype=float), spans["last_s"].to_numpy(dtype=float)
    data = spans["data_ms"].to_numpy(dtype=float)
    for name, solo_ms in solo_data_ms.items():
        apart = []
        for i in np.flatnonzero(job == name):
            during = (job != name) & (first < last[i]) & (last > first[i])
            if during.any() and not any(frozenset((name, other)) in meets for other in set(job[during])):
                apart.append(data[i])
        out[name] = float(np.median(apart) / solo_ms) if len(apart) >= min_bursts and solo_ms > 0 else None
    return out


def busy_start_extra_ms(spans: pd.DataFrame, solo_lead_ms: dict[str, float],
                        min_bursts: int = BUSY_START_MIN_BURSTS) -> dict[str, float | None]:
    """Per job in ``solo_lead_ms``: how much later than alone its data started when it launched while
    another job's data was on the link (median over such bursts of ``lead_ms`` − the solo lead, ms).

    ``spans``: :func:`burst_spans` rows, of one or several policies' runs.
    None for a job with fewer than ``min_bursts`` such bursts. It was 5-15 ms
    per job and run on one 2-vCPU machine and 2-6 ms on another
    (docs/accuracy.md): it is the emulator's, so a run measures it rather than
    assume one figure.
    """
    out: dict[str, float | None] = {}
    for job, solo_ms in solo_lead_ms.items():
        leads = _busy_start_leads_ms(spans, job)
        out[job] = float(np.median(leads) - solo_ms) if len(leads) >= min_bursts else None
    return out


def busy_start_samples_ms(spans: pd.DataFrame, solo_lead_ms: dict[str, float],
                          min_bursts: int = BUSY_START_MIN_BURSTS) -> dict[str, tuple[float, ...]]:
    """Per job, what each of its busy starts cost (ms, at least 0): the bursts
    :func:`busy_start_extra_ms` takes the median of, clipped like the link times.

    The fluid model draws one for each busy start. With one figure for all, a
    gated job whose bursts end near their deadline made every such window or
    missed every one: in one h7 run `gate` c was predicted 14 % too slow with
    the median, 2 % with the draws (docs/accuracy.md). Empty
    for a job with fewer than ``min_bursts`` busy starts.
    """
    out: dict[str, tuple[float, ...]] = {}
    for job, solo_ms in solo_lead_ms.items():
        leads = _busy_start_leads_ms(spans, job)
        out[job] = tuple(max(0.0, x - solo_ms) for x in _clip_robust(leads)) if len(leads) >= min_bursts else ()
    return out


def _busy_start_leads_ms(spans: pd.DataFrame, job: str) -> pd.Series:
    """``lead_ms`` of ``job``'s bursts that launched while another job's data was on the link."""
    if spans.empty:
        return pd.Series(dtype=float)
    return spans["lead_ms"][(spans["job"] == job) & spans["busy_start"]]


def burst_medians_ms(spans: pd.DataFrame) -> dict[str, dict[str, float]]:
    """Per job, the medians of :func:`burst_spans`: ``burst_lead_ms``, ``burst_all_flows_ms``, ``burst_data_ms``.

    Set beside the solo medians, they show where a run's bursts differ from the
    solo bursts the model was fed: a later start, or flows of one burst
    starting apart (each burst launches new iperf3 processes and connections,
    slower while other jobs load the CPU), or a longer data phase. Medians,
    so one stalled burst does not stand for the rest.
    """
    return {str(job): {"burst_lead_ms": float(rows["lead_ms"].median()),
                       "burst_all_flows_ms": float(rows["all_flows_ms"].median()),
                       "burst_data_ms": float(rows["data_ms"].median())}
            for job, rows in spans.groupby("job", sort=True)}


def burst_spans_ms(spans: pd.DataFrame, it: pd.DataFrame) -> tuple[float, float]:
    """Mean (lead, data phase) of :func:`burst_spans`' bursts, ms.

    Without data on the link: (0, the mean comm phase of ``it``).
    """
    if spans.empty:
        return 0.0, float(it["comm_ms"].mean())
    return float(spans["lead_ms"].mean()), float(spans["data_ms"].mean())


def link_time_samples_ms(spans: pd.DataFrame) -> list[float]:
    """How long each measured burst kept its job on the link, for the fluid model to draw from.

    A burst's data phase plus how much later than usual (the median lead) its
    data started: a late start costs a gated burst window time just as a
    longer data phase does. Clipped to the median ± 3 robust standard
    deviations (1.4826 × the median absolute deviation), so that one slow
    process start among a handful of solo bursts does not make the model
    expect it in every fifth iteration.
    """
    if spans.empty:
        return []
    late_ms = spans["lead_ms"] - spans["lead_ms"].median()
    return _clip_robust((spans["data_ms"] + late_ms).clip(lower=0.0))


# A solo burst this much longer than its run's median waited for a TCP retransmission timeout
# (200 ms at least on Linux): a parameter server's incast lost packets so (docs/accuracy.md).
STALL_MS = 150.0


def stalled_bursts(comm_ms: pd.Series) -> int:
    """How many of a run's bursts (``comm_ms``, launch to end) took :data:`STALL_MS` or more longer
    than their median. The model's draws are clipped to the median ± 3 robust deviations
    (:func:`link_time_samples_ms`), which brings such bursts back near the usual length."""
    if comm_ms.empty:
        return 0
    return int((comm_ms >= comm_ms.median() + STALL_MS).sum())


def late_time_samples_ms(spans: pd.DataFrame) -> list[float]:
    """How much later than usual (the median lead) each measured burst's data started, ms: the part
    of its link time (:func:`link_time_samples_ms`, same order) that a job keeping its clock takes
    off its next computation (``FluidJob.keeps_clock``). Clipped like the link times."""
    if spans.empty:
        return []
    return _clip_robust(spans["lead_ms"] - spans["lead_ms"].median())


def after_time_samples_ms(spans: pd.DataFrame) -> list[float]:
    """How much longer than usual each measured burst took after its last data packet, ms.

    The burst's closing exchange and process exits (``after_ms``) minus their
    median: the fluid model adds it to the computation that follows the burst
    it draws (same order as :func:`link_time_samples_ms`, drawn together).
    Alone, these varied by +-5 ms around a median of 5-9 ms (docs/accuracy.md);
    with a fixed value, a gated job in the model made windows
    that on the wire it missed now and then. Clipped like the link times.
    """
    if spans.empty:
        return []
    return _clip_robust(spans["after_ms"] - spans["after_ms"].median())


def busy_after_samples_ms(spans: pd.DataFrame, job: str, usual_after_ms: float, meets: set[frozenset] | None = None,
                          min_bursts: int = BUSY_START_MIN_BURSTS) -> dict[str, tuple[float, ...]]:
    """How much longer than ``usual_after_ms`` ``job``'s bursts in ``spans`` that met other jobs'
    (``met``) took after their last data packet, ms (at least 0, clipped like the link times):
    ``"shared"``, those that met a job they share a link with (a pair in ``meets``; None: every
    pair shares one), and ``"apart"``, those that met only jobs on other links; a kind with fewer
    than ``min_bursts`` bursts is left out.

    A burst's closing exchange waits behind the other job's data in a shared
    link's queue; beside a job on other links only its processes' exits slow
    down, while that job's burst loads the machine's cores. In one
    param-server run (25 Mbit/s, 2026-12-03) a ring job's after phase took
    9-13 ms alone and 19-28 ms beside another job's burst on a link it never
    shares, enough for a gated job to miss its windows now and then.
    """
    if spans.empty or "met" not in spans:
        return {}
    mine = spans[(spans["job"] == job) & ~spans["quiet"]]
    shared = [meets is None or any(frozenset((job, other)) in meets for other in met) for met in mine["met"]]
    out = {}
    for kind, rows in (("shared", mine[shared]), ("apart", mine[[not x for x in shared]])):
        if len(rows) >= min_bursts:
            out[kind] = tuple(max(0.0, x - usual_after_ms) for x in _clip_robust(rows["after_ms"]))
    return out


def launch_to_end_ms(spans: pd.DataFrame) -> pd.Series:
    """Each burst of :func:`burst_spans` from its launch to its iteration's end, ms."""
    return spans["lead_ms"] + spans["data_ms"] + spans["after_ms"]


def clock_moving_ms(spans: pd.DataFrame, keeps_clock: bool) -> pd.Series:
    """The part of each burst of :func:`burst_spans` that moves its job's next iteration, ms: the data
    phase for a job that keeps its clock (``apps.dltjob.JobDriver.compute_s``), else launch to end."""
    return spans["data_ms"] if keeps_clock else launch_to_end_ms(spans)


def quiet_bursts(spans: pd.DataFrame, job: str) -> pd.DataFrame:
    """``job``'s bursts in ``spans`` that met no other job's (``quiet``; none without that column)."""
    if "quiet" not in spans or spans.empty:
        return spans.iloc[:0]
    return spans[spans["quiet"] & (spans["job"] == job)]


def policy_figures(it: pd.DataFrame, spans: pd.DataFrame, meets: set[frozenset] | None = None) -> dict[str, dict]:
    """Per job, what a policy's run measured: :func:`job_means` of its iterations ``it``, with the
    medians (:func:`burst_medians_ms`) and the meeting figures (``meetings.meeting_figures``: the
    thirds' shares and ``bursts_after_parting``) of its bursts ``spans``; ``meets``: the pairs of jobs
    that share a link (None: every pair)."""
    out = job_means(it)
    for extra in (burst_medians_ms(spans), meeting_figures(spans, meets)):
        for job, figures in extra.items():
            if job in out:
                out[job].update(figures)
    return out


DRIFT_MIN_BURSTS = 5  # fewer quiet bursts than this give no drift figure


def speed_drift_ms(solo_spans: dict[str, pd.DataFrame], spans: pd.DataFrame, keeps_clock: frozenset = frozenset(),
                   min_bursts: int = DRIFT_MIN_BURSTS) -> dict[str, float | None]:
    """Per job in ``solo_spans``: how much longer (ms; less than 0: shorter) its quiet bursts in ``spans``
    took than its solo bursts (:func:`clock_moving_ms`; the jobs in ``keeps_clock`` kept their clocks),
    medians; None with fewer than ``min_bursts``.

    That is how far the job's iteration moved from the one it was calibrated
    to while it ran alone on the link: the machine's own speed, which drifted
    by up to 13 ms per burst within minutes in one run (docs/accuracy.md).
    """
    out: dict[str, float | None] = {}
    for job, mine in solo_spans.items():
        theirs = quiet_bursts(spans, job)
        enough = len(theirs) >= min_bursts and not mine.empty
        kept = job in keeps_clock
        out[job] = (float(clock_moving_ms(theirs, kept).median() - clock_moving_ms(mine, kept).median())
                    if enough else None)
    return out


def _clip_robust(times: pd.Series) -> list[float]:
    """``times`` clipped to their median +- 3 robust standard deviations (1.4826 × the MAD)."""
    median = times.median()
    spread = 3 * 1.4826 * (times - median).abs().median()
    return [float(x) for x in times.clip(median - spread, median + spread)]


def port_tx_bytes(port_stats: pd.DataFrame, dpid, port: int, t0_s: float,
                  t1_s: float) -> tuple[float, float, float]:
    """Bytes a switch port transmitted between the counter samples nearest ``t0_s`` and ``t1_s``.

    Returns ``(bytes, sample0_s, sample1_s)`` so a caller can compare with the
    capture over exactly the interval the counters cover.
    """
    time_col = "time_s" if "time_s" in port_stats.columns else "time"
    rows = port_stats[(port_stats["dpid"].astype(str) == str(dpid)) & (port_stats["port"].astype(int) == port)]
    rows = rows.sort_values(time_col)
    if len(rows) < 2:
        return 0.0, t0_s, t0_s
    times = rows[time_col].to_numpy(dtype=float)
    i0 = int(np.argmin(np.abs(times - t0_s)))
    i1 = int(np.argmin(np.abs(times - t1_s)))
    tx = rows["tx_bytes"].to_numpy(dtype=float)
    return float(tx[i1] - tx[i0]), float(times[i0]), float(times[i1])


def unique_payload_bytes(packets: pd.DataFrame) -> float:
    """Payload bytes with TCP retransmissions counted once (same flow and sequence number).

    A segment captured here and lost further on is sent again, so the wire
    carries it twice while iperf3 counts it once.
    """
    data = packets[packets["payload_bytes"] > 0]
    unique = data.drop_duplicates(subset=["src_ip", "dst_ip", "sport", "dport", "seq"])
    return float(unique["payload_bytes"].sum())


def percent_error(measured: float, reference: float) -> float | None:
    """(measured − reference) / reference × 100, or None without a reference."""
    if not reference:
        return None
    return (measured - reference) / reference * 100.0
