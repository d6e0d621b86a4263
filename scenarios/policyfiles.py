"""``--policy-file FILE.py`` for ``plan``, ``sweep`` and ``run``: load a user's policy by path.

The file is imported so that its ``@register`` runs (``controller.theory.policies``);
its policies are then known by name, exactly like the built-ins. The loaded
files are exported in ``SHIFTBED_POLICY_FILES`` so that the controller and the
job drivers a run starts load them too. A missing file, one that fails to
import or registers nothing is an ``InputError`` (exit 2) before anything is
built.
"""

from __future__ import annotations

from controller.theory.policies import PolicyFileError, export_policy_files, load_policy_file
from scenarios.errors import InputError


def add_argument(parser) -> None:
    parser.add_argument("--policy-file", action="append", default=[], metavar="FILE.py",
                        help="a Python file that registers policies (docs/policies.md); repeatable")


def load(paths, where: str = "--policy-file") -> list[str]:
    """Load every file; the names they registered. One-line InputError naming the file at fault."""
    names: list[str] = []
    for path in paths or ():
        try:
            names += load_policy_file(path)
        except PolicyFileError as exc:
            raise InputError(f"{where}: {exc}") from None
    export_policy_files()
    return names
