"""A batch's folder: each scenario's results complete or absent, and what is left to run.

::

    OUT/
        batch.json            the batch's settings and its scenarios, in order (written first, whole)
        scenarios/<name>.yaml each drawn scenario, as ``shiftbed run`` reads it
        <name>/               a scenario done: renamed into place only when complete
            prediction.json   the model's, written before the scenario's first policy ran
            <timestamp>/      the run's results folder (docs/results.md); a second one if the first lost fidelity
            run.log           the run's table, as ``shiftbed run`` prints it
            outcome.json      each attempt and the one kept (its presence marks the scenario done)
        .partial/<name>/      a scenario being run (removed and run again by ``--resume``)
        batch.parquet, report.md, report.html   the batch's table and report, once every scenario is done

A scenario is written under ``.partial/`` and renamed into place when its
outcome is written: a process killed at any moment (Ctrl-C, ``kill -9``, the
machine going down) leaves each scenario done or not, never half, and
``--resume`` runs exactly those not done.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from scenarios.errors import InputError
from scenarios.files import atomic_write_bytes, give_to_sudo_user, json_text

FORMAT = "shiftbed-batch/1"
BATCH_FILE = "batch.json"
SCENARIOS_DIR = "scenarios"
WORK_DIR = ".partial"
OUTCOME_FILE = "outcome.json"
PREDICTION_FILE = "prediction.json"
RUN_LOG = "run.log"


class BatchFolder:
    """One batch's folder (module docstring): created whole with its scenario files, then filled one
    scenario at a time."""

    def __init__(self, root: str | Path, record: dict):
        self.root = Path(root)
        self.record = record

    @classmethod
    def create(cls, root: str | Path, record: dict, texts: dict[str, str]) -> BatchFolder:
        """The folder with ``batch.json`` and every scenario file, written beside ``root`` and renamed into
        place (an interrupted creation leaves no batch); ``texts``: each scenario's file, in order."""
        root = Path(root)
        record = {"format": FORMAT, **record, "scenarios": list(texts)}
        staging = root.with_name(f".{root.name}.creating")
        shutil.rmtree(staging, ignore_errors=True)
        (staging / SCENARIOS_DIR).mkdir(parents=True)
        for name, text in texts.items():
            atomic_write_bytes(staging / SCENARIOS_DIR / f"{name}.yaml", text.encode())
        atomic_write_bytes(staging / BATCH_FILE, json_text(record).encode())
        os.rename(staging, root)
        give_to_sudo_user([root, *root.rglob("*")])
        return cls(root, record)

    @classmethod
    def open(cls, root: str | Path, option: str = "--resume") -> BatchFolder:
        """An existing batch (InputError, one line naming ``option``, for a folder that is not one)."""
        root = Path(root)
        try:
            record = json.loads((root / BATCH_FILE).read_text())
        except FileNotFoundError:
            raise InputError(f"{option}: {root}: not a batch folder (no {BATCH_FILE})") from None
        except (OSError, ValueError) as exc:
            raise InputError(f"{option}: {root / BATCH_FILE}: cannot read: {exc.__class__.__name__}") from None
        if not isinstance(record, dict) or record.get("format") != FORMAT:
            raise InputError(f"{option}: {root / BATCH_FILE}: not a batch of format {FORMAT}")
        return cls(root, record)

    @property
    def names(self) -> list[str]:
        return list(self.record["scenarios"])

    def scenario_file(self, name: str) -> Path:
        return self.root / SCENARIOS_DIR / f"{name}.yaml"

    def done_dir(self, name: str) -> Path:
        return self.root / name

    def is_done(self, name: str) -> bool:
        return (self.done_dir(name) / OUTCOME_FILE).is_file()

    def pending(self) -> list[str]:
        """The scenarios not done, in the batch's order."""
        return [name for name in self.names if not self.is_done(name)]

    def done(self) -> list[str]:
        return [name for name in self.names if self.is_done(name)]

    @property
    def work_root(self) -> Path:
        """What the runs are given as ``--out``: each writes ``work_root/<name>/<timestamp>``."""
        return self.root / WORK_DIR

    def begin(self, name: str) -> Path:
        """A fresh work folder for ``name`` (what an earlier, interrupted attempt left is removed)."""
        work = self.work_root / name
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        return work

    def finish(self, name: str, outcome: dict) -> Path:
        """Write ``outcome.json`` and rename the work folder into place: the scenario is done."""
        work = self.work_root / name
        atomic_write_bytes(work / OUTCOME_FILE, json_text(outcome).encode())
        final = self.done_dir(name)
        os.rename(work, final)
        give_to_sudo_user([final, *final.rglob("*")])
        return final

    def outcome(self, name: str) -> dict:
        return json.loads((self.done_dir(name) / OUTCOME_FILE).read_text())


def run_folders(scenario_dir: Path) -> list[Path]:
    """The finished run folders of one scenario's work (or done) folder, oldest first."""
    return sorted(p for p in scenario_dir.iterdir() if p.is_dir() and not p.name.startswith("."))
