"""shiftbed: controller."""
