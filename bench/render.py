"""Render speed: promptc's `render` against Jinja2, promplate and the `str.format` floor.

An application renders a prompt for every request it sends, so this is promptc's hottest path. Each
case renders one prompt of the committed `build/` (built from `prompts_src/`) with fixed inputs:

* **placeholder**: `support/chat`, three `${…}` placeholders over four messages;
* **python-renderer**: `agents/planner`, twelve inputs and a `{% for %}` loop over a list;
* **large agent**: `agents/reviewer`, 4.5 KB over five blocks, twelve placeholders.

The other engines get "the same template": the prompt's message texts joined by a blank line, each
`${x}` written as `{{ x }}` (both Jinja2 and promplate read the `{{ }}` / `{% %}` of the python
sections as written). Jinja2's `Environment().from_string` and promplate's `Template` are built once,
outside the timing (promplate compiles at its first render, which is also untimed); the floor is one
`str.format` call, and a chain of `str.replace`, on the same text. Everything runs in this one
process, interleaved: each round times every case once (`timeit`, enough calls for ~20 ms, a number worked out
once per case before the rounds), and the table shows the median per call over the rounds.

    python bench/render.py [--rounds 15] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import timeit
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BUILD = ROOT / "build"

VALUE = "a value of about forty characters, say."
FILES = [
    "compiler/runtime/render.py",
    "compiler/runtime/shapes.py",
    "tests/test_runtime.py",
    "docs/performance.md",
    "README.md",
]

#: (key, label, prompt, shape used for the `as_shape` row)
CASES = (
    ("placeholder", "placeholder (support/chat, 3 inputs)", "support/chat", "openai"),
    ("python", "python-renderer with a loop (agents/planner)", "agents/planner", "openai"),
    ("agent", "large agent (agents/reviewer, 4.5 KB)", "agents/reviewer", "openai"),
)

#: target ratios: (case, engine) → the most promptc `render` may take, as a multiple of the engine
TARGETS = {
    ("placeholder", "jinja2"): 0.5,
    ("placeholder", "format"): 3.0,
    ("python", "promplate"): 1.0,
}


def inputs_for(artifact: Any) -> dict[str, Any]:
    return {name: FILES if name == "files" else VALUE for name in (*artifact.inputs, *artifact.helpers)}


def template_text(artifact: Any) -> tuple[str, list[str], bool]:
    """The prompt as one `{{ }}` template, the placeholder paths in order, and whether it has code."""
    from promptc.runtime import template

    texts, paths, code = [], [], False
    for message in artifact.messages:
        for block in message.blocks:
            for section in block.sections:
                out = []
                for token in template.scan(section.text):
                    if token.kind == "lit":
                        out.append(token.text)
                    elif token.kind == "ph":
                        out.append("{{ " + token.text + " }}")
                        paths.append(token.text)
                    else:
                        out.append(token.raw)
                        code = True
                texts.append("".join(out))
    return "\n\n".join(texts), paths, code


def engines(artifact: Any, shape: str, values: dict[str, Any]) -> dict[str, Callable[[], Any]]:
    """What is timed per case: promptc, promptc + shape, Jinja2, promplate, the floor."""
    import jinja2
    from promplate import Template

    import promptc

    runtime = promptc.load(BUILD)
    name = artifact.name
    text, paths, code = template_text(artifact)
    jinja = jinja2.Environment().from_string(text)
    promplate = Template(text)
    promplate.render(values)  # promplate compiles at its first render
    timed: dict[str, Callable[[], Any]] = {
        "promptc": lambda: runtime.render(name, values),
        "promptc+shape": lambda: runtime.render(name, values).as_shape(shape, model="gpt-4o"),
        "jinja2": lambda: jinja.render(values),
        "promplate": lambda: promplate.render(values),
    }
    if not code:
        fmt = text.replace("{", "{{").replace("}", "}}")
        for path in dict.fromkeys(paths):
            fmt = fmt.replace("{{{{ " + path + " }}}}", "{" + path + "}")
        timed["format"] = lambda: fmt.format(**values)
        marks = [("{{ " + path + " }}", path) for path in dict.fromkeys(paths)]

        def replace() -> str:
            out = text
            for mark, path in marks:
                out = out.replace(mark, values[path])
            return out

        timed["replace"] = replace
    runtime.render(name, values)  # the render plan is compiled at the first render: untimed, like the others
    return timed


def calls_for(fn: Callable[[], Any], budget: float = 0.02) -> int:
    """How many calls of `fn` take about `budget` seconds: doubled from one until a tenth of it, then scaled.
    (Worked out once per engine, not each round: `timeit`'s own `autorange` spends 0.2 s finding it, ten times
    the measurement, and made this table take minutes on a loaded machine.)"""
    timer = timeit.Timer(fn)
    number = 1
    while (took := timer.timeit(number)) < budget / 10:
        number *= 2
    return max(1, int(number * budget / took))


def per_call(fn: Callable[[], Any], number: int) -> float:
    return timeit.Timer(fn).timeit(number) / number


def measure(rounds: int = 15) -> dict[str, Any]:
    """{case: {engine: [seconds per call, one per round]}} plus labels and targets."""
    import promptc

    runtime = promptc.load(BUILD)
    plans = {}
    for key, _label, prompt, shape in CASES:
        artifact = runtime.artifact(prompt)
        plans[key] = engines(artifact, shape, inputs_for(artifact))
    samples: dict[str, dict[str, list[float]]] = {key: {engine: [] for engine in fns} for key, fns in plans.items()}
    numbers = {key: {engine: calls_for(fn) for engine, fn in fns.items()} for key, fns in plans.items()}
    for _ in range(rounds):
        for key, fns in plans.items():
            for engine, fn in fns.items():
                samples[key][engine].append(per_call(fn, numbers[key][engine]))
    return {
        "rounds": rounds,
        "cases": [{"key": k, "label": label, "prompt": p, "shape": s} for k, label, p, s in CASES],
        "samples": samples,
    }


ENGINE_LABELS = {
    "promptc": "promptc `render`",
    "promptc+shape": "promptc `render(...).as_shape({shape})`",
    "jinja2": "Jinja2 `Template.render`",
    "promplate": "promplate `Template.render`",
    "format": "`str.format` (floor)",
    "replace": "`str.replace` chain (floor)",
}


def rows(data: dict[str, Any]) -> list[list[str]]:
    out = []
    for case in data["cases"]:
        samples = data["samples"][case["key"]]
        med = {engine: statistics.median(values) for engine, values in samples.items()}
        for engine, values in samples.items():

            def ratio(other: str, engine: str = engine, med: dict[str, float] = med) -> str:
                if other not in med or other == engine:
                    return ""
                return f"{med[engine] / med[other]:.2f}×"

            out.append(
                [
                    case["label"],
                    ENGINE_LABELS[engine].format(shape=case["shape"]),
                    f"{med[engine] * 1e6:.2f}",
                    ratio("format"),
                    ratio("jinja2"),
                    ratio("promplate"),
                    f"n={len(values)}, {min(values) * 1e6:.2f}–{max(values) * 1e6:.2f}",
                ]
            )
    return out


HEADER = ["prompt", "engine", "median µs", "× str.format", "× Jinja2", "× promplate", "rounds, range µs"]


def targets(data: dict[str, Any]) -> list[tuple[str, str, str, str, str]]:
    """(name, status, measured, limit, miss by) for each render target."""
    out = []
    for (case, engine), limit in TARGETS.items():
        name = f"{case} render ≤ {limit:g} × {ENGINE_LABELS[engine].split(' (')[0]}"
        samples = data.get("samples", {}).get(case, {})
        if "promptc" not in samples or engine not in samples:
            out.append((name, "n/a", "not measured", f"≤ {limit:g}×", ""))
            continue
        value = statistics.median(samples["promptc"]) / statistics.median(samples[engine])
        ok = value <= limit
        by = "" if ok else f"{value / limit:.2f}× over the limit ({value:.2f}× vs {limit:g}×)"
        out.append((name, "PASS" if ok else "MISS", f"{value:.2f}×", f"≤ {limit:g}×", by))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=15, help="rounds (default 15; median reported)")
    parser.add_argument("--json", metavar="FILE", help="also write every sample as JSON")
    args = parser.parse_args(argv)
    data = measure(args.rounds)
    if args.json:
        Path(args.json).write_text(json.dumps(data, indent=2) + "\n")
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from run import format_text  # noqa: PLC0415

    print(format_text(HEADER, rows(data)))
    print()
    print(format_text(["target", "status", "measured", "limit", "miss by"], [list(t) for t in targets(data)]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
