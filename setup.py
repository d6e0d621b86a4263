"""Bakes the git commit into a built package, so that ``shiftbed --version`` from a wheel names it.

Everything else is in pyproject.toml. The commit is written as ``scenarios/_commit.txt``
(``scenarios/version.py`` reads it); built outside a git checkout, nothing is written
and the version says ``unknown commit``.
"""

import subprocess
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent


def source_commit() -> str:
    """HEAD of the checkout being built ('' outside one, or without git)."""
    if not (HERE / ".git").exists():
        return ""
    try:
        done = subprocess.run(["git", "-c", f"safe.directory={HERE}", "-C", str(HERE), "rev-parse", "HEAD"],
                              capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return ""
    return done.stdout.strip() if done.returncode == 0 else ""


class BuildWithCommit(build_py):
    def run(self):
        super().run()
        commit = source_commit()
        if commit and not getattr(self, "editable_mode", False):  # an editable install reads the checkout itself
            target = Path(self.build_lib) / "scenarios" / "_commit.txt"
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(commit + "\n")


setup(cmdclass={"build_py": BuildWithCommit})
