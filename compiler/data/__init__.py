"""promptc: data."""
