"""The lab VM, for real: the box built here, `vagrant up`, and inside it the kernel datapath,
lab 1 and the demo's scenarios; then `vagrant destroy` leaves nothing of ours behind.

Run by `make test-vm` (root; about half an hour under software emulation), not by `make test`.
Where /dev/kvm is missing, or cannot run a stock kernel (a cloud VM without nested
virtualisation: `make box`'s probe then chose QEMU's software emulation), the tests are skipped
with that reason (after the box is built), the one skip the suite's --strict-skips allows here.
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import time

import pytest
from platform_verdict import DEMO_DURATION_S, check_problems, demo_problems, job_errors_pct

REPO = pathlib.Path(__file__).resolve().parents[2]
URI = "qemu:///system"
TIMINGS = REPO / "results" / "lab-vm-timings.json"

pytestmark = pytest.mark.root

if not os.path.exists("/dev/kvm"):
    pytest.skip("no /dev/kvm: this machine cannot run the lab VM (no hardware virtualisation)",
                allow_module_level=True)
if os.geteuid() != 0:
    pytest.skip("needs root: builds the box and drives libvirt (run `sudo make test-vm`)", allow_module_level=True)


def sh(argv: list[str], timeout_s: float, check: bool = True) -> subprocess.CompletedProcess:
    result = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=timeout_s)
    if check and result.returncode != 0:
        raise AssertionError(f"{' '.join(argv)} exited {result.returncode}:\n"
                             f"{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
    return result


def in_guest(command: str, timeout_s: float, check: bool = True) -> subprocess.CompletedProcess:
    return sh(["vagrant", "ssh", "-c", f"cd /vagrant && {command}"], timeout_s, check)


def virsh_names(*args: str) -> set[str]:
    result = sh(["virsh", "-c", URI, *args, "--name"], 60, check=False)
    return {line.strip() for line in result.stdout.splitlines() if line.strip()}


def our_leftovers(domain_prefix: str) -> dict[str, set[str]]:
    """The domains, volumes and networks of this checkout's VM that libvirt still has.
    The box's own base volume is the cached box, and stays."""
    domains = {d for d in virsh_names("list", "--all") if d.startswith(domain_prefix)}
    volumes = {v.split()[0] for v in sh(["virsh", "-c", URI, "vol-list", "default"], 60, check=False)
               .stdout.splitlines()[2:] if v.strip() and v.split()[0].startswith(domain_prefix)}
    networks = {n for n in virsh_names("net-list", "--all") if n.startswith("vagrant-libvirt")}
    return {"domains": domains, "volumes": volumes, "networks": networks}


@pytest.fixture(scope="module")
def lab_vm():
    """`make box`, libvirt started, `vagrant up`; at the end `vagrant destroy` and libvirt as it was."""
    timings: dict[str, float] = {}
    started = time.monotonic()
    sh(["make", "--no-print-directory", "box"], 1200)
    timings["box_s"] = round(time.monotonic() - started, 1)
    driver = (pathlib.Path(os.environ.get("SHIFTBED_BOX_CACHE", "/var/cache/shiftbed/box")) / "driver").read_text().strip()
    if driver != "kvm":
        sh(["topo/vagrant/libvirt.sh", "stop"], 120, check=False)
        # measured (docs/vm.md, "Under software emulation, at a time scale"): the demo's jobs miss their
        # periods at K = 1, and at K = 4 a gated burst's fixed start (~0.3 s of real time, an iperf3
        # client) outgrows its window; K > 5 needs the scenarios' retransmission timeout changed
        pytest.skip("no /dev/kvm that can run the VM: KVM here cannot run a stock kernel (no nested "
                    "virtualisation), and under software emulation the guest cannot keep the demo's timing "
                    "at any time scale the demo allows (docs/vm.md)")
    domain_prefix = f"{REPO.name}_"
    try:
        started = time.monotonic()
        sh(["vagrant", "up", "--provider=libvirt"], 2400)
        timings["up_s"] = round(time.monotonic() - started, 1)
        yield {"driver": driver, "timings": timings, "domain_prefix": domain_prefix}
    finally:
        started = time.monotonic()
        destroyed = sh(["vagrant", "destroy", "--force"], 600, check=False)
        timings["destroy_s"] = round(time.monotonic() - started, 1)
        leftovers = our_leftovers(domain_prefix)
        sh(["topo/vagrant/libvirt.sh", "stop"], 120, check=False)
        TIMINGS.parent.mkdir(exist_ok=True)
        TIMINGS.write_text(json.dumps({"driver": driver, **timings}, indent=1) + "\n")
        assert destroyed.returncode == 0, destroyed.stderr[-2000:]
        assert not any(leftovers.values()), f"vagrant destroy left behind: {leftovers}"


def test_check_reports_the_kernel_datapath_and_a_faithful_link(lab_vm):
    started = time.monotonic()
    report = json.loads(in_guest("sudo .venv/bin/shiftbed check --json", 600).stdout.strip().splitlines()[-1])
    lab_vm["timings"]["check_s"] = round(time.monotonic() - started, 1)
    assert report["datapath"] == "kernel", report
    assert report["datapath_auto"] == "kernel", report
    assert not check_problems(report), report


def test_lab1_gives_what_its_sheet_promises(lab_vm):
    started = time.monotonic()
    in_guest("sudo .venv/bin/python -m pytest -q -p no:cacheprovider "
             "tests/labs/test_labs_root.py::test_lab1_fabric", 1200)
    lab_vm["timings"]["lab1_s"] = round(time.monotonic() - started, 1)


def test_the_demos_scenarios_keep_fidelity_and_meet_the_model(lab_vm):
    started = time.monotonic()
    result = in_guest(f"sudo .venv/bin/shiftbed demo --duration {DEMO_DURATION_S} --json", 3600, check=False)
    lab_vm["timings"]["demo_s"] = round(time.monotonic() - started, 1)
    assert result.returncode == 0, result.stderr[-4000:]
    doc = json.loads(result.stdout.strip().splitlines()[-1])
    for name, run in doc["runs"].items():
        environment = json.loads(in_guest(f"cat {run['results_dir']}/environment.json", 60).stdout)
        assert environment["datapath"] == "kernel", (name, environment)
    lab_vm["timings"]["demo_worst_error_pct"] = max(abs(e) for e in job_errors_pct(doc["runs"]).values())
    assert not demo_problems(doc), demo_problems(doc)
