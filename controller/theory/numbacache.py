"""The compiled model's machine code on disk, kept from outliving the source it was compiled from.

numba keys each compiled function's cache (``cache=True``, files beside the modules in ``__pycache__``) by
the source file of that function alone. A function that calls into another module keeps the callee's
machine code as it was when it was compiled: edit ``fastfluid.py`` and ``freechunk.py``'s cached loop still
runs the old fluid model, and once loaded it lends that old code to every other caller in the process. So
the cache of this package is tied to all of its sources at once: :func:`drop_stale` compares a digest of
every module here with the one written beside the cache and, where they differ, removes the cache files
before numba loads any (they are compiled again on first use, or by ``make install``).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent
STAMP_NAME = "numba-sources.sha256"  # the sources' digest, written beside the cache


def sources_digest(package: Path = PACKAGE) -> str:
    """A digest of every module of ``package`` (names and contents)."""
    digest = hashlib.sha256()
    for path in sorted(package.glob("*.py")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def drop_stale(package: Path = PACKAGE) -> bool:
    """Remove the numba files (``*.nbi``, ``*.nbc``) of ``package``'s ``__pycache__`` if they may predate
    its sources; True if it removed them. A cache it cannot write (another user's) is left as it is."""
    cache = package / "__pycache__"
    stamp = cache / STAMP_NAME
    digest = sources_digest(package)
    try:
        if stamp.read_text() == digest:
            return False
    except OSError:
        pass
    try:
        cache.mkdir(exist_ok=True)
        for path in [*cache.glob("*.nbi"), *cache.glob("*.nbc")]:
            path.unlink(missing_ok=True)
        stamp.write_text(digest)
    except OSError:
        return False
    return True
