"""promptc: analysis."""
