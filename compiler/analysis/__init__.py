"""Static analyses over parsed prompt sources (input inference for template blocks)."""
