"""The one place that knows which OpenFlow framework runs the controller: Ryu or os-ken.

os-ken is OpenStack's maintained continuation of Ryu: the same API under the
package ``os_ken``. Ryu 4.34 (its last release) runs on Python 3.11 only, with
an eventlet hub; os-ken runs on 3.10-3.13 and its 4.x hub uses native threads
by default (``OSKEN_HUB_TYPE``). The fabric and scheduler apps import what they
need from here, so they are written once and run on either.

Which one is chosen by ``controller/framework_choice.py`` (importable without
either framework); importing this module imports the chosen one.

What differs between the hubs is kept here too: how to run blocking work
without stalling the hub (:func:`run_blocking`), a sleep that does not yield
(:data:`precise_sleep`), and how the REST API is served (:class:`RestService`).
"""

from __future__ import annotations

import functools
import importlib
import logging
import os
import socket
import sys
import time

from oslo_config import cfg as oslo_cfg

from controller.framework_choice import PACKAGES, choose
from controller.rest import RestApi

DEFAULT_REST_HOST = "127.0.0.1"
DEFAULT_REST_PORT = 8080

log = logging.getLogger(__name__)

NAME = choose()
PACKAGE = PACKAGES[NAME]
# os-ken's hub: its default is native threads; shiftbed runs it on eventlet unless told otherwise,
# which kept the gate's edges as close to Ryu's as native threads did not (docs/gate.md, "Ryu and os-ken").
OSKEN_DEFAULT_HUB = "eventlet"
if NAME == "ryu":
    import controller.ryu_compat  # noqa: F401  (the eventlet shim, before Ryu)
else:
    os.environ.setdefault("OSKEN_HUB_TYPE", OSKEN_DEFAULT_HUB)  # read once, as os_ken.lib.hub is imported


def _module(path: str):
    return importlib.import_module(f"{PACKAGE}.{path}")


app_manager = _module("base.app_manager")
cfg = _module("cfg")
hub = _module("lib.hub")
ofp_event = _module("controller.ofp_event")
_handler = _module("controller.handler")
ofproto_v1_3 = _module("ofproto.ofproto_v1_3")

BaseApp = app_manager.RyuApp if NAME == "ryu" else app_manager.OSKenApp
set_ev_cls = _handler.set_ev_cls
CONFIG_DISPATCHER = _handler.CONFIG_DISPATCHER
MAIN_DISPATCHER = _handler.MAIN_DISPATCHER
DEAD_DISPATCHER = _handler.DEAD_DISPATCHER
HUB = getattr(hub, "HUB_TYPE", "eventlet")
OFP_HANDLER_APP = f"{PACKAGE}.controller.ofp_handler"


@functools.cache
def version() -> str:
    if NAME == "ryu":
        return importlib.import_module("ryu").version
    from importlib.metadata import version as dist_version

    return dist_version("os-ken")


def describe() -> dict:
    """What ``shiftbed check`` and a run's environment.json record of the controller."""
    return {"framework": NAME, "version": version(), "hub": HUB,
            "python": ".".join(map(str, sys.version_info[:3]))}


# On a native hub every task is a thread, and a thread that has work waits for the interpreter
# lock up to the switch interval (5 ms by default) while another runs Python: an edge due now
# could leave up to that late. 0.5 ms bounds the wait below the gate's edge error.
NATIVE_SWITCH_INTERVAL_S = 0.0005

if HUB == "eventlet":
    from eventlet import patcher, tpool

    precise_sleep = patcher.original("time").sleep  # blocks the hub for the last ms; burns no CPU

    def run_blocking(fn, *args):
        """Run CPU-bound ``fn`` on a native thread, so the eventlet hub keeps answering."""
        return tpool.execute(fn, *args)
else:
    precise_sleep = time.sleep

    def run_blocking(fn, *args):
        """Every hub task is already a native thread: the interpreter hands the GIL over by itself."""
        return fn(*args)


# -- the REST API ---------------------------------------------------------------------------

def _register_rest_options() -> None:
    """``--wsapi-host``/``--wsapi-port``, Ryu's names; where Ryu is imported it has registered them already."""
    if "wsapi_host" in cfg.CONF:
        return
    try:
        cfg.CONF.register_cli_opts([
            oslo_cfg.StrOpt("wsapi-host", default=DEFAULT_REST_HOST, help="REST API listen address"),
            oslo_cfg.IntOpt("wsapi-port", default=DEFAULT_REST_PORT, help="REST API listen port"),
        ])
    except oslo_cfg.ArgsAlreadyParsedError:  # an app loaded after the options were parsed
        pass


_register_rest_options()


def _rest_address() -> tuple[str, int]:
    try:
        return cfg.CONF.wsapi_host, cfg.CONF.wsapi_port
    except oslo_cfg.NoSuchOptError:
        return DEFAULT_REST_HOST, DEFAULT_REST_PORT


class RestService(RestApi):
    """The apps' shared REST context (``_CONTEXTS = {"rest": RestService}``): one server, one port.

    Created once by the app manager before the apps, it binds at once (a busy
    port fails the start, not the first request) and serves from a hub task:
    eventlet's WSGI server under an eventlet hub (a green thread per request),
    the standard library's threading WSGI server under a native hub.
    """

    def __init__(self):
        super().__init__()
        host, port = _rest_address()
        if HUB == "eventlet":
            server = hub.WSGIServer((host, port), self)
            serve = server.serve_forever
        else:
            server = _threading_wsgi_server(host, port, self)
            serve = server.serve_forever
        self.address = (host, port)
        log.info("REST API starting up on http://%s:%d (%s %s, %s hub)", host, port, NAME, version(), HUB)
        self.thread = hub.spawn(serve)


def _threading_wsgi_server(host: str, port: int, app):
    from socketserver import ThreadingMixIn
    from wsgiref.simple_server import WSGIRequestHandler, WSGIServer

    class QuietHandler(WSGIRequestHandler):
        def log_message(self, format, *args):  # noqa: A002  (the standard library's name)
            log.debug("REST %s %s", self.address_string(), format % args)

    class Server(ThreadingMixIn, WSGIServer):
        daemon_threads = True
        address_family = socket.AF_INET6 if ":" in host else socket.AF_INET

    server = Server((host, port), QuietHandler)
    server.set_app(app)
    return server


# -- running apps -------------------------------------------------------------------------------

def run_apps(apps: list[str], argv: list[str], prog: str) -> int:
    """Load ``apps`` with the OpenFlow handler and run them until interrupted, as ``ryu-manager`` does."""
    framework_log = _module("log")  # these register their command-line options on import,
    _module("controller.controller")  # which must come before the options are parsed
    cfg.CONF(args=argv, prog=prog, project=PACKAGE, default_config_files=[])
    framework_log.init_log()
    if HUB == "eventlet":
        hub.patch(thread=True)
    else:
        sys.setswitchinterval(NATIVE_SWITCH_INTERVAL_S)
    manager = app_manager.AppManager.get_instance()
    manager.load_apps([*apps, OFP_HANDLER_APP])
    contexts = manager.create_contexts()
    services = list(manager.instantiate_apps(**contexts))
    try:
        hub.joinall(services)
    except KeyboardInterrupt:
        pass
    finally:
        manager.close()
    return 0
