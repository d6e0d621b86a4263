"""A done scenario's folder as bytes and back: how a fleet's worker hands its results to the batch.

The worker packs the folder it ran the scenario in (everything but
``outcome.json``, which travels as data); the client unpacks it into the
scenario's work folder and writes the outcome through the batch's own
bookkeeping (``BatchFolder.begin`` / ``finish``), so the scenario is complete
in ``OUT/<name>/`` or absent, exactly as when it runs here. Only regular files
and folders with relative paths inside the scenario are accepted: bytes from
another machine never write outside it.
"""

from __future__ import annotations

import io
import tarfile
from pathlib import Path, PurePosixPath

from scenarios.batch.folder import OUTCOME_FILE, BatchFolder

COMPRESS_LEVEL = 1  # captures barely shrink further; speed matters more
WORKER_LOG = "worker.log"  # beside a scenario a worker did not finish: the end of its batch's output


def pack(scenario_dir: Path) -> bytes:
    """``scenario_dir``'s files and folders (not ``outcome.json``), paths relative to it, gzip'd tar."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz", compresslevel=COMPRESS_LEVEL) as tar:
        for path in sorted(scenario_dir.rglob("*")):
            relative = path.relative_to(scenario_dir)
            if relative != Path(OUTCOME_FILE):
                tar.add(path, arcname=relative.as_posix(), recursive=False)
    return buffer.getvalue()


def unpack(data: bytes, into: Path) -> None:
    """Write what :func:`pack` made into the folder ``into``; ValueError (one line) for bytes that are
    not such a folder: not a tar, or a member that is not a plain file or folder inside it."""
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
            members = tar.getmembers()
            for member in members:
                _check(member)
            tar.extractall(into, members=members)
    except (tarfile.TarError, EOFError, OSError) as exc:
        raise ValueError(f"not a packed scenario folder ({exc.__class__.__name__}: {exc})") from None


def _check(member: tarfile.TarInfo) -> None:
    parts = PurePosixPath(member.name).parts
    if not (member.isfile() or member.isdir()):
        raise ValueError(f"{member.name}: not a plain file or folder")
    if not parts or PurePosixPath(member.name).is_absolute() or ".." in parts or parts == (OUTCOME_FILE,):
        raise ValueError(f"{member.name}: not a path inside the scenario's folder")


def keep_unfinished(folder: BatchFolder, name: str, data: bytes, worker_log: str) -> Path:
    """What a worker's attempt at ``name`` wrote before it stopped, in the scenario's work folder as a
    batch here leaves it (``--resume`` starts that scenario afresh), with the worker's output beside it
    (``worker.log``). ValueError from :func:`unpack`."""
    work = folder.begin(name)
    unpack(data, work)
    (work / WORKER_LOG).write_text(worker_log)
    return work


def adopt(folder: BatchFolder, name: str, data: bytes, outcome: dict) -> Path:
    """Scenario ``name`` done elsewhere, made done here: a fresh work folder, the packed folder unpacked
    into it, then ``outcome`` written and the folder renamed into place (``BatchFolder.finish``).
    A failure part-way leaves the scenario not done (ValueError from :func:`unpack`)."""
    work = folder.begin(name)
    unpack(data, work)
    return folder.finish(name, outcome)
