"""``shiftbed batch OUT --scenarios N``: a sample of the sweep's scenarios, each predicted, then run on the fabric.

Thin adapter. Everything is checked first (exit 2, one line, nothing built or
written): the sampling arguments as ``sweep`` reads them, the fabric file,
the policies, and every drawn scenario as ``run`` checks a file. Then the
batch folder is created whole (``scenarios/batch/folder.py``) and each
scenario runs in turn through the session API, as ``run`` runs it
(``scenarios/batch/local.py``): the model's prediction is written before its
first policy, its results folder inside the scenario's; a run that lost
fidelity is run once more, then kept. ``--resume OUT`` runs what is not done.
At the end: ``batch.parquet``, ``report.md`` and ``report.html``
(docs/batch.md). With ``--dask-scheduler`` the scenarios run on a fleet's
workers instead (``scenarios/batch/fleet.py``).
"""

from __future__ import annotations

from apps.jobmodel import TRANSPORTS
from scenarios.batch import fleet
from scenarios.batch.local import run_batch
from scenarios.batch.results import write_results
from scenarios.errors import InputError
from scenarios.experiment.session import preflight, require_root
from scenarios.options import MIX_HELP
from scenarios.shipped import DEMO_SCENARIOS

DEFAULTS = {"jobs": "2", "period_ms": "100:1000", "comm_frac": "0.1:0.5", "quantum_ms": "1", "seed": 0,
            "zoo": False, "zoo_link_mbps": None, "mix": None, "fabric": None, "policy": "none,shift,gate,priority",
            "transport": None, "duration": "12", "scenarios": None, "target_se_pct": None, "calibrate_each": False}


def add_arguments(parser) -> None:
    parser.add_argument("out", nargs="?", metavar="OUT", help="the batch's folder (must not exist)")
    parser.add_argument("--resume", metavar="DIR", help="run what a batch in DIR has not done (no other option "
                                                          "but --dask-scheduler)")
    parser.add_argument("--report", metavar="DIR", help="write the table and the report of what a batch in DIR "
                                                          "has done so far, running nothing (no root needed)")
    parser.add_argument("--scenarios", type=int, help="how many scenarios to draw (required)")
    parser.add_argument("--jobs", help="number(s) of jobs per scenario, taking turns, e.g. 2,3 (default 2)")
    parser.add_argument("--period-ms", help="LO:HI, periods uniform over these integers (ms; default 100:1000)")
    parser.add_argument("--comm-frac", help="lo:hi, comm_ms = U(lo, hi) × period_ms (default 0.1:0.5)")
    parser.add_argument("--quantum-ms", help="the schedule's quantum, one value (ms; default 1)")
    parser.add_argument("--seed", type=int, help="the sweep's seed: the same draws as `shiftbed sweep --seed` "
                                                 "(default 0)")
    parser.add_argument("--zoo", action="store_true", default=None, help="draw jobs from the model zoo")
    parser.add_argument("--zoo-link-mbps", type=float, help="link rate the zoo models are timed at (--zoo)")
    parser.add_argument("--mix", type=float, metavar="SHARE", help=MIX_HELP)
    parser.add_argument("--fabric", metavar="FILE", help=f"a scenario file to take the fabric from (default "
                                                         f"scenarios/{DEMO_SCENARIOS[0]}, the demo's)")
    parser.add_argument("--policy", help=f"comma-separated policies, `none` among them (default {DEFAULTS['policy']})")
    parser.add_argument("--transport", choices=TRANSPORTS, help="how the jobs' flows travel (default: as `run` "
                                                                "picks on this machine)")
    parser.add_argument("--duration", help=f"seconds each policy runs (default {DEFAULTS['duration']}; with "
                                           "--target-se-pct, the most it runs)")
    parser.add_argument("--target-se-pct", metavar="P", help="stop each policy once every job's mean iteration "
                        "time has a standard error of at most P %% of it (as `run --target-se-pct`)")
    parser.add_argument("--calibrate-each", action="store_true", default=None,
                        help="calibrate every scenario's jobs anew (default: a job shape measured alone on this "
                             "fabric earlier in the batch is reused, docs/batch.md)")
    fleet.add_argument(parser)


def _given(args) -> list[str]:
    return [f"--{k.replace('_', '-')}" for k in DEFAULTS if getattr(args, k) is not None]


def run(args) -> int:
    from scenarios.batch.folder import BatchFolder
    from scenarios.batch.settings import check_new_out, plan_batch

    if args.report is not None:
        if args.resume is not None or args.out is not None or _given(args) or args.dask_scheduler is not None:
            raise InputError("--report: reads the batch's folder alone; give no other option or OUT")
        return write_results(BatchFolder.open(args.report, "--report"))
    if args.resume is not None:
        if args.out is not None or _given(args):
            extra = args.out or _given(args)[0]
            raise InputError(f"--resume: takes the batch's own settings; give no other option (but "
                             f"--dask-scheduler) or OUT ({extra})")
        folder = BatchFolder.open(args.resume)
        if args.dask_scheduler is not None:
            return fleet.run_fleet(folder, fleet.connect(args.dask_scheduler))
        require_root("shiftbed batch")
        return run_batch(folder)
    if args.out is None:
        raise InputError("OUT: give the batch's folder (or --resume DIR)")
    if args.scenarios is None:
        raise InputError("--scenarios: say how many scenarios to draw")
    values = {k: (DEFAULTS[k] if getattr(args, k) is None else getattr(args, k)) for k in DEFAULTS}
    check_new_out(args.out)
    record, texts = plan_batch(values, args.out)  # InputError for anything wrong, nothing written
    if args.dask_scheduler is not None:  # the fleet's workers build the fabrics (batch/fleet.py)
        on = fleet.connect(args.dask_scheduler)
        return fleet.run_fleet(BatchFolder.create(args.out, record, texts), on)
    require_root("shiftbed batch")
    preflight()
    folder = BatchFolder.create(args.out, record, texts)
    return run_batch(folder)


