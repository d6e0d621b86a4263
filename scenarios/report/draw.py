"""A results folder's report, drawn in one step: every plot, report.html and report.md.

The runner calls :func:`draw_report` at the end of a run; a user calls
``shiftbed report`` later to redraw without re-running (CS244 style: data in a
folder, a separate step draws).
"""

from __future__ import annotations

from pathlib import Path

from scenarios.errors import InputError
from scenarios.files import atomic_write_bytes
from scenarios.report import html, plots
from scenarios.report.document import render_report
from scenarios.results import PLOTS_DIR, REPORT_FILE, load_results


def draw_report(results_dir: str | Path) -> list[Path]:
    """Draw every plot, report.html and report.md into the folder; returns [plots..., report.html, report.md].

    Raises :class:`InputError` when the folder is not a shiftbed results folder.
    """
    results = load_results(results_dir)
    try:
        plot_paths = plots.draw_all(results, results.path / PLOTS_DIR)
        html_path = html.draw_html(results, plot_paths)
        report_path = results.path / REPORT_FILE
        text = render_report(results, [p.name for p in plot_paths])
        atomic_write_bytes(report_path, text.encode())
    except PermissionError as exc:
        raise InputError(f"{results.path}: cannot write the report there ({exc.strerror})") from None
    return [*plot_paths, html_path, report_path]
