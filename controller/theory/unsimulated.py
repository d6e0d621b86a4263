"""A combination the fluid model could not simulate, said in one line.

``plan``, ``sweep`` and ``map`` count it as unsimulated and go on; ``run`` keeps its
measurement and records the prediction as unavailable.
"""


class Unsimulated(RuntimeError):
    """The fluid model could not simulate a policy on these jobs (a user's policy whose answers it cannot
    run, or a fault in the model): the reason in one line. ``plan``, ``sweep`` and ``map`` count such a
    combination as unsimulated and go on; ``run`` keeps its measurement (``scenarios/experiment/summary.py``)."""

    def __init__(self, policy: str, cause: BaseException | str):
        why = cause if isinstance(cause, str) else exception_line(cause)
        super().__init__(f"{policy}: the fluid model could not simulate it ({why})")
        self.policy, self.why = policy, why


def exception_line(exc: BaseException) -> str:
    """An exception in one line: ``Type: the first line of its message`` (the type alone without one)."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__
