"""The editor grammar under the real VS Code tokenizer, and the extension packaged by the real
`vsce`: node tools that `.ci/run` installs (`npm ci` in editors/vscode), so `ci_only`."""

from __future__ import annotations

import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest

from .conftest import ROOT

VSCODE = ROOT / "editors" / "vscode"

pytestmark = pytest.mark.ci_only


def _node_modules() -> None:
    if shutil.which("node") is None or not (VSCODE / "node_modules" / "vscode-textmate").is_dir():
        pytest.fail("run `npm ci` in editors/vscode first (.ci/run does)")


def test_grammar_snapshots_and_client_tests_pass_under_node() -> None:
    _node_modules()
    done = subprocess.run(["node", "--test", "test/"], cwd=VSCODE, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "# fail 0" in done.stdout


def test_the_extension_packages_with_vsce(tmp_path: Path) -> None:
    _node_modules()
    vsix = tmp_path / "promptc.vsix"
    done = subprocess.run(
        ["npx", "--no-install", "vsce", "package", "--skip-license", "--allow-missing-repository", "-o", str(vsix)],
        cwd=VSCODE,
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    names = set(zipfile.ZipFile(vsix).namelist())
    for needed in (
        "extension/package.json",
        "extension/extension.js",
        "extension/language-configuration.json",
        "extension/syntaxes/prompt.tmLanguage.json",
        "extension/node_modules/vscode-languageclient/node.js",
    ):
        assert needed in names, needed
    assert not any(n.startswith(("extension/test/", "extension/node_modules/vscode-textmate/")) for n in names)
    assert "extension/gen_grammar.py" not in names
