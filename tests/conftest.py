"""Shared test set-up.

- The ``root`` marker skips cleanly, with the reason, when not root.
- A measurement the machine's host disturbed in every attempt (``apps.hoststeal.HostBusy``:
  it took more than ``MAX_STEAL_PCT`` of the CPU each time) cannot judge shiftbed: the test
  is reported as skipped, its reason starting ``host busy:`` with the host's figures. A test
  that finds its measurement inconclusive raises ``HostBusy`` (the one way to skip for the
  host); nothing the product did (late or slow bursts, lost fidelity) is a reason to skip.
- Skips are counted by kind (not root, host busy, other) and summed up in one line at the
  end. With ``--strict-skips`` (``make test``) the run fails if a test was skipped for any
  other reason, or if no test passed at all.
- A suite started in the background by a shell (``make test &``) inherits SIGINT ignored,
  and so would every ``shiftbed run`` it starts: Python then installs no Ctrl-C handler,
  and the interrupt tests' Ctrl-C would be lost. Ctrl-C is restored for the session.
- Hypothesis is derandomised and has no per-example deadline, so a property
  test gives the same verdict on every run and on a loaded 2-core CI machine.
"""

import os
import signal
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hypothesis import settings

from apps.hoststeal import HostBusy

settings.register_profile("shiftbed", derandomize=True, deadline=None, print_blob=True)
settings.load_profile("shiftbed")

NOT_ROOT_PREFIX = "needs root"
HOST_BUSY_PREFIX = "host busy:"
NO_KVM_PREFIX = "no /dev/kvm"  # the lab VM's test (tests/vm), on a machine that cannot run a VM
STEAL_PROPERTY = "host_steal_pct"  # a host-busy skip's worst stolen share (%), in its report's user_properties


def skip_kind(reason: str) -> str:
    """``not-root``, ``host-busy`` or ``other``: why a test was skipped, from its reason."""
    reason = reason.strip().removeprefix("Skipped:").strip()
    if reason.startswith(HOST_BUSY_PREFIX):
        return "host-busy"
    if reason.startswith(NOT_ROOT_PREFIX):
        return "not-root"
    if reason.startswith(NO_KVM_PREFIX):
        return "no-kvm"
    return "other"


def skip_reason(report) -> str:
    """The reason of a skipped test's report (pytest keeps it as ``(path, line, "Skipped: ...")``)."""
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2])
    return str(longrepr)


@dataclass(eq=False)  # hashed by identity: pytest keeps its plug-ins in sets (once a folder has its own conftest)
class SkipTally:
    """What the session skipped, by kind, and how many tests passed (a plug-in: pytest calls its hooks)."""

    strict: bool
    collect_only: bool = False
    skipped: dict[str, list[str]] = field(default_factory=lambda: {"not-root": [], "host-busy": [], "no-kvm": [],
                                                                           "other": []})
    steal_pcts: list[float] = field(default_factory=list)
    passed: int = 0

    def pytest_runtest_logreport(self, report):
        if report.passed and report.when == "call":
            self.passed += 1
        if not report.skipped or hasattr(report, "wasxfail"):
            return
        reason = skip_reason(report)
        kind = skip_kind(reason)
        self.skipped[kind].append(f"{report.nodeid}: {reason.removeprefix('Skipped: ')}")
        if kind == "host-busy":
            self.steal_pcts += [value for key, value in report.user_properties if key == STEAL_PROPERTY]

    def line(self) -> str:
        """``skips: 0 not-root, 1 host-busy (steal up to 12.3 %), 0 other``."""
        busy = len(self.skipped["host-busy"])
        steal = f" (steal up to {max(self.steal_pcts):.1f} %)" if self.steal_pcts else ""
        kvm = f"{len(self.skipped['no-kvm'])} no-kvm, " if self.skipped["no-kvm"] else ""
        return f"skips: {len(self.skipped['not-root'])} not-root, {busy} host-busy{steal}, {kvm}" \
               f"{len(self.skipped['other'])} other"

    def failure(self) -> str | None:
        """Why a strict session fails although its tests did not, or None."""
        if not self.strict:
            return None
        if self.skipped["other"]:
            return (f"--strict-skips: {len(self.skipped['other'])} test(s) skipped for a reason other than "
                    "not being root, a busy host or (the lab VM) no /dev/kvm")
        # the lab VM's suite on a machine without /dev/kvm: its one skip is the whole run, and allowed
        if self.passed == 0 and not self.collect_only and not self.skipped["no-kvm"]:
            return "--strict-skips: no test passed"
        return None

    def pytest_sessionfinish(self, session, exitstatus):
        if self.failure() and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter):
        terminalreporter.write_line(self.line())
        problem = self.failure()
        if problem:
            terminalreporter.write_line(f"FAILED {problem}", red=True, bold=True)
            for entry in self.skipped["other"]:
                terminalreporter.write_line(f"  {entry}")


def pytest_addoption(parser):
    parser.addoption("--strict-skips", action="store_true",
                     help="fail the run if a test is skipped for a reason other than not being root or a "
                          "busy host, or if no test passed (make test)")
    parser.addoption("--lab-vm", action="store_true",
                     help="collect tests/vm: the lab VM booted for real (make test-vm; half an hour)")


def pytest_ignore_collect(collection_path, config):
    """tests/vm boots the lab VM: only `make test-vm` (--lab-vm) collects it, not `make test`."""
    if collection_path.name == "vm" and collection_path.parent == Path(__file__).parent:
        return not config.getoption("lab_vm")
    return None


def pytest_configure(config):
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    tally = SkipTally(strict=config.getoption("strict_skips"), collect_only=config.getoption("collectonly"))
    config.pluginmanager.register(tally, "shiftbed-skip-tally")


def pytest_collection_modifyitems(config, items):
    if os.geteuid() == 0:
        return
    for item in items:
        marker = item.get_closest_marker("root")
        if marker is not None:
            why = marker.kwargs.get("why", "builds real Mininet/OVS/Ryu networks")
            item.add_marker(pytest.mark.skip(reason=f"{NOT_ROOT_PREFIX}: {why} (run `sudo make test`)"))


@pytest.fixture
def policy_registry():
    """Whatever a test registers as a policy (and the policy files it loads) is forgotten afterwards."""
    from controller.theory import policies

    before, files_before = set(policies.POLICIES), set(policies._LOADED_FILES)
    yield
    for name in set(policies.POLICIES) - before:
        del policies.POLICIES[name]
    for key in set(policies._LOADED_FILES) - files_before:
        del policies._LOADED_FILES[key]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if call.excinfo is not None and call.excinfo.errisinstance(HostBusy):
        busy = call.excinfo.value
        report.outcome = "skipped"
        report.longrepr = (str(item.path), item.location[1] or 0, f"Skipped: {HOST_BUSY_PREFIX} {busy}")
        if busy.steal_pcts:
            report.user_properties.append((STEAL_PROPERTY, max(busy.steal_pcts)))
