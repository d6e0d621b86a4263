"""What ``shiftbed``'s exit status says, decided in one place.

A script that runs ``shiftbed run`` or ``demo`` must tell a measurement it can
use from one it cannot without reading the results folder: a run whose fabric
did not deliver what the scenario configured (``fidelity_ok`` false) wrote
every figure, but the figures are not the scenario's, so it does not exit 0.
"""

from __future__ import annotations

from collections.abc import Iterable

from scenarios.summary_record import SummaryRecord

OK = 0  # done; for run and demo: measured, with fidelity
FAULT = 1  # an environment problem, or a fault that cut the run short
BAD_INPUT = 2  # bad input: one line naming it, nothing built
FIDELITY_LOST = 3  # measured, results written, but the fabric lost fidelity
PREDICTION_MISSING = 4  # measured, results kept, but the model gave no prediction for some policy
INTERRUPTED = 130  # Ctrl-C, SIGTERM or SIGHUP: what was measured is kept

# For ``shiftbed --help``, and docs/reliability.md says the same.
EPILOG = f"""exit status:
  {OK}    done (run, demo: measured, with fidelity)
  {FAULT}    an environment problem or a fault (a component missing, a run cut short)
  {BAD_INPUT}    bad input: one line naming it, nothing built
  {FIDELITY_LOST}    measured and written, but fidelity lost (the report says why)
  {PREDICTION_MISSING}    results kept, prediction missing (the report says for which policy and why)
  {INTERRUPTED}  interrupted (Ctrl-C, SIGTERM, SIGHUP): what was measured is kept"""


def run_exit_code(summary: SummaryRecord) -> int:
    """A finished run's status from its summary: a fault (a policy cut short, a file not
    written) before lost fidelity, lost fidelity (the figures are not the scenario's) before a
    missing prediction (the figures are, but some policy has nothing to compare them with),
    that before success."""
    if summary.gaps or not summary.complete:
        return FAULT
    if not summary.fidelity_ok:
        return FIDELITY_LOST
    if summary.predictions_missing:
        return PREDICTION_MISSING
    return OK


def keeps_going(code: int) -> bool:
    """Whether a command that runs several scenarios (``demo``) goes on after one ended with ``code``:
    a run that measured, with fidelity or without, with every prediction or not, does not stop the next."""
    return code in (OK, FIDELITY_LOST, PREDICTION_MISSING)


def combined_exit_code(codes: Iterable[int]) -> int:
    """Several runs' statuses as one: the first that stopped the others, else lost fidelity if any run
    lost it, else a missing prediction if any run missed one, else success."""
    codes = list(codes)
    stopped = [c for c in codes if not keeps_going(c)]
    if stopped:
        return stopped[0]
    for code in (FIDELITY_LOST, PREDICTION_MISSING):
        if code in codes:
            return code
    return OK
