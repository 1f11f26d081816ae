"""promptc: schemas."""
