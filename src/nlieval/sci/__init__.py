"""nlieval.sci."""
