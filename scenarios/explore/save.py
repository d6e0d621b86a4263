""""Save as scenario": the page's values as a YAML file that ``shiftbed run`` takes unchanged.

The file is written only where the student points it, inside the folder the
explorer was started in (a path that leads outside it, through ``..`` or a
link, is refused), to a ``.yaml`` name, atomically, and read back through
``scenarios/spec.py`` as ``run`` would read it.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from scenarios import spec
from scenarios.explore import inputs

SUFFIXES = (".yaml", ".yml")


def target(text: str, root: Path) -> Path:
    """Where ``text`` points, inside ``root``; ValueError with a message for beside the box."""
    name = str(text).strip()
    if not name:
        raise ValueError("give a file name, e.g. my-pair.yaml")
    root = root.resolve()
    path = (root / Path(name).expanduser()).resolve()
    if not path.is_relative_to(root):
        raise ValueError(f"{name}: outside the folder the explorer was started in ({root}): refused")
    if path.suffix not in SUFFIXES:
        raise ValueError(f"{name}: a scenario file ends in .yaml")
    if path.is_dir():
        raise ValueError(f"{name}: is a folder")
    if not path.parent.is_dir():
        raise ValueError(f"{name}: no folder {path.parent.relative_to(root)} here")
    return path


def save(start: inputs.Start, edits: inputs.Edits, text: str, root: Path) -> Path:
    """Write the edited scenario to ``text`` (relative to ``root``) and read it back with the spec;
    ValueError (where) or ``InputError`` (what the spec refuses) with a one-line message."""
    path = target(text, root)
    inputs.scenario(start, edits)  # the spec's verdict before anything is written
    body = f"# saved by shiftbed explore from {start.path}\n" + inputs.yaml_text(inputs.document(start, edits))
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(body)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    spec.load(path)
    return path
