"""The ``shiftbed`` command: one entry point, one module per subcommand.

Each subcommand module exposes ``add_arguments(parser)`` and ``run(args) -> int``.
Modules are imported only when their subcommand runs, so ``shiftbed plan`` never
pays for Mininet or Ryu. Bad input (``InputError``) is one line on stderr and
exit status 2; a missing component (``EnvironmentProblem``) is exit status 1;
Ctrl-C is 130 (``scenarios/console.py``). What each status means: ``scenarios/exitcodes.py``.

The terminal stays quiet: warnings, and the stage lines of a run
(``scenarios/experiment/progress.py``); ``-v`` adds each module's detail,
``-vv`` everything down to the libraries' debug output.
"""

import argparse
import importlib
import os
import sys

from controller.framework_choice import PACKAGES
from scenarios import exitcodes
from scenarios.console import configure_logging, exit_status

SUBCOMMANDS = {
    "check": ("scenarios.commands.check", "environment doctor: OVS, datapath, controller framework, iperf3, a tiny fabric"),
    "plan": ("scenarios.commands.plan", "theory only: LCM, gcd feasibility, shifts, predicted iteration times"),
    "sweep": ("scenarios.commands.sweep", "theory over many job combinations: how often does `shift` help?"),
    "map": ("scenarios.commands.map", "theory: which policy wins, and by how much, one factor at a time"),
    "explore": ("scenarios.commands.explore", "a page in the browser: change a period or a burst, see every policy's gain"),
    "trace": ("scenarios.commands.trace", "a profiler trace -> the job's phases, its busy pattern, a scenario job"),
    "run": ("scenarios.commands.run", "full emulation of one scenario under one or more policies"),
    "batch": ("scenarios.commands.batch", "a sample of the sweep's scenarios on the fabric, each predicted before it runs"),
    "report": ("scenarios.commands.report", "redraw plots and report.md from a results folder"),
    "compare": ("scenarios.commands.compare", "one table and one plot across runs, scenarios and policies"),
    "clean": ("scenarios.commands.clean", "remove what a crashed run left behind (shiftbed's own things only)"),
    "demo": ("scenarios.commands.demo", "run the demo scenarios and print where the reports are"),
}

VERBOSE_COMMANDS = ("run", "demo", "check", "batch")  # the subcommands that build a fabric: they have -v and --controller


class _Parser(argparse.ArgumentParser):
    """argparse that reports bad arguments in one line (no multi-line usage dump)."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")


class _Version(argparse.Action):
    """``--version``: the release and the commit (``scenarios/version.py``), asked only when given."""

    def __init__(self, option_strings, dest, **kwargs):
        super().__init__(option_strings, dest, nargs=0, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        from scenarios.version import version_text

        print(version_text())
        parser.exit(exitcodes.OK)


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = _Parser(prog="shiftbed", description="shiftbed: DLT jobs sharing a network, in theory and on an emulated SDN fabric",
                     epilog=exitcodes.EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action=_Version, help="print the version and the git commit, then exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser, required=True)
    chosen = argv[0] if argv and argv[0] in SUBCOMMANDS else None
    for name, (module_name, help_text) in SUBCOMMANDS.items():
        sub_parser = sub.add_parser(name, help=help_text, description=help_text)
        if name == chosen:  # only the chosen subcommand's module is imported
            importlib.import_module(module_name).add_arguments(sub_parser)
            if name in VERBOSE_COMMANDS:
                sub_parser.add_argument("-v", "--verbose", action="count", default=0,
                                        help="more detail on stderr (-vv: debug, libraries included)")
                sub_parser.add_argument("--controller", choices=tuple(PACKAGES),
                                        help="the controller's framework (default: $SHIFTBED_CONTROLLER, else Ryu "
                                             "where it runs, else os-ken)")
    args = parser.parse_args(argv)
    configure_logging(getattr(args, "verbose", 0))
    if getattr(args, "controller", None):
        from controller.framework_choice import FRAMEWORK_ENV, FrameworkError, choose

        try:
            os.environ[FRAMEWORK_ENV] = choose(args.controller)  # the controller process inherits it
        except FrameworkError as exc:
            print(f"shiftbed {args.command}: --controller: {exc}", file=sys.stderr)
            return exitcodes.BAD_INPUT
    module = importlib.import_module(SUBCOMMANDS[args.command][0])
    try:
        return exit_status(args.command, lambda: module.run(args))
    except BrokenPipeError:
        # `shiftbed plan ... | head`: the reader left. Whatever the command saved
        # is saved; point stdout at /dev/null so the exit flush cannot fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


if __name__ == "__main__":
    sys.exit(main())
