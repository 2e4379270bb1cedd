"""nlieval.metainference."""
