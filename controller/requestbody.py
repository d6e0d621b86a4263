"""A REST request's body, checked: JSON parsed within bounds, and numbers, host names and addresses read
from it, each problem an :class:`ApiError` (HTTP status and a one-line message naming the field).

The scheduler's requests (``controller/scheduler.py``) are read with these.
"""

from __future__ import annotations

import ipaddress
import json
import math
import re

HOST_NAME_RE = re.compile(r"[A-Za-z0-9_.-]{1,64}")
MAX_BODY_BYTES = 1 << 20
# No request nests deeper than a few levels. Python's own parser stops only at a depth that differs by
# version (Python 3.11 near 1000, 3.13 far deeper), so the limit is shiftbed's, the same on every one.
MAX_JSON_DEPTH = 100

class ApiError(Exception):
    """A refused request: HTTP ``status`` (4xx) and a one-line ``message``."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message

    def body(self) -> dict:
        return {"error": self.message, "status": self.status}


def parse_body(raw: bytes | str | None) -> dict:
    """Request body → JSON object, or 400."""
    if raw is None or len(raw) == 0:
        raise ApiError(400, "body: expected a JSON object, got an empty body")
    if len(raw) > MAX_BODY_BYTES:
        raise ApiError(413, f"body: larger than {MAX_BODY_BYTES} bytes")
    try:
        doc = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ApiError(400, f"body: not valid JSON ({str(exc).splitlines()[0][:100]})") from None
    except RecursionError:  # arrays or objects nested deeper than the parser's recursion limit
        raise ApiError(400, "body: not valid JSON (nested too deep)") from None
    if json_depth(doc) > MAX_JSON_DEPTH:
        raise ApiError(400, "body: not valid JSON (nested too deep)")
    if not isinstance(doc, dict):
        raise ApiError(400, f"body: expected a JSON object, got {type(doc).__name__}")
    return doc


def json_depth(doc) -> int:
    """How deep arrays and objects nest in a parsed document (a scalar: 0), without recursion."""
    deepest, stack = 0, [(doc, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, (dict, list)):
            deepest = max(deepest, depth)
            stack.extend((child, depth + 1) for child in (node.values() if isinstance(node, dict) else node))
    return deepest


def refuse_unknown(doc: dict, allowed: set, where: str) -> None:
    extra = sorted(set(doc) - allowed)
    if extra:
        # repr: a field name may hold newlines or quotes, and the error stays one line
        raise ApiError(400, f"{where}: unknown field(s) {', '.join(map(repr, extra))}; "
                            f"allowed: {', '.join(sorted(allowed))}")


def read_number(doc: dict, key: str, where: str, lo: float, hi: float, *, lo_open=True,
            default=None, integer=False) -> float:
    """``doc[key]``: a finite number within ``(lo, hi]`` (``[lo, hi]`` if not ``lo_open``), or 400.

    JSON integers have no size limit and Python compares them with floats
    exactly, so an integer too large for a float is simply out of range.
    """
    if key not in doc:
        if default is not None:
            return default
        raise ApiError(400, f"{where}.{key}: missing")
    value = doc[key]
    if isinstance(value, bool) or not isinstance(value, int | float) or \
            (integer and not isinstance(value, int)):
        kind = "a whole number" if integer else "a number"
        raise ApiError(400, f"{where}.{key}: must be {kind}, got {value!r}"[:200])
    if isinstance(value, float) and not math.isfinite(value):
        raise ApiError(400, f"{where}.{key}: must be finite, got {value!r}")
    if (value <= lo if lo_open else value < lo) or value > hi:
        lo_sign = ">" if lo_open else ">="
        raise ApiError(400, f"{where}.{key}: must be {lo_sign} {lo} and <= {hi}, got {shown(value)}")
    return value


def shown(value) -> str:
    """``value`` for a message: an integer of hundreds of digits is shortened."""
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:20]}... ({len(text)} characters)"


def host_name(value, where: str) -> str:
    if not isinstance(value, str) or not HOST_NAME_RE.fullmatch(value):
        raise ApiError(400, f"{where}: must be 1-64 characters of letters, digits, '_', '-', '.', "
                            f"got {value!r}"[:200])
    return value


def ipv4_address(value, where: str) -> str:
    try:
        if not isinstance(value, str):
            raise ValueError
        return str(ipaddress.IPv4Address(value))
    except ValueError:
        raise ApiError(400, f"{where}: must be an IPv4 address string, got {value!r}"[:200]) from None
