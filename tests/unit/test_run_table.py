"""The table `shiftbed run` prints at the end: one row per policy and job."""

from pathlib import Path

from results_example import MEASURED_MS, PREDICTED_MS, summary_json

from scenarios.commands.run import _print_table
from scenarios.summary_record import SummaryRecord


def test_the_table_gives_each_mean_with_its_standard_error_where_there_is_one(capsys):
    _print_table(SummaryRecord.from_dict(summary_json()), Path("/r"))
    lines = capsys.readouterr().out.splitlines()
    assert "measured ms ± se" in lines[0]
    rows = {tuple(line.split()[:2]): line for line in lines[1:] if line.split()[0] in MEASURED_MS}
    assert set(rows) == {(p, j) for p, jobs in MEASURED_MS.items() for j in jobs}
    # gate's b carries a standard error of 6.5 ms in the example; the others none
    assert f"{MEASURED_MS['gate']['b']:.1f} ± 6.5" in rows[("gate", "b")]
    assert "±" not in rows[("none", "a")]
    for (policy, job), line in rows.items():
        assert f"{PREDICTED_MS[policy][job]:.1f}" in line
    assert lines[-1] == "report: /r/report.md"
