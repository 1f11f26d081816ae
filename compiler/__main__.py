"""`python -m promptc`: the same command as `promptc`."""

from .cli import run

if __name__ == "__main__":  # pragma: no cover - exercised by tests/test_cli.py through a subprocess
    run()
