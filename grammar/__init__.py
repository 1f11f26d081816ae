"""The promptc grammar (`prompt.lark`), shipped inside the wheel as package data."""
