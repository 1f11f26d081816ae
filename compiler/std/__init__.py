"""promptc: std."""
