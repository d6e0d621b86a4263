"""A policy file runs as root, so one that another user could change is refused before it is imported."""

import os

import pytest

from controller.theory import policies
from scenarios import cli, policyfiles
from scenarios.errors import InputError

POLICY = """\
from pathlib import Path

from controller.theory.policies import NonePolicy, register

Path(__file__).with_suffix(".imported").touch()


@register
class Mine(NonePolicy):
    name = "mine_{tag}"
"""
SCENARIO = """\
name: s
policy_files: [{entry}]
jobs:
  - {{name: a, period_ms: 200, comm_ms: 50}}
  - {{name: b, period_ms: 400, comm_ms: 100}}
"""


@pytest.fixture(autouse=True)
def clean_registry(monkeypatch, policy_registry):
    """Whatever a test loads is forgotten afterwards (registry and loaded files: tests/conftest.py; environment)."""
    monkeypatch.delenv(policies.POLICY_FILES_ENV, raising=False)


def policy_file(folder, tag: str, file_mode=0o644, folder_mode=0o755):
    folder.mkdir(exist_ok=True)
    path = folder / f"{tag}.py"
    path.write_text(POLICY.format(tag=tag))
    path.chmod(file_mode)
    folder.chmod(folder_mode)
    return path


def imported(path) -> bool:
    return path.with_suffix(".imported").exists()


def test_a_private_policy_file_loads(tmp_path):
    path = policy_file(tmp_path / "mine", "ok")
    assert policyfiles.writable_by_others(path) is None
    assert policyfiles.load([path]) == ["mine_ok"] and imported(path)


@pytest.mark.parametrize("file_mode, folder_mode, what", [
    (0o664, 0o755, "file"), (0o646, 0o755, "file"), (0o644, 0o775, "folder"), (0o644, 0o1777, "folder"),
])
def test_writable_by_group_or_others_is_refused_before_import(tmp_path, file_mode, folder_mode, what):
    path = policy_file(tmp_path / "shared", "open", file_mode, folder_mode)
    with pytest.raises(InputError) as info:
        policyfiles.load([path])
    message = str(info.value)
    where = path if what == "file" else path.parent
    assert message.startswith(f"--policy-file: {path}: the policy {what} {where} is writable by group or others")
    assert f"chmod go-w {where}" in message and "root" in message and "\n" not in message
    assert not imported(path), "the file ran before it was refused"
    assert "mine_open" not in policies.POLICIES


def test_a_symlink_is_judged_by_the_file_it_points_to(tmp_path):
    target = policy_file(tmp_path / "shared", "linked", file_mode=0o666)
    link = tmp_path / "link.py"
    link.symlink_to(target)
    assert f"the policy file {target} is writable" in policyfiles.writable_by_others(link)


def test_plan_refuses_with_exit_2_and_one_line(tmp_path, capsys):
    path = policy_file(tmp_path / "shared", "cli", file_mode=0o666)
    scenario = tmp_path / "s.yaml"
    scenario.write_text(SCENARIO.format(entry="x.py").replace("policy_files: [x.py]\n", ""))
    assert cli.main(["plan", str(scenario), "--policy-file", str(path)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith(f"shiftbed plan: --policy-file: {path}: ") and "chmod go-w" in err[0]
    assert not imported(path)


def test_a_scenario_policy_file_is_checked_the_same_way(tmp_path, capsys):
    path = policy_file(tmp_path / "shared", "scen", folder_mode=0o777)
    scenario = tmp_path / "shared" / "s.yaml"
    scenario.write_text(SCENARIO.format(entry=path.name))
    os.chmod(scenario, 0o644)
    assert cli.main(["plan", str(scenario)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith(f"shiftbed plan: {scenario}: policy_files[0]: {path}: the policy "
                                               f"folder {path.parent} is writable"), err
    assert not imported(path)
    path.parent.chmod(0o755)
    assert cli.main(["plan", str(scenario), "--policies", "none,mine_scen"]) == 0
    assert imported(path) and "mine_scen" in capsys.readouterr().out
