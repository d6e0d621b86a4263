"""The controller's frameworks installed here, for the tests that run once under each.

Ryu and os-ken on Python 3.11, os-ken alone on 3.12 and later; the first is the default.
Nothing here imports either framework (a test process that builds Mininet networks must
not load eventlet).
"""

from controller.framework_choice import FRAMEWORK_ENV, installed

CONTROLLER_FRAMEWORKS = installed()


def controller_env(framework: str) -> dict:
    """The environment that makes ``python -m controller`` run ``framework``."""
    return {FRAMEWORK_ENV: framework}
