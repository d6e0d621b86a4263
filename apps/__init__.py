"""shiftbed: apps."""
