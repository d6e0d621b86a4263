"""The model: schedules, the fluid model, sweeps and the map, in Python and compiled."""

from controller.theory.numbacache import drop_stale

drop_stale()  # before numba loads any compiled function from disk (numbacache.py says why)
