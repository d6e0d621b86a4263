"""A batch's results: its table, its report and its exit status, from every scenario done.

Written when a batch ends, here or on a fleet, and by ``batch --report`` at any time: each
time from the folder alone, so the same scenarios done give the same table and report.
"""

from __future__ import annotations

from scenarios.exitcodes import OK, combined_exit_code

BATCH_PARQUET = "batch.parquet"


def write_results(folder) -> int:
    """batch.parquet, report.md and report.html from every done scenario; the batch's exit status."""
    from scenarios.batch.distribution import sweep_fractions
    from scenarios.batch.report import write_report
    from scenarios.batch.summary import summarise
    from scenarios.batch.table import batch_table
    from scenarios.files import atomic_write_bytes, give_to_sudo_user

    table = batch_table(folder)
    atomic_write_bytes(folder.root / BATCH_PARQUET, table.to_parquet(index=False))
    policies = folder.record["settings"]["policies"]
    found = summarise(table, policies)
    found["sweep"] = sweep_fractions(folder.record["settings"])
    md, page = write_report(folder.root, found, folder.record)
    give_to_sudo_user([folder.root / BATCH_PARQUET, md, page])
    a = found["agreement"]
    agreement = "n/a" if not a["n"] else f"{a['share']:.0%} of {a['n']} policy verdicts (kappa {a['kappa']:.2f})"
    print(f"batch: {found['scenarios']} of {len(folder.names)} scenarios done; the model before the run agreed "
          f"with the wire in {agreement}")
    print(f"report: {md}\n        {page} (the same, to open in a browser)")
    codes = [folder.outcome(n)["exit_code"] for n in folder.done()]
    return combined_exit_code(codes) if codes else OK
