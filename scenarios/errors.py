"""Errors that the command line turns into a one-line message and exit status 2."""


class InputError(Exception):
    """Bad user input (scenario file, command-line value, REST body).

    The message is one line that names what is wrong, e.g.
    ``two.yaml: jobs[1].period_ms: must be a positive number, got 'fast'``.
    """


class EnvironmentProblem(Exception):
    """A component the command needs is missing or broken (exit status 1).

    The message names the component and the command that fixes it.
    """


def short_repr(value) -> str:
    """``repr(value)``, cut to a readable length (a message stays one short line)."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def kind_of(value) -> str:
    """What a value is, in a message's words (``a mapping``, ``a list``, ...)."""
    return {dict: "a mapping", list: "a list", str: "a string", type(None): "nothing"}.get(type(value), type(value).__name__)
