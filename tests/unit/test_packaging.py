"""Packaging: what pyproject.toml declares installs a working `shiftbed` into a fresh virtual environment,
pinned by requirements.txt; OR-Tools stays an extra; the Makefile says an unsupported Python in one line."""

import os
import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from test_layering import PACKAGES, imports_of, module_name

REPO = Path(__file__).resolve().parents[2]
SYSTEM_PYTHON = Path("/usr/bin/python3")
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]


# Each Python line shiftbed was run on, and the constraints file `make install` takes there.
CONSTRAINTS = {"3.11": "requirements.txt", "3.12": "requirements-py3.12.txt", "3.13": "requirements-py3.13.txt"}


def pins(constraints: str = "requirements.txt") -> dict[str, str]:
    """A constraints file: package name (lower case) -> the exact version pinned."""
    out = {}
    for line in (REPO / constraints).read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            req = Requirement(line)
            (spec,) = req.specifier
            assert spec.operator == "==", line
            out[req.name.lower()] = spec.version
    return out


@pytest.mark.parametrize("python, constraints", CONSTRAINTS.items())
def test_every_declared_dependency_is_pinned_inside_its_range_and_every_pin_is_declared(python, constraints):
    """For each Python line, what pyproject.toml declares there (environment markers evaluated for it)."""
    marker_env = {"python_version": python, "python_full_version": f"{python}.0"}
    declared = [req for req in (Requirement(r) for r in PYPROJECT["dependencies"]
                                + PYPROJECT["optional-dependencies"]["bench"])
                if req.marker is None or req.marker.evaluate(marker_env)]
    pinned = pins(constraints)
    for req in declared:
        assert req.name.lower() in pinned, f"{req.name}: declared in pyproject.toml, not pinned in requirements.txt"
        assert req.specifier.contains(pinned[req.name.lower()]), f"{req}: the pin {pinned[req.name.lower()]} is outside"
    assert set(pinned) == {r.name.lower() for r in declared}
    assert [Requirement(r).name for r in PYPROJECT["optional-dependencies"]["bench"]] == ["ortools"]


def test_only_the_milp_baseline_imports_ortools_and_only_benchmarks_and_tests_import_it():
    """OR-Tools is the `bench` extra: the product imports without it."""
    for package in PACKAGES:
        for path in sorted((REPO / package).rglob("*.py")):
            imported = imports_of(path)
            name = module_name(path)
            if name != "controller.theory.milp":
                assert not any(i.split(".")[0] == "ortools" for i in imported), f"{name} imports ortools"
            assert "controller.theory.milp" not in imported, f"{name} imports the milp baseline"  # any form


def test_the_python_requirement_is_the_lines_shiftbed_was_run_on():
    assert PYPROJECT["requires-python"] == ">=3.11,<3.14"
    from packaging.specifiers import SpecifierSet
    assert [v for v in ("3.10", "3.11", "3.12", "3.13", "3.14") if SpecifierSet(PYPROJECT["requires-python"]).contains(f"{v}.0")] \
        == list(CONSTRAINTS)


def test_ryu_only_where_it_runs_and_os_ken_everywhere():
    by_name = {Requirement(r).name.lower(): Requirement(r) for r in PYPROJECT["dependencies"]}
    assert by_name["ryu"].marker.evaluate({"python_version": "3.11"})
    assert not by_name["ryu"].marker.evaluate({"python_version": "3.12"})
    assert by_name["os-ken"].marker is None
    for python, constraints in CONSTRAINTS.items():
        assert ("ryu" in pins(constraints)) == (python == "3.11"), constraints


@pytest.mark.parametrize("version", list(CONSTRAINTS))
def test_make_install_takes_the_constraints_of_its_python_line(tmp_path, version):
    fake = tmp_path / "python3"
    fake.write_text(f"#!/bin/sh\necho {version}\n")
    fake.chmod(0o755)
    check = subprocess.run(["make", "-s", "--no-print-directory", "python-check", f"SYSTEM_PYTHON={fake}"],
                           cwd=REPO, capture_output=True, text=True, timeout=60)
    assert check.returncode == 0 and check.stderr == "", check.stderr
    dry = subprocess.run(["make", "-n", "--no-print-directory", "-W", "pyproject.toml", ".venv/.shiftbed-installed",
                          f"SYSTEM_PYTHON={fake}"], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert f"-c {CONSTRAINTS[version]} " in dry.stdout, dry.stdout


@pytest.mark.parametrize("version, says", [
    ("3.14", "is Python 3.14; shiftbed runs on 3.11, 3.12 and 3.13"),
    ("3.10", "is Python 3.10; shiftbed runs on 3.11, 3.12 and 3.13"),
    (None, "no "),
])
def test_make_install_refuses_an_unsupported_python_in_one_line_before_pip(tmp_path, version, says):
    fake = tmp_path / "python3"
    if version:
        fake.write_text(f"#!/bin/sh\necho {version}\n")
        fake.chmod(0o755)
    done = subprocess.run(["make", "-s", "--no-print-directory", "python-check", f"SYSTEM_PYTHON={fake}"],
                          cwd=REPO, capture_output=True, text=True, timeout=60)
    lines = [line for line in done.stderr.splitlines() if not re.match(r"make(\[\d+\])?: \*\*\*", line)]
    assert done.returncode != 0 and len(lines) == 1 and says in lines[0], done.stderr
    assert "Debian 12" in lines[0] and "VM" in lines[0]


def test_the_link_that_makes_sudo_shiftbed_work_is_idempotent_and_uninstall_removes_only_ours(tmp_path):
    make = ["make", "-s", "--no-print-directory", f"BINDIR={tmp_path}"]
    target = REPO / ".venv" / "bin" / "shiftbed"
    for _ in range(2):
        assert subprocess.run([*make, "link"], cwd=REPO, capture_output=True, timeout=60).returncode == 0
        assert (tmp_path / "shiftbed").readlink() == target
    subprocess.run([*make, "uninstall"], cwd=REPO, capture_output=True, timeout=60, check=True)
    assert not (tmp_path / "shiftbed").is_symlink()
    (tmp_path / "shiftbed").write_text("#!/bin/sh\n")  # someone else's program
    done = subprocess.run([*make, "link"], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert "is not a link; left as it is" in done.stderr
    subprocess.run([*make, "uninstall"], cwd=REPO, capture_output=True, timeout=60, check=True)
    assert (tmp_path / "shiftbed").read_text() == "#!/bin/sh\n"


def source_copy(dest: Path) -> str:
    """The working tree's files (tracked and new, not ignored) as a git checkout of their own; its commit."""
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=REPO, capture_output=True,
                           check=True).stdout.decode().split("\0")
    for name in filter(None, files):
        if (REPO / name).is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, dest / name)
    git = ["git", "-c", "user.name=shiftbed", "-c", "user.email=shiftbed@localhost", "-C", str(dest)]
    for step in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "source"]):
        subprocess.run([*git, *step], check=True, capture_output=True)
    return subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()


@pytest.mark.slow
def test_pip_install_into_a_fresh_venv_gives_a_shiftbed_that_names_its_version_and_commit(tmp_path):
    """A real install from the package index pip is configured with (about 50 s here), without the
    `bench` extra: `--version` names the commit the build baked in, and `plan` runs without OR-Tools."""
    source, venv = tmp_path / "src", tmp_path / "venv"
    source.mkdir()
    commit = source_copy(source)
    subprocess.run([str(SYSTEM_PYTHON), "-m", "venv", str(venv)], check=True, timeout=120)
    python = subprocess.run([str(SYSTEM_PYTHON), "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                            capture_output=True, text=True, check=True).stdout.strip()
    pip = subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "--disable-pip-version-check",
                          "-c", str(source / CONSTRAINTS[python]), str(source)],
                         capture_output=True, text=True, timeout=600)
    assert pip.returncode == 0, pip.stderr[-3000:]
    shiftbed = venv / "bin" / "shiftbed"
    alone = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # the installed package, not this checkout
    version = subprocess.run([str(shiftbed), "--version"], capture_output=True, text=True, timeout=60, cwd=tmp_path,
                             env=alone)
    assert version.returncode == 0 and version.stdout == f"shiftbed 0.1.0 (commit {commit})\n", version.stderr
    plan = subprocess.run([str(shiftbed), "plan", str(REPO / "scenarios" / "classroom.yaml"), "--json"],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path, env=alone)
    assert plan.returncode == 0 and '"feasible": true' in plan.stdout, plan.stderr[-2000:]
    no_ortools = subprocess.run([str(venv / "bin" / "python"), "-c", "import ortools"], capture_output=True,
                                env=alone)
    assert no_ortools.returncode != 0  # the extra was not asked for


def test_the_version_names_the_checkouts_commit_else_the_baked_one_else_says_unknown(tmp_path, monkeypatch):
    from scenarios import version

    installed = tmp_path / "site-packages" / "scenarios"  # an installed package: no checkout around it
    installed.mkdir(parents=True)
    monkeypatch.setattr(version, "PACKAGE_DIR", installed)
    assert version.checkout_commit(installed.parent) is None
    assert version.version_text() == "shiftbed 0.1.0 (unknown commit)"
    (installed / version.BAKED_COMMIT_FILE).write_text("0123abc\n")
    assert version.version_text() == "shiftbed 0.1.0 (commit 0123abc)"
    head = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, cwd=REPO).stdout.strip()
    assert version.checkout_commit(REPO) == head
