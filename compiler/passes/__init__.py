"""promptc: passes."""
