"""shiftbed: topo."""
