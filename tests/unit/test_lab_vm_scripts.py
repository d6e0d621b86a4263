"""The lab VM's scripts (topo/vagrant/): each failure a user meets is one line, before anything is built."""

import os
import pathlib
import subprocess

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
SCRIPTS = REPO / "topo" / "vagrant"


def run(script: str, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(SCRIPTS / script), *args], capture_output=True, text=True, timeout=60,
                          env={**os.environ, **(env or {})})


@pytest.mark.parametrize("script", sorted(p.name for p in SCRIPTS.glob("*.sh")))
def test_every_script_parses(script):
    result = subprocess.run(["bash", "-n", str(SCRIPTS / script)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_too_little_disk_for_the_box_is_one_line_before_anything_is_built(tmp_path):
    result = run("build-box.sh", "mininet", env={"SHIFTBED_BOX_CACHE": str(tmp_path),
                                                 "SHIFTBED_BOX_NEED_GB": "100000000"})
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    if os.geteuid() == 0:
        assert lines[0].startswith("make box: not enough disk for the box: ")
        assert f"GB free in {tmp_path}, 100000000 GB needed" in lines[0]
        assert list(tmp_path.iterdir()) == []  # nothing built
    else:
        assert lines[0] == "make box: needs root (mmdebstrap, a loop device and Vagrant's libvirt connection); " \
                           "run: sudo make box"


def test_no_kvm_device_means_software_emulation_and_says_why(tmp_path):
    result = run("kvm-probe.sh", str(tmp_path / "vmlinuz"), env={"SHIFTBED_KVM_DEVICE": str(tmp_path / "kvm")})
    assert result.returncode == 0
    assert result.stdout == "qemu\n"
    assert result.stderr == (f"make box: no {tmp_path / 'kvm'} (no hardware virtualisation here); the VM will run "
                             "under QEMU's software emulation (TCG), several times slower\n")


def test_libvirt_helper_refuses_an_unknown_verb():
    result = run("libvirt.sh", "restart")
    assert result.returncode == 2
    assert result.stderr.strip().endswith("libvirt.sh start|stop")


def test_the_vagrantfile_builds_on_the_projects_box_for_libvirt():
    text = (REPO / "Vagrantfile").read_text()
    assert 'override.vm.box = "shiftbed/debian12"' in text
    assert 'BOX_NAME=${SHIFTBED_BOX_NAME:-shiftbed/debian12}' in (SCRIPTS / "build-box.sh").read_text()
    assert 'File.join(BOX_CACHE, "driver")' in text  # the domain type make box's probe chose
