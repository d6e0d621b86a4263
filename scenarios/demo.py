"""`shiftbed demo`: the README's main job on a sensible default.

Until the scenario runner exists this runs the environment doctor.
"""


def add_arguments(parser):
    parser.add_argument("--json", action="store_true", help="print one JSON object on stdout")


def run(args):
    from scenarios import check

    return check.run(args)
