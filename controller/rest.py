"""The controller's REST API as a plain WSGI application: routes in, JSON out.

The fabric and scheduler apps register their routes here; whichever OpenFlow
framework runs them (``controller/framework.py``) serves this one callable
on one port. It needs no framework itself, so the routing, the JSON answers
and the refusals are the same under Ryu and os-ken and are unit-tested
without either.

A handler takes the request body (bytes) and the path's ``{name}`` fields as
keyword arguments and returns ``(status, body_dict)``. Every answer is one
JSON object: an unknown path is 404, a known path with another method 405
(with ``Allow``), a body past :data:`MAX_READ_BYTES` 413 unread, and an
exception in a handler 500 — the server keeps serving.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from http import HTTPStatus

Handler = Callable[..., tuple[int, dict]]
# Bodies are read whole up to this size, so the scheduler's own 1 MiB rule answers 413 with its
# message; anything larger is refused here without reading it.
MAX_READ_BYTES = 8 << 20

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Route:
    method: str
    template: str
    pattern: re.Pattern
    handler: Handler


def compile_template(template: str) -> re.Pattern:
    """``/shiftbed/jobs/{name}`` → a pattern whose groups are the ``{...}`` fields (one path segment each)."""
    parts = re.split(r"\{(\w+)\}", template)
    regex = "".join(re.escape(part) if i % 2 == 0 else f"(?P<{part}>[^/]+)" for i, part in enumerate(parts))
    return re.compile(regex + r"\Z")


class RestApi:
    """Routes registered by the apps, dispatched as a WSGI application."""

    def __init__(self):
        self.routes: list[Route] = []

    def add(self, methods: str | tuple[str, ...], template: str, handler: Handler) -> None:
        for method in (methods,) if isinstance(methods, str) else methods:
            self.routes.append(Route(method.upper(), template, compile_template(template), handler))

    def answer(self, method: str, path: str, body: bytes) -> tuple[int, dict, dict]:
        """``(status, body, extra headers)`` for one request."""
        allowed = []
        for route in self.routes:
            match = route.pattern.match(path)
            if match is None:
                continue
            if route.method != method:
                allowed.append(route.method)
                continue
            try:
                status, doc = route.handler(body, **match.groupdict())
            except Exception as exc:  # a bug must not take the controller down
                log.exception("REST handler for %s %s failed", method, route.template)
                return 500, {"error": f"internal error: {type(exc).__name__}: {exc}"[:300], "status": 500}, {}
            return status, doc, {}
        if allowed:
            return 405, _refusal(405, f"{method} {path}: allowed methods are {', '.join(sorted(set(allowed)))}"), \
                {"Allow": ", ".join(sorted(set(allowed)))}
        return 404, _refusal(404, f"no such resource: {path}"), {}

    def __call__(self, environ, start_response):
        method = environ.get("REQUEST_METHOD", "GET").upper()
        path = environ.get("PATH_INFO", "") or "/"
        try:
            length = int(environ.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = -1
        if length < 0:
            status, doc, headers = 400, _refusal(400, "Content-Length: not a whole number of bytes"), {}
        elif length > MAX_READ_BYTES:
            status, doc, headers = 413, _refusal(413, f"body: larger than {MAX_READ_BYTES} bytes"), \
                {"Connection": "close"}
        else:
            body = environ["wsgi.input"].read(length) if length else b""
            status, doc, headers = self.answer(method, path, body)
        payload = json.dumps(doc).encode()
        start_response(f"{status} {_phrase(status)}",
                       [("Content-Type", "application/json; charset=UTF-8"),
                        ("Content-Length", str(len(payload))), *headers.items()])
        return [payload]


def _refusal(status: int, message: str) -> dict:
    return {"error": message, "status": status}


def _phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Unknown"
