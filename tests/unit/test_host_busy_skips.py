"""Skips (tests/conftest.py): a test whose every measurement attempt the host disturbed is
reported as skipped with the host's figures, neither a pass nor a fail of shiftbed; anything else
still fails; skips are counted by kind, and ``--strict-skips`` (``make test``) fails a run that
skipped a test for any reason but not being root or a busy host, or in which no test passed."""

import importlib.util
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

CONFTEST = Path(__file__).resolve().parents[1] / "conftest.py"


def load_conftest():
    """The suite's conftest as a module of its own (its functions, without pytest's loader)."""
    spec = importlib.util.spec_from_file_location("shiftbed_suite_conftest", CONFTEST)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("reason, kind", [
    ("Skipped: needs root: builds real Mininet/OVS/Ryu networks (run `sudo make test`)", "not-root"),
    ("needs root", "not-root"),
    ("Skipped: host busy: the host took 9.0, 8.0 % of the CPU in the 2 attempts at solo calibration", "host-busy"),
    ("Skipped: no /dev/kvm: this machine cannot run the lab VM", "no-kvm"),
    ("Skipped: the VM found no /dev/kvm", "other"),  # the lab VM's one allowed skip is by its prefix too
    ("Skipped: vagrant not installed (`make test` installs it)", "other"),
    ("Skipped: kernel datapath: packets do not pass through ovs-vswitchd's heap", "other"),
    ("Skipped: inconclusive: a job drifted", "other"),  # only the host's CPU makes a skip
    ("Skipped: only root can give files away", "other"),  # a root skip must say so by its prefix
    ("Skipped: the test needs root and host busy: no", "other"),  # a prefix, not a word anywhere
])
def test_a_skip_is_classified_by_its_reasons_prefix(reason, kind):
    assert load_conftest().skip_kind(reason) == kind


SUITE = '''
    import pytest
    from apps.hoststeal import HostBusy

    @pytest.fixture(scope="module")
    def calibrated():
        raise HostBusy("solo calibration", [9.0, 8.0])

    def test_busy_in_the_test():
        raise HostBusy("flows", [12.0, 7.5, 6.0])

    def test_busy_in_a_fixture(calibrated):
        pass

    def test_a_real_failure():
        assert 41.1 >= 45.0

    def test_a_pass():
        assert 2 + 2 == 4

    @pytest.mark.skip(reason="needs root: builds real networks")
    def test_not_root():
        pass
'''


def run_suite(pytester, *args, **files):
    pytester.makeconftest(CONFTEST.read_text())
    pytester.makepyfile(**files)
    return pytester.runpytest_inprocess("-rs", "-p", "no:cacheprovider", *args)


def test_host_busy_is_a_skip_with_the_hosts_figures_and_other_errors_still_fail(pytester):
    result = run_suite(pytester, test_measure=SUITE)
    result.assert_outcomes(skipped=3, failed=1, passed=1)
    result.stdout.fnmatch_lines(["*host busy: the host took 12.0, 7.5, 6.0 % of the CPU in the 3 attempts at flows*",
                                 "*host busy: the host took 9.0, 8.0 % of the CPU in the 2 attempts at solo*"])
    # one skip per test: the fixture's failure skips each test that uses it once
    result.stdout.fnmatch_lines(["skips: 1 not-root, 2 host-busy (steal up to 12.0 %), 0 other"])


def test_strict_skips_accepts_not_root_and_host_busy_skips(pytester):
    suite = SUITE.replace("assert 41.1 >= 45.0", "assert 45.0 >= 41.1")
    result = run_suite(pytester, "--strict-skips", test_measure=suite)
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["skips: 1 not-root, 2 host-busy (steal up to 12.0 %), 0 other"])


def test_strict_skips_fails_a_run_with_any_other_skip(pytester):
    suite = '''
        import pytest

        def test_a_pass():
            pass

        def test_skipped_for_a_missing_tool():
            pytest.skip("no ryu-manager next to this Python")
    '''
    result = run_suite(pytester, "--strict-skips", test_skip=suite)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["skips: 0 not-root, 0 host-busy, 1 other",
                                 "FAILED --strict-skips: 1 test(s) skipped for a reason other than*",
                                 "*test_skip.py::test_skipped_for_a_missing_tool: no ryu-manager next to this Python"])
    lenient = run_suite(pytester, test_skip=suite)  # without the option the same run passes, and says so
    assert lenient.ret == pytest.ExitCode.OK
    lenient.stdout.fnmatch_lines(["skips: 0 not-root, 0 host-busy, 1 other"])


def test_strict_skips_fails_a_run_in_which_nothing_passed(pytester):
    skipped_only = '''
        import pytest

        @pytest.mark.skip(reason="needs root: builds real networks")
        def test_not_root():
            pass
    '''
    result = run_suite(pytester, "--strict-skips", test_all_skipped=skipped_only)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["FAILED --strict-skips: no test passed"])


def test_strict_skips_allows_the_lab_vms_one_skip_where_there_is_no_kvm(pytester):
    no_kvm = '''
        import pytest

        def test_lab_vm():
            pytest.skip("no /dev/kvm: this machine cannot run the lab VM")
    '''
    result = run_suite(pytester, "--strict-skips", test_vm=no_kvm)
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["skips: 0 not-root, 0 host-busy, 1 no-kvm, 0 other"])


def test_no_tests_collected_is_never_a_success(pytester):
    result = run_suite(pytester, "--strict-skips", test_empty="x = 1\n")
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
