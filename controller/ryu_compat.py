"""The eventlet shim Ryu 4.34 needs on Python 3.11: ``import controller.ryu_compat`` before Ryu.

Ryu 4.34 does ``from eventlet.wsgi import ALREADY_HANDLED``; the eventlet that
imports on Python 3.11 (0.33.3) no longer has it. Ryu only uses it as a
sentinel, so a fresh ``object()`` is enough (docs/platform.md). Importing this
module applies the shim (idempotent). The stock ``ryu-manager`` script imports
``ryu.app.wsgi`` before any app, so it needs ``controller/ryu_hook.py`` too.
"""

import eventlet.wsgi


def apply() -> None:
    """Give ``eventlet.wsgi`` the ``ALREADY_HANDLED`` sentinel Ryu imports."""
    if not hasattr(eventlet.wsgi, "ALREADY_HANDLED"):
        eventlet.wsgi.ALREADY_HANDLED = object()


apply()
