"""shiftbed: scenarios."""

__version__ = "0.1.0"  # the one place the release is set (pyproject.toml reads it)
