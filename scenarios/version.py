"""``shiftbed --version``: the release and the commit it was built from, so a result can be traced to its code.

From a git checkout the commit is asked of git; from an installed wheel it is the
one the build baked in (``setup.py`` writes :data:`BAKED_COMMIT_FILE`); else
``unknown commit``.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import scenarios

PACKAGE_DIR = Path(scenarios.__file__).resolve().parent
BAKED_COMMIT_FILE = "_commit.txt"


def checkout_commit(repo: Path) -> str | None:
    """HEAD of the git checkout at ``repo`` (a worktree too), or None when it is none or git is missing.

    ``safe.directory`` lets root (``sudo shiftbed``) read a checkout another user owns."""
    if not (repo / ".git").exists():
        return None
    try:
        done = subprocess.run(["git", "-c", f"safe.directory={repo}", "-C", str(repo), "rev-parse", "HEAD"],
                              capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    commit = done.stdout.strip()
    return commit if done.returncode == 0 and commit else None


def baked_commit() -> str | None:
    """The commit a wheel's build wrote beside the package, or None."""
    try:
        commit = (PACKAGE_DIR / BAKED_COMMIT_FILE).read_text().strip()
    except OSError:
        return None
    return commit or None


def version_text() -> str:
    commit = checkout_commit(PACKAGE_DIR.parent) or baked_commit()
    return f"shiftbed {scenarios.__version__} ({f'commit {commit}' if commit else 'unknown commit'})"
