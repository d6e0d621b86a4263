"""The Vagrantfile is valid (checked with the real `vagrant validate` when installed)."""

import pathlib
import shutil
import subprocess

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]


@pytest.mark.skipif(shutil.which("vagrant") is None, reason="vagrant not installed (`make test` installs it)")
def test_vagrant_validate_passes():
    result = subprocess.run(
        ["vagrant", "validate"], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "validated successfully" in result.stdout


def test_vagrantfile_uses_the_same_install_as_ci():
    text = (REPO / "Vagrantfile").read_text()
    assert 'config.vm.box = "debian/bookworm64"' in text
    assert "make -C /vagrant install" in text
    assert "cpus = 2" in text and "memory = 4096" in text
