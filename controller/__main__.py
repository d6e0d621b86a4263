"""``python -m controller [apps...] [--ofp-port N] [--wsapi-port N] [--config FILE]``.

Runs ``ryu-manager`` in this process with the eventlet shim applied. Without
apps it runs the fabric app; with apps (module names or files) it runs the
fabric app *and* them, e.g. ``python -m controller controller.scheduler_app``.
Both listeners are on 127.0.0.1 unless ``--ofp-host`` / ``--wsapi-host`` say
otherwise: the fabric's switches connect over loopback, and any host that
reaches an OpenFlow port could otherwise join the fabric as a switch.
"""

import argparse
import os
import sys

import controller.ryu_compat  # noqa: F401,I001  (before ryu)
from controller.fabric_config import CONFIG_ENV

FABRIC_APP = "controller.fabric_app"
DEFAULT_OFP_PORT = 6653
DEFAULT_WSAPI_PORT = 8080
LOOPBACK = "127.0.0.1"


def ryu_argv(args) -> list[str]:
    """The ``ryu-manager`` command line (Ryu 4.34's options) for parsed ``args``."""
    apps = [FABRIC_APP] + [app for app in args.apps if app not in (FABRIC_APP, "controller/fabric_app.py")]
    argv = apps + ["--ofp-listen-host", args.ofp_host, "--ofp-tcp-listen-port", str(args.ofp_port),
                   "--wsapi-host", args.wsapi_host, "--wsapi-port", str(args.wsapi_port)]
    if args.verbose:
        argv.append("--verbose")
    return argv


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m controller", description=__doc__.splitlines()[2])
    p.add_argument("apps", nargs="*", help="extra Ryu apps (module names or .py files)")
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
    from ryu.cmd import manager

    return manager.main(args=ryu_argv(args), prog="python -m controller") or 0


if __name__ == "__main__":
    sys.exit(main())
