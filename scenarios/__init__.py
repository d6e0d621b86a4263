"""shiftbed: scenarios."""
