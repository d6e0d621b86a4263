"""``python -m controller [apps...] [--ofp-port N] [--wsapi-port N] [--config FILE]``.

Runs ``ryu-manager`` in this process with the eventlet shim applied. Without
apps it runs the fabric app; with apps (module names or files) it runs the
fabric app *and* them, e.g. ``python -m controller controller.scheduler_app``.
The REST server listens on 127.0.0.1 unless ``--wsapi-host`` says otherwise.
"""

import argparse
import os
import sys

import controller.ryu_compat  # noqa: F401,I001  (before ryu)
from controller.fabric_config import CONFIG_ENV

FABRIC_APP = "controller.fabric_app"
DEFAULT_OFP_PORT = 6653
DEFAULT_WSAPI_PORT = 8080


def ryu_argv(args) -> list[str]:
    apps = [FABRIC_APP] + [app for app in args.apps if app not in (FABRIC_APP, "controller/fabric_app.py")]
    argv = apps + ["--ofp-tcp-listen-port", str(args.ofp_port),
                   "--wsapi-host", args.wsapi_host, "--wsapi-port", str(args.wsapi_port)]
    if args.ofp_host:
        argv += ["--ofp-listen-host", args.ofp_host]
    if args.verbose:
        argv.append("--verbose")
    return argv


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m controller", description=__doc__.splitlines()[2])
    parser.add_argument("apps", nargs="*", help="extra Ryu apps (module names or .py files)")
    parser.add_argument("--config", help=f"fabric config JSON (else ${CONFIG_ENV}, else defaults)")
    parser.add_argument("--ofp-port", type=int, default=DEFAULT_OFP_PORT)
    parser.add_argument("--ofp-host", default="", help="OpenFlow listen address (default: all)")
    parser.add_argument("--wsapi-port", type=int, default=DEFAULT_WSAPI_PORT)
    parser.add_argument("--wsapi-host", default="127.0.0.1")
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args(argv)
    if args.config:
        if not os.path.isfile(args.config):
            parser.error(f"--config: no such file: {args.config}")
        os.environ[CONFIG_ENV] = os.path.abspath(args.config)
    from ryu.cmd import manager

    return manager.main(args=ryu_argv(args), prog="python -m controller") or 0


if __name__ == "__main__":
    sys.exit(main())
