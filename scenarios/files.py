"""Files written safely: whole or not at all, as plain JSON, and handed to the user who ran ``sudo``.

What every writer of a results folder, a batch's folder or a report uses; nothing here knows what
the files hold.
"""

from __future__ import annotations

import json
import math
import os
import uuid
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so that a reader sees the old file or the new one, never half."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        with open(tmp, "xb") as handle:  # ordinary permissions (umask), unlike mkstemp's 0600
            handle.write(data)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def json_text(obj: Any) -> str:
    """``obj`` as indented, strict JSON text (see :func:`_json_ready`), ending in a newline."""
    return json.dumps(_json_ready(obj), indent=2, allow_nan=False) + "\n"


def _json_ready(value: Any) -> Any:
    """Plain JSON: NaN/inf become null (strict parsers reject them), NumPy scalars become Python."""
    if isinstance(value, Mapping):
        return {str(k): _json_ready(v) for k, v in value.items()}
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if isinstance(value, list | tuple):
        return [_json_ready(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def give_to_sudo_user(paths: Iterable[Path]) -> None:
    """Under ``sudo``, hand ``paths`` to the invoking user (else nothing), so they can read and redraw them."""
    uid, gid = os.environ.get("SUDO_UID"), os.environ.get("SUDO_GID")
    if os.geteuid() != 0 or not uid or not gid:
        return
    for path in paths:
        os.chown(path, int(uid), int(gid), follow_symlinks=False)
