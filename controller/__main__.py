"""``python -m controller [apps...] [--framework NAME] [--ofp-port N] [--wsapi-port N] [--config FILE]``.

Runs the fabric app, and any extra apps, on Ryu or os-ken (``controller/framework.py``
chooses: Ryu where it runs, else os-ken; ``--framework`` or ``$SHIFTBED_CONTROLLER``
to say which). With apps (module names or files) it runs the fabric app *and* them,
e.g. ``python -m controller controller.scheduler_app``. Both listeners are on
127.0.0.1 unless ``--ofp-host`` / ``--wsapi-host`` say otherwise: the fabric's
switches connect over loopback, and any host that reaches an OpenFlow port could
otherwise join the fabric as a switch. ``--describe`` prints, as JSON, which
framework, version and hub would run, and exits.
"""

import argparse
import json
import os
import sys

from controller.fabric_config import CONFIG_ENV
from controller.framework_choice import FRAMEWORK_ENV, PACKAGES, FrameworkError

FABRIC_APP = "controller.fabric_app"
DEFAULT_OFP_PORT = 6653
DEFAULT_WSAPI_PORT = 8080
LOOPBACK = "127.0.0.1"


def manager_argv(args) -> tuple[list[str], list[str]]:
    """The apps to load and the framework's own options (Ryu's names, which os-ken keeps)."""
    apps = [FABRIC_APP] + [app for app in args.apps if app not in (FABRIC_APP, "controller/fabric_app.py")]
    argv = ["--ofp-listen-host", args.ofp_host, "--ofp-tcp-listen-port", str(args.ofp_port),
            "--wsapi-host", args.wsapi_host, "--wsapi-port", str(args.wsapi_port)]
    if args.verbose:
        argv.append("--verbose")
    return apps, argv


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m controller", description=__doc__.splitlines()[2])
    p.add_argument("apps", nargs="*", help="extra apps (module names or .py files)")
    p.add_argument("--framework", choices=tuple(PACKAGES),
                   help=f"Ryu or os-ken (default: ${FRAMEWORK_ENV}, else Ryu where it runs, else os-ken)")
    p.add_argument("--describe", action="store_true", help="print the framework, its version and hub as JSON")
    p.add_argument("--config", help=f"fabric config JSON (else ${CONFIG_ENV}, else defaults)")
    p.add_argument("--ofp-port", type=int, default=DEFAULT_OFP_PORT)
    p.add_argument("--ofp-host", default=LOOPBACK, help=f"OpenFlow listen address (default: {LOOPBACK})")
    p.add_argument("--wsapi-port", type=int, default=DEFAULT_WSAPI_PORT)
    p.add_argument("--wsapi-host", default=LOOPBACK, help=f"REST listen address (default: {LOOPBACK})")
    p.add_argument("--verbose", action="store_true")
    return p


def main(argv=None) -> int:
    cli = parser()
    args = cli.parse_args(argv)
    if args.config:
        if not os.path.isfile(args.config):
            cli.error(f"--config: no such file: {args.config}")
        os.environ[CONFIG_ENV] = os.path.abspath(args.config)
    if args.framework:
        os.environ[FRAMEWORK_ENV] = args.framework
    try:
        from controller import framework
    except FrameworkError as exc:  # raised as it chooses: one line
        print(f"python -m controller: {exc}", file=sys.stderr)
        return 2
    if args.describe:
        print(json.dumps(framework.describe()))
        return 0
    apps, options = manager_argv(args)
    return framework.run_apps(apps, options, prog="python -m controller")


if __name__ == "__main__":
    sys.exit(main())
