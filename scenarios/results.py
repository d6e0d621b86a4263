"""The results folder of one run: its schema, how it is written, how it is read.

A run is data first, pictures second: the runner writes tables and
records into a folder, and ``shiftbed report`` redraws every plot and the
report from that folder alone. Everything here is about the folder; nothing
here measures or draws.

Layout (all times in seconds; every CSV loads with one ``pd.read_csv``)::

    results/<scenario>/<UTC timestamp>/      e.g. results/two-jobs/20261130T022550Z/
        scenario.yaml       the scenario as run
        environment.json    shiftbed commit, OVS/Ryu/iperf3/kernel versions, datapath,
                            mtu, machine cores, link_mbps (a flow's configured rate: the
                            slower of host and fabric links), shared_link_mbps (the
                            shared leaf uplink's, the fabric links' rate)
        schedule.json       the schedule and each pair's gcd test: a
                            scenarios.schedule_record.ScheduleRecord
        iterations.csv      policy, job, worker, iteration, start, comm_start, comm_end,
                            end, bytes                  (absolute unix times)
        link_bandwidth.csv  policy, link, t_s, job, mbps
                            (10 ms bins; t_s = bin start, seconds since the policy's epoch)
        windows.csv         policy, job, open_s, close_s
                            (scheduled windows, seconds since the policy's epoch)
        port_stats.csv      time, dpid, port, rx_bytes, tx_bytes, rx_packets, tx_packets,
                            rx_dropped, tx_dropped     (absolute unix time)
        summary.json        the verdicts and the numbers behind them: a
                            scenarios.summary_record.SummaryRecord, in the scenario's units
                            with its time_scale K (1 unless the run was slowed:
                            scenarios/timescale.py; the tables above and raw/ hold the
                            wire's times and rates, K times longer and slower, and
                            load_results gives them back in the scenario's units)
        plots/*.png, report.md, report.html      drawn by ``shiftbed report``

Tables may carry extra columns after the schema's. ``throughput_change_vs_none_pct``
is :func:`scenarios.throughput.throughput_change_pct`; a policy's ``epoch_s`` is the unix time that its
``t_s``/``open_s`` count from. Full description: docs/results.md.

Writing is atomic: :class:`ResultsWriter` fills a hidden sibling
``.<timestamp>.partial`` and renames it to ``<timestamp>`` in :meth:`finish`,
also when the run is interrupted (then ``complete`` is false and
``incomplete_reason`` says why), so a folder without a dot is never half
written. :func:`load_results` reads a folder back into typed objects.
"""

from __future__ import annotations

import csv
import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from scenarios.errors import InputError
from scenarios.files import atomic_write_bytes, give_to_sudo_user, json_text
from scenarios.schedule_record import ScheduleRecord
from scenarios.summary_record import FORMAT, FORMATS_READ, SummaryRecord

BANDWIDTH_BIN_S = 0.010

SCENARIO_FILE = "scenario.yaml"
ENVIRONMENT_FILE = "environment.json"
SCHEDULE_FILE = "schedule.json"
SUMMARY_FILE = "summary.json"
REPORT_FILE = "report.md"
REPORT_HTML_FILE = "report.html"  # the same report as one page for a browser, the timeline zoomable
PLOTS_DIR = "plots"
PREDICTION_LOG = "prediction.log"  # only where the model could not predict a policy: its traceback
# only for a scenario with pattern jobs: the plan's exact schedule (planning.pattern_plan), each phase of
# each iteration (analysis/phases.py) and each phase's figures per policy and job
PATTERN_PLAN = "pattern_plan.json"
PHASES_TABLE = "phases.csv"
PHASES_SUMMARY = "phases.json"
# Held in the partial folder while a run measures, given back before the summary and the report are
# written: they need ~3 MB (four PNGs, summary.json, report.md, report.html), so a full disk cannot cost them.
RESERVE_FILE = ".reserve"
RESERVE_BYTES = 4 * 2**20

TABLES: dict[str, tuple[str, ...]] = {
    "iterations.csv": (
        "policy", "job", "worker", "iteration", "start", "comm_start", "comm_end", "end", "bytes",
    ),
    "link_bandwidth.csv": ("policy", "link", "t_s", "job", "mbps"),
    "windows.csv": ("policy", "job", "open_s", "close_s"),
    "port_stats.csv": (
        "time", "dpid", "port", "rx_bytes", "tx_bytes", "rx_packets", "tx_packets",
        "rx_dropped", "tx_dropped",
    ),
}
# Names are labels, never numbers, even when a job is called "1"; every other column is a number.
_LABEL_COLUMNS = {"policy": str, "job": str, "worker": str, "link": str, "dpid": str, "port": str}

REQUIRED_FILES = (SCENARIO_FILE, ENVIRONMENT_FILE, SCHEDULE_FILE, SUMMARY_FILE, *TABLES)


# --------------------------------------------------------------------------- writing


def utc_timestamp(now: datetime | None = None) -> str:
    """Folder name for a run started at ``now``: sortable, no colons (``20261130T022550Z``)."""
    return (now or datetime.now(UTC)).astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")


def _safe_name(name: str) -> str:
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._")
    return cleaned or "scenario"


def _table_columns(name: str, given: Iterable[str]) -> list[str]:
    """Schema columns first, then extras; a missing schema column is the writer's bug."""
    given = list(given)
    schema = TABLES.get(name)
    if schema is None:
        return given
    missing = [c for c in schema if c not in given]
    if missing:
        raise ValueError(f"{name}: missing columns {missing} (schema: {list(schema)})")
    return list(schema) + [c for c in given if c not in schema]


class ResultsWriter:
    """Fills ``<root>/<scenario>/.<timestamp>.partial`` and renames it when the run ends.

    Use it as a context manager: leaving the block by an exception (including
    Ctrl-C) still renames the folder, with ``complete: false`` and the reason::

        with ResultsWriter("results", "two-jobs") as out:
            out.write_text("scenario.yaml", text)
            out.append_rows("iterations.csv", rows)   # as the run goes
            ...
            final_dir = out.finish(complete=True)

    SIGTERM does not raise in Python by default; the runner should turn it into
    an exception (e.g. ``SystemExit``) so that this rename happens.
    """

    def __init__(self, root: str | Path, scenario_name: str, *, timestamp: str | None = None):
        """Creates the partial folder and its disk reserve (:data:`RESERVE_BYTES`, released by
        :meth:`release_reserve` or :meth:`finish`), so that a run on a disk that fills up still has
        room for its summary and report."""
        self.scenario_name = scenario_name
        parent = Path(root).resolve() / _safe_name(scenario_name)
        self._created = [d for d in (*reversed(parent.parents), parent) if not d.exists()]
        parent.mkdir(parents=True, exist_ok=True)
        stamp = timestamp or utc_timestamp()
        for n in range(1000):  # two runs in the same second get -1, -2, ...
            name = stamp if n == 0 else f"{stamp}-{n}"
            final, partial = parent / name, parent / f".{name}.partial"
            if final.exists():
                continue
            try:
                partial.mkdir()
            except FileExistsError:
                continue
            break
        else:
            raise RuntimeError(f"{parent}: no free folder name for {stamp}")
        self.final_dir: Path = final
        self.partial_dir: Path = partial
        (partial / PLOTS_DIR).mkdir()
        self._reserve = partial / RESERVE_FILE
        _reserve_space(self._reserve, RESERVE_BYTES)
        self._appending: dict[str, tuple[Any, csv.DictWriter]] = {}
        self._finished: Path | None = None

    @property
    def path(self) -> Path:
        """Where files are right now: the partial folder until :meth:`finish`, then the final one."""
        return self._finished or self.partial_dir

    def _target(self, name: str) -> Path:
        if self._finished is not None:
            raise RuntimeError(f"{self.final_dir}: already finished, cannot write {name}")
        return self.partial_dir / name

    def write_text(self, name: str, text: str) -> Path:
        """Write a text file (e.g. ``scenario.yaml`` as run)."""
        path = self._target(name)
        atomic_write_bytes(path, text.encode())
        return path

    def write_json(self, name: str, obj: Any) -> Path:
        """Write a JSON record (NaN becomes null)."""
        return self.write_text(name, json_text(obj))

    def write_table(self, name: str, frame: pd.DataFrame) -> Path:
        """Write a whole table as CSV, schema columns first (see the module docstring)."""
        if name in self._appending:
            raise ValueError(f"{name}: rows are being appended; write_table would lose them")
        path = self._target(name)
        columns = _table_columns(name, frame.columns)
        atomic_write_bytes(path, frame[columns].to_csv(index=False).encode())
        return path

    def append_rows(self, name: str, rows: Iterable[Mapping[str, Any]]) -> Path:
        """Append rows to a CSV table and flush, so an interrupted run keeps what it measured."""
        path = self._target(name)
        rows = list(rows)
        if name not in self._appending:
            if not rows:
                return path
            handle = open(path, "a", newline="")  # kept open until finish()
            writer = csv.DictWriter(handle, fieldnames=_table_columns(name, rows[0].keys()))
            if handle.tell() == 0:
                writer.writeheader()
            self._appending[name] = (handle, writer)
        handle, writer = self._appending[name]
        for row in rows:
            missing = set(writer.fieldnames) - set(row)
            if missing:
                raise ValueError(f"{name}: row lacks {sorted(missing)}: {dict(row)}")
            writer.writerow(row)
        handle.flush()
        return path

    def _close_tables(self) -> None:
        for handle, _writer in self._appending.values():
            handle.close()
        self._appending.clear()

    def finish(self, complete: bool = True, reason: str | None = None) -> Path:
        """Stamp ``summary.json`` with completeness and rename to the final folder.

        A run that claims completeness but lacks a required file is recorded
        as incomplete, naming the files. Calling it again returns the same path.
        """
        if self._finished is not None:
            return self._finished
        self.release_reserve()
        self._close_tables()
        missing = [n for n in REQUIRED_FILES if n != SUMMARY_FILE and not (self.partial_dir / n).exists()]
        if complete and missing:
            complete, reason = False, f"files not written: {', '.join(missing)}"
        summary = _stamped(self.partial_dir / SUMMARY_FILE, self.scenario_name, self.final_dir, complete, reason)
        self.write_json(SUMMARY_FILE, summary.to_dict())
        os.rename(self.partial_dir, self.final_dir)
        self._finished = self.final_dir
        self._give_to_sudo_user()
        return self.final_dir

    def release_reserve(self) -> None:
        """Give the reserved space back, for the summary and the report (idempotent)."""
        self._reserve.unlink(missing_ok=True)

    def _give_to_sudo_user(self) -> None:
        """Under ``sudo``, hand what we created to the invoking user, so they can redraw it."""
        give_to_sudo_user([*self._created, self.final_dir, *self.final_dir.rglob("*")])

    def __enter__(self) -> ResultsWriter:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if self._finished is not None:
            return
        if exc_type is None:
            self.finish(complete=True)
        elif issubclass(exc_type, KeyboardInterrupt):
            self.finish(complete=False, reason="interrupted (Ctrl-C)")
        else:
            self.finish(complete=False, reason=f"{exc_type.__name__}: {exc}".strip())


def _reserve_space(path: Path, size_bytes: int) -> None:
    """A file of ``size_bytes`` whose blocks are really allocated (a sparse file would reserve nothing)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.posix_fallocate(fd, 0, size_bytes)
    finally:
        os.close(fd)


def finish_abandoned(partial_dir: str | Path, reason: str) -> Path | None:
    """Rename the ``.<stamp>.partial`` folder of a run that died unfinished (SIGKILL), marked incomplete.

    What ``shiftbed clean`` does for a crashed run's results: the measurements
    written so far stay, ``summary.json`` says ``complete: false`` and why.
    Returns the final folder, or None when there is nothing to finish.
    """
    partial = Path(partial_dir)
    name = partial.name
    if not (partial.is_dir() and name.startswith(".") and name.endswith(".partial")):
        return None
    final = partial.with_name(name[1:-len(".partial")])
    if final.exists():
        return None
    (partial / RESERVE_FILE).unlink(missing_ok=True)
    summary = _stamped(partial / SUMMARY_FILE, partial.parent.name, final, False, reason)
    atomic_write_bytes(partial / SUMMARY_FILE, json_text(summary.to_dict()).encode())
    os.rename(partial, final)
    return final


def _stamped(summary_path: Path, scenario_name: str, final_dir: Path, complete: bool,
             reason: str | None) -> SummaryRecord:
    """The summary the run wrote (an empty one if it wrote none that reads), stamped with its
    format, its final folder and whether it completed."""
    try:
        summary = SummaryRecord.from_dict(json.loads(summary_path.read_text()))
    except (OSError, ValueError):
        summary = SummaryRecord(scenario=scenario_name)
    return replace(summary, format=FORMAT, scenario=summary.scenario or scenario_name, results_dir=str(final_dir),
                   complete=bool(complete), incomplete_reason=None if complete else (reason or "interrupted"))


# --------------------------------------------------------------------------- reading


@dataclass(frozen=True, eq=False)
class Results:
    """Everything in one results folder. Tables missing from an incomplete run are empty."""

    path: Path
    summary: SummaryRecord
    scenario_yaml: str
    scenario: dict[str, Any]
    environment: dict[str, Any]
    schedule: ScheduleRecord | None
    iterations: pd.DataFrame
    link_bandwidth: pd.DataFrame
    windows: pd.DataFrame
    port_stats: pd.DataFrame

    @property
    def complete(self) -> bool:
        return self.summary.complete


def _bad(path: Path, what: str) -> InputError:
    return InputError(f"{path}: {what}")


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise _bad(path, f"unreadable JSON ({exc})") from None


def _parse_summary(path: Path, data: Any) -> SummaryRecord:
    if not isinstance(data, dict) or not isinstance(data.get("complete"), bool):
        raise _bad(path, "not a shiftbed summary (no boolean 'complete'); "
                         "expected a folder written by `shiftbed run`")
    if data.get("format", FORMATS_READ[0]) not in FORMATS_READ:
        raise _bad(path, f"summary format {data['format']!r} is newer than this shiftbed reads "
                         f"({', '.join(FORMATS_READ)}); update shiftbed")
    try:
        return SummaryRecord.from_dict(data)
    except ValueError as exc:
        raise _bad(path, str(exc)) from None


def _in_scenario_units(tables: dict[str, pd.DataFrame], summary: SummaryRecord):
    """The iterations, bandwidth and windows tables of a run at ``summary.time_scale``, in the scenario's units."""
    from scenarios.timescale import tables_in_scenario_units

    epochs_s = {policy: entry.epoch_s for policy, entry in summary.policies.items()}
    return tables_in_scenario_units(tables["iterations.csv"], tables["link_bandwidth.csv"], tables["windows.csv"],
                                    epochs_s, summary.time_scale)


def _parse_schedule(path: Path, data: Any) -> ScheduleRecord:
    try:
        return ScheduleRecord.from_dict(data)
    except (KeyError, TypeError, ValueError) as exc:
        raise _bad(path, f"not a shiftbed schedule record (bad or missing {exc})") from None


def _read_table(path: Path, name: str) -> pd.DataFrame:
    schema = TABLES[name]
    dtypes = {c: t for c, t in _LABEL_COLUMNS.items() if c in schema}
    empty = pd.DataFrame({c: pd.Series(dtype=dtypes.get(c, "float64")) for c in schema})
    if not path.exists():
        return empty
    try:
        frame = pd.read_csv(path, dtype=dtypes)
    except pd.errors.EmptyDataError:
        return empty
    except (OSError, UnicodeDecodeError, pd.errors.ParserError) as exc:
        raise _bad(path, f"unreadable CSV ({exc})") from None
    missing = [c for c in schema if c not in frame.columns]
    if missing:
        raise _bad(path, f"missing columns {missing} (schema: {list(schema)})")
    if frame.empty:  # a header and no rows (e.g. windows.csv of a run without shift/gate)
        return pd.concat([empty, frame.drop(columns=list(schema))], axis=1)
    for column in schema:
        if column not in dtypes and not pd.api.types.is_numeric_dtype(frame[column]):
            raise _bad(path, f"column {column!r} must hold numbers")
    return frame


def load_results(path: str | Path) -> Results:
    """Read a results folder; :class:`InputError` (one line) if it is not one.

    A complete run must have every file; an incomplete one may lack some
    (empty tables, ``schedule=None``). The tables come back in the scenario's
    units (stored as measured on the wire of a run at ``time_scale`` K,
    ``scenarios/timescale.py``).
    """
    path = Path(path)
    if not path.is_dir():
        raise _bad(path, "no such results folder")
    summary_path = path / SUMMARY_FILE
    if not summary_path.is_file():
        raise _bad(path, f"not a shiftbed results folder (no {SUMMARY_FILE}); "
                         "give a folder written by `shiftbed run`, e.g. results/<scenario>/<timestamp>")
    summary = _parse_summary(summary_path, _read_json(summary_path))
    if summary.complete:
        missing = [n for n in REQUIRED_FILES if not (path / n).is_file()]
        if missing:
            raise _bad(path, f"run marked complete but {', '.join(missing)} missing")

    scenario_path = path / SCENARIO_FILE
    scenario_yaml = scenario_path.read_text() if scenario_path.is_file() else ""
    try:
        scenario = yaml.safe_load(scenario_yaml) or {}
    except yaml.YAMLError as exc:
        raise _bad(scenario_path, f"unreadable YAML ({str(exc).splitlines()[0]})") from None
    environment_path = path / ENVIRONMENT_FILE
    environment = _read_json(environment_path) if environment_path.is_file() else {}
    schedule_path = path / SCHEDULE_FILE
    schedule = (_parse_schedule(schedule_path, _read_json(schedule_path))
                if schedule_path.is_file() else None)
    tables = {name: _read_table(path / name, name) for name in TABLES}
    tables["iterations.csv"], tables["link_bandwidth.csv"], tables["windows.csv"] = _in_scenario_units(tables, summary)
    return Results(
        path=path,
        summary=summary,
        scenario_yaml=scenario_yaml,
        scenario=scenario if isinstance(scenario, dict) else {},
        environment=environment if isinstance(environment, dict) else {},
        schedule=schedule,
        iterations=tables["iterations.csv"],
        link_bandwidth=tables["link_bandwidth.csv"],
        windows=tables["windows.csv"],
        port_stats=tables["port_stats.csv"],
    )
