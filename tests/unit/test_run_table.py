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


def test_json_is_one_object_with_the_summarys_verdicts_and_numbers(tmp_path):
    import json

    from results_example import write_example

    from scenarios.commands.run import _json_view
    from scenarios.results import load_results

    folder = write_example(tmp_path)
    view = json.loads(json.dumps(_json_view(load_results(folder).summary, folder)))
    assert list(view) == ["results_dir", "fidelity_ok", "complete", "crosschecks", "policies", "gaps"]
    written = json.loads((folder / "summary.json").read_text())
    assert view["results_dir"] == str(folder)
    assert {key: view[key] for key in list(view)[1:]} == {key: written[key] for key in list(view)[1:]}
