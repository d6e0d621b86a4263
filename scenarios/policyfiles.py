"""``--policy-file FILE.py`` for ``plan``, ``sweep`` and ``run``: load a user's policy by path.

The file is imported so that its ``@register`` runs (``controller.theory.policies``);
its policies are then known by name, exactly like the built-ins. The loaded
files are exported in ``SHIFTBED_POLICY_FILES`` so that the controller and the
job drivers a run starts load them too. A missing file, one that fails to
import or registers nothing is an ``InputError`` (exit 2) before anything is
built.

A policy file is Python that ``shiftbed run`` executes as root (in the runner,
the controller and every job driver), so a file that another user could
change — writable by group or others, or in a folder that is — is refused
before it is imported (docs/policies.md).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from controller.theory.policies import PolicyFileError, export_policy_files, load_policy_file
from scenarios.errors import InputError


def add_argument(parser) -> None:
    parser.add_argument("--policy-file", action="append", default=[], metavar="FILE.py",
                        help="a Python file that registers policies (docs/policies.md); repeatable")


def writable_by_others(path: str | os.PathLike) -> str | None:
    """Why ``path`` (after symlinks) or its folder could be changed by another user, or None."""
    real = Path(path).resolve()
    if not real.is_file():
        return None  # the loader names a missing file
    for what, where in (("file", real), ("folder", real.parent)):
        mode = where.stat().st_mode
        if mode & (stat.S_IWGRP | stat.S_IWOTH):
            return (f"{path}: the policy {what} {where} is writable by group or others (mode "
                    f"{stat.S_IMODE(mode):04o}) and policy files run as root: chmod go-w {where}")
    return None


def load(paths, where: str = "--policy-file") -> list[str]:
    """Load every file; the names they registered. One-line InputError naming the file at fault."""
    names: list[str] = []
    for path in paths or ():
        problem = writable_by_others(path)
        if problem:
            raise InputError(f"{where}: {problem}")
        try:
            names += load_policy_file(path)
        except PolicyFileError as exc:
            raise InputError(f"{where}: {exc}") from None
    export_policy_files()
    return names
