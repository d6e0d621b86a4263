"""``shiftbed report RESULTS_DIR``: redraw every plot and report.md from a results folder alone."""

from __future__ import annotations

import json

from scenarios.report.document import draw_report


def add_arguments(parser):
    parser.add_argument("results_dir", metavar="RESULTS_DIR",
                        help="a folder written by `shiftbed run`, e.g. results/<scenario>/<timestamp>")
    parser.add_argument("--json", action="store_true", help="print one JSON object on stdout")


def run(args) -> int:
    paths = draw_report(args.results_dir)
    report_path, plot_paths = paths[-1], paths[:-1]
    if args.json:
        print(json.dumps({"results_dir": str(report_path.parent), "report": str(report_path),
                          "plots": [str(p) for p in plot_paths]}))
    else:
        print(report_path)
    return 0
