"""One declaration per configuration option (`Config` in compiler/facts/config.py): the file's coercion,
the incremental cache's fingerprint, the command-line flags with click's `default_map`, and the
table in docs/configuration.md all follow from it."""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
import sys
from pathlib import Path

from promptc.cli.common import Settings
from promptc.facts.config import Config, options, with_docs_table

from .conftest import ROOT


def test_the_docs_table_is_the_declarations() -> None:
    doc = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    assert with_docs_table(doc) == doc, "run `python -m promptc.facts.config docs/configuration.md`"
    for o in options():
        assert f"| `{o.name}` |" in doc


def test_every_field_but_the_origin_is_a_declared_option() -> None:
    """(The origin: where the file was found, its project folder, where it sets each path.)"""
    names = [f.name for f in dataclasses.fields(Config)]
    assert [o.name for o in options()] == [n for n in names if n not in ("origin", "project", "settings")]


def test_the_fingerprint_covers_exactly_the_options_that_recompile() -> None:
    samples = {str: "x-changed", bool: True, int: 7, tuple: ()}
    base = Config()
    for o in options():
        if isinstance(o.default, tuple):
            value = (("k", "v"),) if o.name != "allow" else ("W710",)
        elif isinstance(o.default, bool):
            value = not o.default
        else:
            value = samples[type(o.default)]
        changed = dataclasses.replace(base, **{o.name: value})
        assert (changed.fingerprint() != base.fingerprint()) is o.fingerprint, o.name


def test_the_default_map_gives_each_command_its_options() -> None:
    settings = Settings.__new__(Settings)
    settings.config = Config(tokenizer="o200k_base", model="claude-sonnet-4-5")
    found = settings.default_map()
    assert found["build"] == {"src": "prompts_src", "out": "build", "tokenizer": "o200k_base", "provider": None}
    assert found["render"] == {"out": "build", "model": "claude-sonnet-4-5"}
    assert set(found) == {"build", "check", "watch", "render", "inspect", "list"}


NEW_OPTION = """
    greeting_style: str = option(
        "plain",
        _one_of(("plain", "formal")),
        "How prompts greet (config: greeting_style).",
        doc="a test's option, declared in one place",
        fingerprint=True,
        commands=("build", "check"),
        flag=("--greeting-style",),
    )
"""

PROBE = r"""
import json, os
from click.testing import CliRunner
from promptc.cli import main
from promptc.facts.config import Config, docs_table, load_config
from pathlib import Path

help_text = CliRunner().invoke(main, ["build", "--help"]).output
config, diagnostics = load_config(Path("pyproject.toml"))
runner = CliRunner()
bad = runner.invoke(main, ["check", "--greeting-style", "shouty"])
print(json.dumps({
    "help": "--greeting-style" in help_text and "How prompts greet" in help_text,
    "fingerprint": Config().fingerprint() != Config(greeting_style="formal").fingerprint(),
    "docs": "| `greeting_style` | `plain` | `--greeting-style` on build, check | yes |" in docs_table(),
    "file": [config.greeting_style, [d.code for d in diagnostics]],
    "flag": [bad.exit_code, "`greeting_style` must be one of plain, formal" in bad.output],
}))
"""


def test_an_option_declared_in_one_place_is_everywhere(tmp_path: Path) -> None:
    """Add one `option(...)` to a copy of the package: it is a flag in `--help`, part of the
    fingerprint, a row of the docs table, and read (and checked) from the file and the flag."""
    copy = tmp_path / "site" / "promptc"
    shutil.copytree(ROOT / "compiler", copy, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "grammar", copy / "grammar")
    config_py = copy / "facts" / "config.py"
    text = config_py.read_text(encoding="utf-8")
    anchor = "    #: where `pyproject.toml` was found"
    assert text.count(anchor) == 1
    config_py.write_text(text.replace(anchor, NEW_OPTION.lstrip("\n") + anchor))
    project = tmp_path / "project"
    (project / "prompts_src").mkdir(parents=True)
    (project / "pyproject.toml").write_text('[tool.promptc]\ngreeting_style = "formal"\n')
    env = {**os.environ, "PYTHONPATH": str(copy.parent)}
    done = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=project, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-3000:]
    import json

    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found == {"help": True, "fingerprint": True, "docs": True, "file": ["formal", []], "flag": [2, True]}
