# shiftbed — the two front-door commands are `sudo make demo` and `sudo make test`.
# Both run `make install` first; it is idempotent and fast the second time.

SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
APT_PACKAGES := mininet openvswitch-switch iperf3 tcpdump ethtool iputils-ping curl python3-venv
# Only for the test suite: `vagrant validate` checks the Vagrantfile (the libvirt
# plugin gives it a provider to validate against; no VM is started).
TEST_APT_PACKAGES := vagrant vagrant-libvirt
STAMP := $(VENV)/.shiftbed-installed

.PHONY: install apt apt-test apt-packages ovs demo test unit integration lint bench map clean-venv help

help:
	@echo "sudo make demo   # run the demo scenarios and print where the report is"
	@echo "sudo make test   # install what is needed, then run every test"
	@echo "make unit        # fast tests, no root"
	@echo "make lint        # ruff"
	@echo "make bench       # benchmarks under bench/ (numbers, not pass/fail)"
	@echo "make map         # where each policy helps, one factor at a time (docs/figures/map; ~20 min on 2 cores)"

install: apt $(STAMP) ovs

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
# Debian `mininet` module is importable; pinned packages go on top.
$(STAMP): requirements.txt requirements-dev.txt pyproject.toml
	@test -x $(PY) || /usr/bin/python3 -m venv --system-site-packages $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check -r requirements.txt -r requirements-dev.txt
	$(PY) -m pip install -q --disable-pip-version-check --no-deps --no-build-isolation -e .
	$(PY) -W ignore::RuntimeWarning -m controller.ryu_hook --install-pth   # (runpy warns: the .pth already imported it) Ryu 4.34's eventlet shim for the stock ryu-manager too
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
test: install apt-test
	$(VENV)/bin/ruff check .
	$(PY) -m pytest -q -rfEs --strict-skips --durations=15

unit: $(STAMP)
	$(PY) -m pytest -q -m "not root"

lint: $(STAMP)
	$(VENV)/bin/ruff check .

bench: install
	$(PY) bench/solver.py
	$(PY) bench/fabric.py
	$(PY) bench/sweep.py

# The map and sweeps in docs/theory.md (about 20 min on 2 cores, estimated): the one-factor-at-a-time map, the job-mix
# panel finely at 2 and 3 jobs, and the four sweeps, all into the map's folder (so the map first). 2400
# combinations per point or cell: every 95 % interval within ±2 points (controller/theory/mapstream.py).
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
