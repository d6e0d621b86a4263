"""`make test` ends with each tier's time and the ten slowest tests, read from the tiers' junit XML
(tests/suite_times.py)."""

import suite_times

REPORT = """<?xml version="1.0" encoding="utf-8"?><testsuites name="pytest tests">
<testsuite name="pytest" errors="0" failures="0" skipped="0" tests="{n}" time="{total}">
{cases}
</testsuite></testsuites>"""


def write(path, times):
    cases = "\n".join(f'<testcase classname="tests.unit.test_x" name="test_{i}" time="{t}" />'
                      for i, t in enumerate(times))
    path.write_text(REPORT.format(n=len(times), total=sum(times) / 2, cases=cases))


def test_each_tiers_time_and_the_ten_slowest_of_all(tmp_path, capsys):
    write(tmp_path / "1-no-root.xml", [0.5 * i for i in range(30)])
    write(tmp_path / "2-real-fabric.xml", [100.0, 200.0])
    assert suite_times.main([str(tmp_path / "1-no-root.xml"), str(tmp_path / "2-real-fabric.xml")]) == 0
    out = capsys.readouterr().out
    assert "1-no-root           30 tests  1 min 48.8 s" in out  # the tier's wall clock (the suite's time)
    assert "2-real-fabric        2 tests  2 min 30.0 s" in out
    slowest = out.split("the 10 slowest tests:\n")[1].splitlines()
    assert len(slowest) == 10
    assert slowest[0] == "    200.0 s  tests/unit/test_x::test_1" and slowest[2].startswith("     14.5 s")


def test_no_report_is_an_error(tmp_path, capsys):
    assert suite_times.main([str(tmp_path / "missing.xml")]) == 2
    assert "no tier's report" in capsys.readouterr().err
