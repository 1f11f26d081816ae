"""The foreign corpora `promptc import` is measured on (tests/import_fixtures/README.md says where
each file comes from): Dotprompt's spec (YAML files of templates, partials and test inputs, laid
out here as one folder of `.prompt` files per spec entry), Dotprompt's examples, Prompty's spec
fixtures, tests and docs examples, and the Jinja corpus written for promptc."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

FIXTURES = Path(__file__).parent / "import_fixtures"


def dotprompt_spec_tree(dest: Path) -> Path:
    """Write every entry of Dotprompt's spec YAML as a `.prompt` file (with its partials beside it)
    under `dest`, and the test inputs of every entry to `dest.parent / "spec-inputs.json"`; returns
    that inputs file. Test cases that need render context (`@state`, history messages) are left
    out of the inputs: the import refuses those constructs anyway."""
    inputs: dict[str, list[dict]] = {}
    for spec in sorted((FIXTURES / "dotprompt" / "spec").rglob("*.yaml")):
        group = spec.relative_to(FIXTURES / "dotprompt" / "spec").with_suffix("").as_posix().replace("/", "-")
        for entry in yaml.safe_load(spec.read_text(encoding="utf-8")) or []:
            folder = dest / group / entry["name"]
            folder.mkdir(parents=True, exist_ok=True)
            (folder / f"{entry['name']}.prompt").write_text(entry["template"], encoding="utf-8")
            for name, body in {**(entry.get("partials") or {}), **(entry.get("resolverPartials") or {})}.items():
                (folder / f"_{name}.prompt").write_text(body, encoding="utf-8")
            sets = []
            for test in entry.get("tests") or []:
                data = {**(entry.get("data") or {}), **(test.get("data") or {})}
                if set(data) - {"input"}:
                    continue
                defaults = ((test.get("options") or {}).get("input") or {}).get("default") or {}
                sets.append({**defaults, **(data.get("input") or {})})
            if sets:
                inputs[f"{group}/{entry['name']}/{entry['name']}"] = sets
    path = dest.parent / "spec-inputs.json"
    path.write_text(json.dumps(inputs, indent=1), encoding="utf-8")
    return path
