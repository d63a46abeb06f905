"""The serving pipeline."""
