"""``shiftbed explore [SCENARIO]``: the classroom explorer, a page on this machine that answers every change.

A Bokeh server (``scenarios/explore/page.py``) on ``127.0.0.1`` at a free port
(``--port``; ``--host`` to open it wider, with a warning), opened in the default
browser where there is a display. It reads no file of yours but the scenario
named here and writes only where "save as scenario" is pointed, inside the
current folder. No root needed. ``docs/explore.md`` says what the page shows.
"""

from __future__ import annotations

import ipaddress
import os
import socket
import sys
import webbrowser
from pathlib import Path

from scenarios.errors import InputError

DEFAULT_SCENARIO = Path(__file__).resolve().parents[1] / "classroom.yaml"
LOOPBACK = "127.0.0.1"


def add_arguments(parser) -> None:
    parser.add_argument("scenario", nargs="?", default=str(DEFAULT_SCENARIO),
                        help="scenario YAML file to start from (default: scenarios/classroom.yaml)")
    parser.add_argument("--port", type=int, default=0, help="port to serve on (default: a free one, printed)")
    parser.add_argument("--host", default=LOOPBACK,
                        help="address to listen on (default 127.0.0.1: this machine only; another address lets "
                             "others on the network reach the page)")
    parser.add_argument("--no-browser", action="store_true", help="do not open the page in a browser")


def check_host(host: str) -> bool:
    """Whether ``host`` is a loopback address; InputError if it is no address or name at all."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        try:
            socket.getaddrinfo(host, None)
        except OSError:
            raise InputError(f"--host: not an address or a known name: {host!r}") from None
        return False


def free_port(host: str) -> int:
    """A port nobody listens on at ``host`` (the OS's choice)."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def has_display() -> bool:
    """A graphical browser can open here (a terminal-only machine would get a text browser)."""
    return sys.platform in ("darwin", "win32") or bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def run(args) -> int:
    if not 0 <= args.port <= 65535:
        raise InputError(f"--port: must be 0 (a free one) to 65535, got {args.port}")
    loopback = check_host(args.host)
    from scenarios.explore import inputs

    start = inputs.load(args.scenario)
    from bokeh.application import Application
    from bokeh.application.handlers.function import FunctionHandler
    from bokeh.server.server import Server

    from scenarios.explore import page

    try:
        port = args.port or free_port(args.host)
        root = Path.cwd()
        origins = [f"{LOOPBACK}:{port}", f"localhost:{port}"] if loopback else [f"*:{port}"]
        server = Server({"/": Application(FunctionHandler(lambda doc: page.document(doc, start, root)))},
                        address=args.host, port=port, allow_websocket_origin=origins, num_procs=1)
    except OSError as exc:
        raise InputError(f"--port: cannot listen on {args.host}:{args.port}: {exc.strerror or exc}") from None
    server.start()
    shown_host = f"[{args.host}]" if ":" in args.host else args.host
    url = f"http://{shown_host}:{port}/"
    if not loopback:
        print(f"shiftbed explore: warning: listening on {args.host}: anyone who can reach this machine can use "
              "the page and save scenarios into this folder", file=sys.stderr)
    print(f"shiftbed explore: serving {url} (Ctrl-C to stop)", flush=True)
    if not args.no_browser and has_display():
        server.io_loop.add_callback(webbrowser.open, url)
    try:
        server.io_loop.start()
    except KeyboardInterrupt:
        print("shiftbed explore: stopped", file=sys.stderr)
    finally:
        server.stop()
    return 0
