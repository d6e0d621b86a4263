"""A test whose every measurement attempt the host disturbed is reported as skipped, with the reason
(tests/conftest.py): neither a pass nor a fail of shiftbed. Anything else still fails."""

from pathlib import Path

pytest_plugins = ["pytester"]

CONFTEST = Path(__file__).resolve().parents[1] / "conftest.py"


def test_host_busy_is_a_skip_with_the_hosts_figures_and_other_errors_still_fail(pytester):
    pytester.makeconftest(CONFTEST.read_text())
    pytester.makepyfile(test_measure='''
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
    ''')
    result = pytester.runpytest_inprocess("-rs", "-p", "no:cacheprovider")
    result.assert_outcomes(skipped=2, failed=1)
    result.stdout.fnmatch_lines(["*inconclusive: the host took 12.0, 7.5, 6.0 % of the CPU in the 3 attempts at flows*",
                                 "*inconclusive: the host took 9.0, 8.0 % of the CPU in the 2 attempts at solo*"])
