"""Apply the Ryu shim automatically, so the stock ``ryu-manager`` script works.

``ryu-manager`` imports ``ryu.app.wsgi`` before it loads any app, so an app
module cannot apply the shim early enough. ``make install`` runs
``python -m controller.ryu_hook --install-pth``, which writes a one-line
``.pth`` file into the virtual environment; at every interpreter start it
registers an import hook that imports ``controller.ryu_compat`` just before
``ryu.app.wsgi``. Nothing else is imported at start-up (eventlet is loaded
only when Ryu is), so plain ``mininet`` scripts in the same venv are unaffected.
"""

import importlib
import importlib.abc
import sys
import sysconfig
from pathlib import Path

PTH_NAME = "shiftbed-ryu-compat.pth"
PTH_LINE = "import controller.ryu_hook as _shiftbed_ryu_hook; _shiftbed_ryu_hook.install()\n"


class _ShimBeforeRyuWsgi(importlib.abc.MetaPathFinder):
    """Applies the shim just before ``ryu.app.wsgi`` is imported, then steps aside."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname == "ryu.app.wsgi":
            importlib.import_module("controller.ryu_compat")
        return None  # the normal finders import the module itself


def install() -> None:
    """Register the import hook in this interpreter (idempotent)."""
    if not any(isinstance(finder, _ShimBeforeRyuWsgi) for finder in sys.meta_path):
        sys.meta_path.insert(0, _ShimBeforeRyuWsgi())


def install_pth(site_packages: str | None = None) -> Path:
    """Write the ``.pth`` that calls :func:`install` at every start of this venv's Python."""
    target = Path(site_packages or sysconfig.get_paths()["purelib"]) / PTH_NAME
    if not target.exists() or target.read_text() != PTH_LINE:
        target.write_text(PTH_LINE)
    return target


if __name__ == "__main__":
    if sys.argv[1:] != ["--install-pth"]:
        print("usage: python -m controller.ryu_hook --install-pth", file=sys.stderr)
        sys.exit(2)
    print(install_pth())
