"""``shiftbed report RESULTS_DIR``: redraw every plot, report.html and report.md from a results folder alone;
with ``--repredict``, predict the run again with the model of the code installed now."""

from __future__ import annotations

import json

from scenarios import policyfiles
from scenarios.report.draw import draw_report


def add_arguments(parser):
    parser.add_argument("results_dir", metavar="RESULTS_DIR",
                        help="a folder written by `shiftbed run`, e.g. results/<scenario>/<timestamp>")
    parser.add_argument("--repredict", action="store_true",
                        help="feed the folder's own measurements to the model of this code and print each "
                             "job's measured, recorded and new prediction (the folder is only read)")
    policyfiles.add_argument(parser)
    parser.add_argument("--json", action="store_true", help="print one JSON object on stdout")


def run(args) -> int:
    policyfiles.load(args.policy_file)  # a run of a user's policy is re-predicted with it
    if args.repredict:
        return _repredict(args)
    paths = draw_report(args.results_dir)
    report_path, html_path, plot_paths = paths[-1], paths[-2], paths[:-2]
    if args.json:
        print(json.dumps({"results_dir": str(report_path.parent), "report": str(report_path),
                          "html": str(html_path), "plots": [str(p) for p in plot_paths]}))
    else:
        print(report_path)
    return 0


def _repredict(args) -> int:
    from scenarios.experiment.repredict import WITHIN_PCT, accuracy, repredict

    rows, notes = repredict(args.results_dir)
    now = accuracy([r.error_pct for r in rows])
    recorded = accuracy([r.recorded_error_pct for r in rows if r.recorded_error_pct is not None])
    if args.json:
        print(json.dumps({"results_dir": str(args.results_dir), "jobs": [r.to_dict() for r in rows],
                          "accuracy": now, "recorded_accuracy": recorded, "notes": notes}))
        return 0
    print(f"{'policy':<10} {'job':<12} {'measured ms':>12} {'recorded ms':>12} {'now ms':>10} "
          f"{'error now':>10} {'recorded':>9}")
    for r in rows:
        recorded_ms = f"{r.recorded_ms:.1f}" if r.recorded_ms else "-"
        recorded_err = f"{r.recorded_error_pct:+.1f} %" if r.recorded_error_pct is not None else "-"
        print(f"{r.policy:<10} {r.job:<12} {r.measured_ms:>12.1f} {recorded_ms:>12} {r.predicted_ms:>10.1f} "
              f"{r.error_pct:>+8.1f} % {recorded_err:>9}")
    for label, acc in (("now", now), ("recorded", recorded)):
        if acc["pairs"]:
            print(f"{label}: mean |error| {acc['mean_abs_error_pct']:.2f} %, {acc['within_goal']} of {acc['pairs']} "
                  f"within {WITHIN_PCT:g} %")
    for note in notes:
        print(f"note: {note}")
    return 0
