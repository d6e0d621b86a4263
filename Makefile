# shiftbed — the two front-door commands are `sudo make demo` and `sudo make test`.
# Both run `make install` first; it is idempotent and fast the second time.

SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
# python3-setuptools: `pip install --no-build-isolation -e .` builds with it, and a venv on Python 3.12 or
# later has none of its own (the system site packages give it).
# iproute2 (ip, tc), procps (sysctl, ps), kmod (ovs-ctl's modprobe) and mount: Mininet and shiftbed run them, and
# a minimal image (a container's) has none of them; the Debian 13 stage starts from such a root.
APT_PACKAGES := mininet openvswitch-switch iperf3 tcpdump ethtool iputils-ping curl python3-venv python3-wheel python3-setuptools \
    iproute2 procps kmod mount
# Only for the test suite: `vagrant validate` checks the Vagrantfile (the libvirt
# plugin gives it a provider to validate against; no VM is started); chromium opens
# report.html headless (tests/integration/test_report_in_browser.py).
TEST_APT_PACKAGES := vagrant vagrant-libvirt chromium
# The lab VM on libvirt (docs/vm.md): what builds its box from Debian's packages and runs it.
VM_APT_PACKAGES := vagrant vagrant-libvirt libvirt-daemon-system libvirt-clients qemu-system-x86 qemu-utils \
    mmdebstrap fdisk extlinux syslinux-common dnsmasq-base iptables rsync
# Debian 13 in a root built here from Debian's packages (topo/debian13/).
DEBIAN13_APT_PACKAGES := mmdebstrap
STAMP := $(VENV)/.shiftbed-installed
SYSTEM_PYTHON := /usr/bin/python3
# `make install` links $(BINDIR)/shiftbed to the venv's, so `sudo shiftbed ...` works from any
# folder (sudo's secure_path has /usr/local/bin); `make uninstall` removes the link.
BINDIR := /usr/local/bin

.PHONY: install uninstall python-check link apt apt-test apt-packages ovs demo test unit integration lint bench map clean-venv help \
    apt-vm box libvirt-start libvirt-stop test-vm test-debian13 test-ids

help:
	@echo "sudo make demo   # run the demo scenarios and print where the report is"
	@echo "sudo make install # the venv, Debian packages, Open vSwitch, and /usr/local/bin/shiftbed (make uninstall removes the link)"
	@echo "sudo make test   # install what is needed, then run every test"
	@echo "sudo make box    # the lab VM's box for libvirt, built here from Debian's packages (docs/vm.md)"
	@echo "sudo make test-vm # the lab VM for real: box, vagrant up, check, lab 1 and the demo inside, destroy"
	@echo "sudo make test-debian13 # the product on Debian 13 (Python 3.13, os-ken) in a root built here: install, tests, lab 1, demo"
	@echo "make unit        # fast tests, no root"
	@echo "make test-ids    # every test id make test runs, tier by tier"
	@echo "make lint        # ruff"
	@echo "make bench       # benchmarks under bench/ (numbers, not pass/fail)"
	@echo "make map         # where each policy helps, one factor at a time (docs/figures/map; ~1 min on 2 cores)"

# The schedule search's compiled loops are made here (controller/theory/warm.py; a fraction of a second
# once they are on disk), not in a controller's first request, which a client waits on for 5 s.
install: apt $(STAMP) link ovs
	@$(PY) -m controller.theory.warm

# The Pythons shiftbed was run on, each with its constraints file: 3.11 (Debian 12; the controller on
# Ryu 4.34, os-ken beside it), 3.12 and 3.13 (Debian 13; os-ken). Said in one line before pip runs.
SUPPORTED_PYTHONS := 3.11 3.12 3.13
# Read when the venv's recipe runs, not when this file is parsed: on a machine with no Python yet (a
# minimal image), the apt step before it installs Python.
PYTHON_VERSION = $(shell $(SYSTEM_PYTHON) -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)
CONSTRAINTS = $(if $(filter 3.11,$(PYTHON_VERSION)),requirements.txt,requirements-py$(PYTHON_VERSION).txt)

python-check:
	@v=$$($(SYSTEM_PYTHON) -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null); \
	case " $(SUPPORTED_PYTHONS) " in \
	    *" $$v "*) [ -n "$$v" ] && exit 0 ;; \
	esac; \
	if [ -z "$$v" ]; then echo "make install: no $(SYSTEM_PYTHON); shiftbed needs Python 3.11, 3.12 or 3.13 there (Debian 12 or 13; the Vagrantfile makes a Debian 12 VM)" >&2; \
	else echo "make install: $(SYSTEM_PYTHON) is Python $$v; shiftbed runs on 3.11, 3.12 and 3.13 (Debian 12 or 13; Ryu 4.34 needs 3.11, os-ken 4.2 3.10-3.13): use one of those, or the lab VM (Vagrantfile, Debian 12)" >&2; fi; \
	exit 1

# Idempotent; a $(BINDIR)/shiftbed that is not a link (not ours) is left alone.
link:
	@target=$(CURDIR)/$(VENV)/bin/shiftbed; \
	if [ -e $(BINDIR)/shiftbed ] && [ ! -L $(BINDIR)/shiftbed ]; then \
	    echo "make install: $(BINDIR)/shiftbed exists and is not a link; left as it is (run $$target)" >&2; \
	elif [ "$$(readlink $(BINDIR)/shiftbed)" = "$$target" ]; then :; \
	elif [ -w $(BINDIR) ]; then ln -sfn "$$target" $(BINDIR)/shiftbed && echo "linked $(BINDIR)/shiftbed -> $$target"; \
	else echo "make install: cannot write $(BINDIR), so shiftbed is not on the PATH: run $$target, or sudo make install" >&2; \
	fi

uninstall:
	@if [ "$$(readlink $(BINDIR)/shiftbed)" = "$(CURDIR)/$(VENV)/bin/shiftbed" ]; then \
	    rm $(BINDIR)/shiftbed && echo "removed $(BINDIR)/shiftbed"; \
	else echo "make uninstall: $(BINDIR)/shiftbed is not this checkout's link; left as it is"; fi

# Debian packages: install only what is missing, so a second run changes nothing.
apt:
	@$(MAKE) --no-print-directory apt-packages PACKAGES="$(APT_PACKAGES)"

apt-test:
	@$(MAKE) --no-print-directory apt-packages PACKAGES="$(TEST_APT_PACKAGES)"

apt-packages:
	@missing=$$(for p in $(PACKAGES); do dpkg-query -W -f='$${Status}' $$p 2>/dev/null \
	    | grep -q 'install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	    echo "installing Debian packages:" $$missing; \
	    if [ "$$(id -u)" != 0 ]; then echo "make install: needs root to install $$missing (run with sudo)" >&2; exit 1; fi; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	fi

# The venv is built from Debian's Python with system site packages so that the
# Debian `mininet` module is importable. pyproject.toml declares what shiftbed needs (and the
# `bench` extra, OR-Tools); the constraints file of this Python line (requirements.txt for 3.11,
# requirements-py3.X.txt for the others) pins each version.
$(STAMP): requirements.txt requirements-py3.12.txt requirements-py3.13.txt requirements-dev.txt pyproject.toml setup.py | python-check
	@test -x $(PY) || $(SYSTEM_PYTHON) -m venv --system-site-packages $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check --no-build-isolation -c $(CONSTRAINTS) \
	    -r requirements-dev.txt -e ".[bench]"
	@# Ryu 4.34's eventlet shim for the stock ryu-manager too, where Ryu is installed (runpy warns: the .pth already imported it)
	@if $(PY) -c 'import importlib.util, sys; sys.exit(importlib.util.find_spec("ryu") is None)'; then \
	    $(PY) -W ignore::RuntimeWarning -m controller.ryu_hook --install-pth; fi
	@$(PY) -m controller --describe >/dev/null || { echo "make install: no controller framework runs in $(VENV) (neither Ryu nor os-ken; see the line above)" >&2; exit 1; }
	@touch $@

# Start Open vSwitch if it is not answering (no systemd needed), with the malloc
# setting that keeps a fresh ovs-vswitchd out of page-fault churn (topo/ovs_heap.py).
ovs:
	@if ! ovs-vsctl --timeout=2 show >/dev/null 2>&1; then \
	    if [ "$$(id -u)" != 0 ]; then echo "make install: Open vSwitch is not running; start it as root" >&2; exit 1; fi; \
	    GLIBC_TUNABLES="$$($(PY) -m topo.ovs_heap)" /usr/share/openvswitch/scripts/ovs-ctl start --system-id=random >/dev/null 2>&1 || true; \
	    ovs-vsctl --timeout=5 show >/dev/null || { echo "Open vSwitch failed to start" >&2; exit 1; }; \
	fi

demo: install
	$(VENV)/bin/shiftbed demo

# --strict-skips (tests/conftest.py): a test skipped for anything but not being root or a busy
# host, or a run in which no test passed, fails `make test`.
# Two tiers, two pytest runs, one after the other, so that nothing of the first runs beside the second:
# the tests that need no root on every core (pytest-xdist; the tests that time things or start servers
# share the xdist group "serial" and run one after another on one worker), then the real-fabric tier
# (marker `root`), serially, alone on the machine. The lab sheets' no-root commands run once, in the first
# tier, which leaves their output for the labs' root test (SHIFTBED_LAB_OUTPUT, tests/labs/labsheet.py).
# At the end: each tier's time and the ten slowest tests.
TEST_REPORTS := $(VENV)/test-reports
PYTEST := SHIFTBED_LAB_OUTPUT=$(TEST_REPORTS)/lab-output $(PY) -m pytest -q -rfEs --strict-skips
test: install apt-test
	$(VENV)/bin/ruff check .
	@rm -rf $(TEST_REPORTS); mkdir -p $(TEST_REPORTS); status=0; \
	$(PYTEST) -m "not root" -n auto --dist loadgroup --junitxml=$(TEST_REPORTS)/1-no-root.xml || status=$$?; \
	if [ $$status != 0 ]; then echo "make test: the tier without root failed; the real-fabric tier is not run" >&2; \
	elif [ "$$(id -u)" != 0 ]; then echo "make test: the real-fabric tier needs root (sudo make test)" >&2; status=1; \
	else $(PYTEST) -m root --junitxml=$(TEST_REPORTS)/2-real-fabric.xml || status=$$?; fi; \
	$(PY) tests/suite_times.py $(TEST_REPORTS)/*.xml; exit $$status

# The lab VM (docs/vm.md). `make box` leaves libvirt running for `vagrant up`;
# `make libvirt-stop` stops only what it started.
apt-vm:
	@$(MAKE) --no-print-directory apt-packages PACKAGES="$(VM_APT_PACKAGES)"

libvirt-start: apt-vm
	@topo/vagrant/libvirt.sh start

libvirt-stop:
	@topo/vagrant/libvirt.sh stop

box: libvirt-start
	@topo/vagrant/build-box.sh "$(APT_PACKAGES)"

# Called by .ci/run after `make test`: skipped, with that reason, where there is no /dev/kvm.
test-vm: install
	$(PY) -m pytest -q -rfEs --strict-skips --lab-vm tests/vm

# Called by .ci/run after `make test`: the whole product in a Debian 13 root (topo/debian13/test-root.sh;
# the host's Open vSwitch is stopped meanwhile and started again as it was found).
test-debian13:
	@$(MAKE) --no-print-directory apt-packages PACKAGES="$(DEBIAN13_APT_PACKAGES)"
	@topo/debian13/test-root.sh

# Every test id `make test` runs, tier by tier (to compare two commits: no test dropped unnoticed).
test-ids: $(STAMP)
	@$(PY) -m pytest --collect-only -q -m "not root" | grep '::' | sed 's/^/no-root  /'
	@$(PY) -m pytest --collect-only -q -m root | grep '::' | sed 's/^/fabric   /'

unit: $(STAMP)
	$(PY) -m pytest -q -m "not root" -n auto --dist loadgroup

lint: $(STAMP)
	$(VENV)/bin/ruff check .

bench: install
	$(PY) bench/solver.py
	$(PY) bench/fabric.py
	$(PY) bench/sweep.py
	$(PY) bench/explore.py

# The map and sweeps in docs/theory-map.md (~1 min on 2 cores; docs/theory-speed.md, "Speed of the sweep
# and the map"): the one-factor-at-a-time map, the job-mix panel finely at 2 and 3 jobs, and the four
# sweeps, all into the map's folder (so the map first). 2400 combinations per point or cell: every 95 %
# interval within ±2 points (controller/theory/mapstream.py).
MAP := $(VENV)/bin/shiftbed map --workers 2 --samples 2400 --only mix
SWEEP := $(VENV)/bin/shiftbed sweep --workers 2 --samples 2400 --jobs 2,3,4
map: $(STAMP)
	$(VENV)/bin/shiftbed map --out docs/figures/map --workers 2
	$(MAP) --out docs/figures/map/mix-2jobs --panel mix=0,0.05,0.1,0.15,0.2,0.25,0.3 --at n_jobs=2
	$(MAP) --out docs/figures/map/mix-3jobs --panel mix=0,0.05,0.1,0.15,0.2,0.25,0.3 --at n_jobs=3
	$(MAP) --out docs/figures/map/mix-3jobs-high --panel mix=0.33,0.4,0.45,0.5,0.6,0.67 --at n_jobs=3
	$(SWEEP) --out docs/figures/map/sweep-default --quantum-ms 1,10,50
	$(SWEEP) --out docs/figures/map/sweep-light --period-ms 200:1000 --comm-frac 0.05:0.2 --quantum-ms 1,10,50,100
	$(SWEEP) --out docs/figures/map/sweep-zoo-100g --zoo --zoo-link-mbps 100000 --quantum-ms 1,10,50,100
	$(SWEEP) --out docs/figures/map/sweep-zoo-10g --zoo --quantum-ms 1,10,50,100

clean-venv:
	rm -rf $(VENV)
