"""`promptc import` / `promptc audit` (promptc.tools.importers): conversions, refusals, --check against the
original engines, writes and ownership, idempotence, and audit == build."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from promptc.cli import main
from promptc.facts.config import Config
from promptc.runtime.render import render_artifact
from promptc.tools.importers import audit, compile_converted, convert, import_tree
from promptc.tools.importers.yamlheader import YamlError, parse

from .conftest import write

APPROX = Config(tokenizer="approx-bytes/4")


def one(kind: str, name: str, text: str, **files: str):
    converted = convert(kind, {name: text.encode(), **{k: v.encode() for k, v in files.items()}})
    return next(c for c in converted if c.source == name), converted


def rendered(converted, values):
    """The messages promptc renders, edges trimmed as --check compares them."""
    from promptc.tools.importers.check import normalise

    _tree, compiled = compile_converted(converted, APPROX)
    target = next(c.target for c in converted if not c.partial)
    messages = render_artifact(compiled[target].load_artifact(), values).messages
    return [(m["role"], normalise(m["content"])) for m in messages]


# ---------------------------------------------------------------------------------------------
# The header reader


def test_yaml_header_positions_and_refusals() -> None:
    header = parse("model: gpt-4o\nconfig:\n  temperature: 0.2\n  stop: [a, b]\n")
    assert header.data == {"model": "gpt-4o", "config": {"temperature": 0.2, "stop": ["a", "b"]}}
    assert header.where("config", "stop") == (4, 3)
    with pytest.raises(YamlError) as dup:
        parse("a: 1\nb: 2\na: 3\n")
    assert (dup.value.line, dup.value.column) == (3, 1) and "given twice" in dup.value.message
    with pytest.raises(YamlError) as alias:
        parse("a: &x [1, 2]\nb: *x\n")
    assert "aliases" in alias.value.message
    with pytest.raises(YamlError) as tag:
        parse("a: !!python/object:os.system x\n")
    assert "not supported" in tag.value.message
    with pytest.raises(YamlError) as bad:
        parse("a: [1, 2\n")
    assert bad.value.line == 2


# ---------------------------------------------------------------------------------------------
# Prompty


PROMPTY = """---
name: support
description: Answers support questions
metadata:
  tags: [support, v2]
model:
  id: gpt-4o-mini
  options:
    temperature: 0.2
    maxOutputTokens: 400
inputs:
  - name: customer
    kind: string
    default: Ann
  - name: items
    kind: array
    items:
      kind: string
tools:
  - name: lookup_order
    kind: function
    description: Find an order
    parameters:
      - name: order_id
        kind: string
        required: true
outputs:
  - name: answer
    kind: string
    required: true
---
system:
You are the support agent. Be brief.

user:
{{customer}} asks about {% for i in items %}{{ i | upper }}{% if not loop.last %}, {% endif %}{% endfor %}.
"""


def test_prompty_maps_model_inputs_tools_output_and_roles() -> None:
    c, converted = one("prompty", "support.prompty", PROMPTY)
    assert not c.refused, c.diagnostics
    lines = c.text.split("\n")
    assert lines[0].startswith("/// promptc import (prompty support.prompty) sha256 ")
    for expected in (
        '/// param: model="gpt-4o-mini"',
        "/// param: temperature=0.2",
        "/// param: max_tokens=400",
        "/// input: customer: str, items: list[str]",
        "/// tools: support.tools.json",
        "/// output: support.output.json",
        "/// tag: support, v2",
        "----- system -----",
        "----- user -----",
        "${customer} asks about {% for loop_1, i in enumerate(items) %}{{ str(i).upper() }}"
        "{% if (not (loop_1 == len(items) - 1)) %}, {% endif %}{% endfor %}.",
    ):
        assert expected in lines, (expected, c.text)
    tools = json.loads(c.extra["support.tools.json"])
    assert tools == [
        {
            "name": "lookup_order",
            "description": "Find an order",
            "input_schema": {
                "type": "object",
                "properties": {"order_id": {"type": "string"}},
                "required": ["order_id"],
            },
        }
    ]
    output = json.loads(c.extra["support.output.json"])
    assert output["title"] == "structured_output" and output["required"] == ["answer"]
    assert c.samples == [{"customer": "Ann"}]
    assert rendered(converted, {"customer": "Bo", "items": ["a", "b"]}) == [
        ("system", "You are the support agent. Be brief."),
        ("user", "Bo asks about A, B."),
    ]


@pytest.mark.parametrize(
    ("text", "code", "where"),
    [
        ("---\ninputs:\n  - name: h\n    kind: thread\n---\nuser:\n{{h}}\n", "E961", (3, 5)),
        ("---\ntemplate: mustache\n---\nuser:\n{{h}}\n", "E961", (2, 1)),
        ("---\nmodel:\n  id: gpt-4o\n  apiType: embedding\n---\nhi\n", "E961", (4, 3)),
        ("---\ninputs: ${file:schema.json}\n---\nhi\n", "E961", (2, 1)),
        ("---\nname: [unclosed\n---\nhi\n", "E960", (3, 1)),
        ("system:\n{% if a %}\nuser:\n{% endif %}\n", "E962", (3, 1)),
        ('user[name="Al"]:\nhi\n', "E962", (1, 1)),
        ("system:\n{{ x | tojson }}\n", "E962", (2, 8)),
    ],
)
def test_prompty_refusals_are_located(text: str, code: str, where: tuple[int, int]) -> None:
    c, _ = one("prompty", "p.prompty", text)
    assert c.refused and c.text == ""
    (d,) = [d for d in c.diagnostics if d.severity == "error"]
    assert (d.code, d.line, d.col) == (code, *where), d
    assert d.path == "p.prompty" and d.hint is None or isinstance(d.hint, str)


# ---------------------------------------------------------------------------------------------
# Dotprompt / Handlebars


DOTPROMPT = """---
model: googleai/gemini-2.0-flash
config:
  temperature: 0.4
  maxOutputTokens: 300
input:
  schema:
    name: string
    score: number
    vip: boolean
    nick?: string
    tags(array): string
    account(object):
      plan: string
---
{{role "system"}}
You help {{name}} (plan {{account.plan}}).
{{#if vip}}
VIP treatment.
{{else}}
Standard treatment.
{{/if}}
{{role "user"}}
Score {{score}}, flag {{vip}}, nick [{{nick}}].
{{#each tags}}
- {{@index}}: {{this}}{{#if @last}} (last){{/if}}
{{/each}}
"""


def test_dotprompt_types_drive_the_spelling() -> None:
    c, converted = one("dotprompt", "help.prompt", DOTPROMPT)
    assert not c.refused, c.diagnostics
    assert "/// dotprompt.model: googleai/gemini-2.0-flash" in c.text
    assert '/// param: model="gemini-2.0-flash"' in c.text
    assert (
        "/// input: name: str, score: float, vip: bool, nick: str | None, tags: list[str], account: @help.account.schema.json"
        in c.text
    )
    assert "You help ${name} (plan ${account.plan})." in c.text
    values = {"name": "Ann", "score": 3.0, "vip": True, "nick": None, "tags": ["x", "y"], "account": {"plan": "pro"}}
    assert rendered(converted, values) == [
        ("system", "You help Ann (plan pro).\nVIP treatment."),
        ("user", "Score 3, flag true, nick [].\n- 0: x\n- 1: y (last)"),
    ]


def test_dotprompt_infers_types_from_use_without_a_schema() -> None:
    c, converted = one(
        "dotprompt",
        "p.prompt",
        "Hi {{user.name}}!\n{{#each items as |it i|}}{{i}}={{it}} {{/each}}\n{{#if extra}}E{{/if}}\n",
    )
    assert not c.refused, c.diagnostics
    assert "/// input: user: @p.user.schema.json, items: list[str], extra" in c.text
    schema = json.loads(c.extra["p.user.schema.json"])
    assert schema == {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
    # an empty object is true in Handlebars, false in Python: the condition says which
    assert rendered(converted, {"user": {"name": "Ann"}, "items": ["a"], "extra": {}}) == [("user", "Hi Ann!\n0=a \nE")]


@pytest.mark.parametrize(
    ("text", "code", "where"),
    [
        ('{{media url="a.png"}}\n', "E962", (1, 1)),
        ("{{history}}\n", "E962", (1, 1)),
        ('{{#role "system"}}\nHi\n{{/role}}\n', "E962", (1, 1)),
        ("{{shout name}}\n", "E962", (1, 1)),
        ("Hi {{@state.name}}\n", "E962", (1, 4)),
        ('{{#if a}}\n{{role "user"}}\n{{/if}}\n', "E962", (2, 1)),
        ("{{#if a}}x\n", "E963", (1, 1)),
        ("x{{/each}}\n", "E963", (1, 2)),
        ("{{> missing}}\n", "E964", (1, 1)),
        ("---\ninput:\n  schema:\n    tags: string[]\n---\nhi\n", "E961", (4, 5)),
        ("---\ntools: [search]\n---\nhi\n", "E961", (2, 1)),
        ("---\ninput:\n  schema:\n    items(array): string\n---\n{{items}}\n", "E962", (6, 1)),
    ],
)
def test_dotprompt_refusals_are_located(text: str, code: str, where: tuple[int, int]) -> None:
    c, _ = one("dotprompt", "p.prompt", text)
    assert c.refused
    (d,) = [d for d in c.diagnostics if d.severity == "error"]
    assert (d.code, d.line, d.col) == (code, *where), d


def test_dotprompt_partials_include_or_inline() -> None:
    c, converted = one(
        "dotprompt",
        "p.prompt",
        "{{> header}}\nSay hi to {{> name who=user}}.\n",
        **{"_header.prompt": "You are kind to {{user}}.\n", "_name.prompt": "dear {{who}}"},
    )
    assert not c.refused, c.diagnostics
    assert "/// include: _header.prompt" in c.text
    assert "Say hi to dear ${user}." in c.text  # a partial inside a line is spliced in
    assert rendered(converted, {"user": "Ann"}) == [("user", "You are kind to Ann.\nSay hi to dear Ann.")]


# ---------------------------------------------------------------------------------------------
# Jinja


def test_jinja_translation_and_escaping() -> None:
    c, converted = one(
        "jinja",
        "t.j2",
        "A /// stays, so do ${x} and {% raw %}{{ y }}{% endraw %}.\n"
        "{%- if n > 1 %} many{% elif n %} one{% else %} none{% endif %}\n"
        "{% set total = prices | sum %}{{ total }} {{ names | join(', ') }} {{ user.name }}\n",
    )
    assert not c.refused, c.diagnostics
    assert "A \\/// stays, so do \\${x} and \\{{ y }}." in c.text
    assert rendered(converted, {"n": 2, "prices": [1, 2], "names": ["a", "b"], "user": {"name": "U"}}) == [
        ("system", "A /// stays, so do ${x} and {{ y }}. many\n3 a, b U")
    ]


def test_jinja_partials_become_includes_with_their_inputs() -> None:
    _, converted = one(
        "jinja", "main.j2", '{% include "parts/_intro.j2" %}\nQ: {{ q }}\n', **{"parts/_intro.j2": "Hi {{ who }}.\n"}
    )
    main_c = next(c for c in converted if c.source == "main.j2")
    part = next(c for c in converted if c.source == "parts/_intro.j2")
    assert part.partial and part.target == "parts/_intro.prompt"
    assert "/// include: parts/_intro.prompt" in main_c.text and "/// input: q: str, who: str" in main_c.text
    assert rendered(converted, {"q": "why", "who": "Ann"}) == [("system", "Hi Ann.\nQ: why")]


# ---------------------------------------------------------------------------------------------
# --check against the original engines

#: nested loops with `../` and block parameters, each over an object, else-if chains, ifEquals,
#: `~` and standalone lines at several indentations: Handlebars' whitespace rules in one file
NESTED = """---
input:
  schema:
    title: string
    groups(array):
      name: string
      members(array): string
    counts(object):
      (*): integer
    mode: string
    level?: integer
---
{{role "system"}}
  {{#each groups}}
  Group {{name}} of {{../title}}:
    {{#each members as |m i|}}
    - {{i}} {{m}}{{#unless @last}};{{/unless}}
    {{/each}}
  {{else}}
  No groups.
  {{/each}}
{{#each counts}}{{@key}}={{this}} {{/each}}
{{#if level}}L{{level}}{{else if mode}}M{{mode}}{{else}}none{{/if}}
{{#ifEquals mode "fast"}}FAST{{else}}slow{{/ifEquals}}
   {{~title~}}   end
"""
#: Prompty's role lines (`# System:`, an indented `User:`), whitespace control, `format` and `join`
ROLES_AND_FILTERS = """---
model: gpt-4o
inputs:
  - name: items
    kind: array
    items:
      kind: string
    default: [apples, pears]
  - name: who
    kind: string
    default: Ann
  - name: n
    kind: integer
    default: 2
---
# System:
You are a helper for {{ who }}.
{% for it in items -%}
  * {{ it }}
{%- endfor %}

  User:
{% if n > 1 %}Many ({{ n }}){% else %}One{% endif %}

assistant:
Sure, {{who}}.
user:
{{ "%s and %s" | format(who, n) }} -- {{ items | join(" / ") | upper }}
"""
NESTED_INPUTS = {
    "a": [
        {
            "title": "T",
            "groups": [{"name": "g1", "members": ["x", "y"]}, {"name": "g2", "members": []}],
            "counts": {"a": 1, "b": 2},
            "mode": "fast",
            "level": 3,
        },
        {"title": "T", "groups": [], "counts": {}, "mode": "", "level": None},
        {"title": "", "groups": [], "counts": {}, "mode": "m"},
    ]
}


@pytest.mark.parametrize(
    ("kind", "files", "inputs"),
    [
        ("prompty", {"support.prompty": PROMPTY}, {"support": [{"customer": "Bo", "items": ["a", "b"]}]}),
        ("dotprompt", {"help.prompt": DOTPROMPT}, None),
        ("dotprompt", {"a.prompt": NESTED}, NESTED_INPUTS),
        ("prompty", {"a.prompty": ROLES_AND_FILTERS}, None),
        (
            "jinja",
            {"t.j2": "{% for x in xs %}{{ loop.index }}. {{ x }}\n{% else %}none\n{% endfor %}{{ a ~ b }}\n"},
            {"t": [{"xs": ["p", "q"], "a": 1, "b": "z"}, {"xs": [], "a": None, "b": 2}]},
        ),
    ],
)
def test_check_agrees_with_the_original_engine(tmp_path: Path, kind: str, files: dict, inputs) -> None:
    for rel, text in files.items():
        write(tmp_path, f"src/{rel}", text)
    if inputs is not None:
        write(tmp_path, "inputs.json", json.dumps(inputs))
    result = import_tree(
        kind,
        tmp_path / "src",
        tmp_path / "out",
        check=True,
        inputs=tmp_path / "inputs.json" if inputs else None,
        config=APPROX,
    )
    assert result.ok, [str(d) for d in result.diagnostics]
    assert result.refused == 0 and all(n >= 1 for n in result.checked.values()) and result.checked


def test_check_reports_the_first_differing_line(tmp_path: Path) -> None:
    from promptc.tools.importers.check import run_checks

    write(tmp_path, "src/t.j2", "Hello {{ name }}.\nSecond line.\n")
    converted = convert("jinja", {"t.j2": (tmp_path / "src/t.j2").read_bytes()})
    converted[0].text = converted[0].text.replace("Second line.", "2nd line.")
    _tree, compiled = compile_converted(converted, APPROX)
    (problem,) = run_checks("jinja", tmp_path / "src", converted, compiled, None, {})
    assert problem.code == "E967"
    assert "line 2: original 'Second line.', promptc '2nd line.'" in problem.message
    assert converted[0].refused  # so it is not written


def test_engines_are_imported_only_by_check(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With the engines made unimportable, import and audit work; only --check asks for one."""
    for name in ("jinja2", "prompty", "dotpromptz"):
        monkeypatch.setitem(sys.modules, name, None)  # `import name` now raises ImportError
    write(tmp_path, "src/a.prompty", PROMPTY)
    write(tmp_path, "src/b.prompt", DOTPROMPT)
    write(tmp_path, "src/c.j2", "Hi {{ name }}.\n")
    for kind in ("prompty", "dotprompt", "jinja"):
        assert import_tree(kind, tmp_path / "src", tmp_path / "out", config=APPROX).ok
        assert audit(kind, tmp_path / "src", APPROX).imported == 1
    monkeypatch.setattr("importlib.util.find_spec", lambda name, *a: None)
    checked = import_tree("jinja", tmp_path / "src", tmp_path / "out2", check=True, config=APPROX)
    assert [d.code for d in checked.diagnostics] == ["E968"]
    assert not (tmp_path / "out2").exists()  # --check was asked for: nothing unchecked is written


# ---------------------------------------------------------------------------------------------
# Writing: atomic, idempotent, never over a user's file


def test_import_twice_is_byte_identical_and_fmt_clean(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path, "src/help.prompt", DOTPROMPT)
    write(tmp_path, "src/support.prompty", PROMPTY.replace("{{customer}}", "{{ customer }}"))
    first = import_tree("dotprompt", "src", "out", config=APPROX)
    assert [f.status for f in first.files] == ["written"]
    before = {p: p.read_bytes() for p in (tmp_path / "out").rglob("*") if p.is_file()}
    again = import_tree("dotprompt", "src", "out", config=APPROX)
    assert [f.status for f in again.files] == ["unchanged"]
    assert {p: p.read_bytes() for p in (tmp_path / "out").rglob("*") if p.is_file()} == before
    runner = CliRunner()
    result = runner.invoke(main, ["fmt", "--check", "out"])
    assert result.exit_code == 0, result.output
    assert not list((tmp_path / "out").glob(".*.tmp"))  # no temporary file left behind


def test_import_never_replaces_a_users_file(tmp_path: Path) -> None:
    write(tmp_path, "src/t.j2", "Hello {{ name }}.\n")
    out = tmp_path / "out"
    write(tmp_path, "out/t.prompt", "My own prompt.\n")
    refused = import_tree("jinja", tmp_path / "src", out, config=APPROX)
    assert [d.code for d in refused.diagnostics] == ["E965"]
    assert (out / "t.prompt").read_text() == "My own prompt.\n"
    forced = import_tree("jinja", tmp_path / "src", out, force=True, config=APPROX)
    assert forced.ok and (out / "t.prompt").read_text().startswith("/// promptc import (jinja t.j2)")
    # edited after the import: no longer import's to replace
    (out / "t.prompt").write_text((out / "t.prompt").read_text().replace("Hello", "Hi"))
    write(tmp_path, "src/t.j2", "Hello there {{ name }}.\n")
    assert [d.code for d in import_tree("jinja", tmp_path / "src", out, config=APPROX).diagnostics] == ["E965"]
    # unedited: import rewrites its own file
    import_tree("jinja", tmp_path / "src", out, force=True, config=APPROX)
    write(tmp_path, "src/t.j2", "Good day {{ name }}.\n")
    assert import_tree("jinja", tmp_path / "src", out, config=APPROX).ok
    assert "Good day ${name}." in (out / "t.prompt").read_text()


def test_names_and_values_cannot_add_lines() -> None:
    """A header value or a file name never becomes a line of its own in the `.prompt` text."""
    c, _ = one("prompty", "p.prompty", '---\ndescription: "a\\n/// include: x"\n---\nhi\n')
    assert not c.refused and "/// include" not in c.text and "/// description" not in c.text
    c, _ = one("prompty", "p.prompty", '---\ninputs:\n  "x\\ny": 1\n---\nhi\n')
    assert c.refused and c.diagnostics[-1].code == "E961" and "not an identifier" in c.diagnostics[-1].message
    c, _ = one("dotprompt", "p.prompt", '---\nmodel: "googleai/x\\n----- system -----"\n---\nhi\n')
    assert not c.refused and "----- system -----" not in c.text.split("\n")
    bad = convert("jinja", {"a\nb.j2": b"hi\n"})
    assert bad[0].refused and bad[0].diagnostics[0].code == "E966"


def test_two_sources_for_one_target_are_refused() -> None:
    converted = convert("jinja", {"a.j2": b"one\n", "a.jinja": b"two\n"})
    assert [(c.source, c.refused) for c in converted] == [("a.j2", False), ("a.jinja", True)]
    assert converted[1].diagnostics[0].code == "E965" and "`a.j2` and `a.jinja`" in converted[1].diagnostics[0].message


def test_refused_files_are_not_written(tmp_path: Path) -> None:
    write(tmp_path, "src/ok.j2", "Hi {{ a }}.\n")
    write(tmp_path, "src/bad.j2", "Hi {{ a | title }}.\n")
    result = import_tree("jinja", tmp_path / "src", tmp_path / "out", config=APPROX)
    assert (result.imported, result.refused) == (1, 1)
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["ok.prompt"]


# ---------------------------------------------------------------------------------------------
# audit == build


def test_audit_prints_what_the_build_of_the_import_records(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from promptc.cli.importer import audit_lines
    from promptc.driver import build
    from promptc.runtime.render import load
    from promptc.tools.importers.audit import prefix_analysis

    monkeypatch.chdir(tmp_path)
    stable = "You are the billing assistant of Acme. " * 40
    write(tmp_path, "src/a.prompty", f"---\nmodel: gpt-4o\n---\nsystem:\n{stable}\n\nuser:\n{{{{q}}}}\n")
    write(
        tmp_path,
        "src/b.prompty",
        f"---\nmodel: gpt-4o\n---\nsystem:\n{stable}\n\nuser:\nAbout {{{{topic}}}}: {{{{q}}}}\n",
    )
    write(tmp_path, "src/c.prompty", f"---\nmodel: gpt-4o\n---\nsystem:\nHelp {{{{who}}}} with billing. {stable}\n")
    report = audit("prompty", "src", APPROX)
    assert report.imported == 3
    assert import_tree("prompty", "src", "prompts_src", config=APPROX).ok
    built = build("prompts_src", "build", APPROX)
    assert built.ok
    runtime = load("build")
    artifacts = {name: runtime.artifact(name) for name in runtime.names()}
    from_build = prefix_analysis(artifacts, runtime.manifest)
    keys = set(from_build["prompts"]["a"])
    assert {n: {k: v for k, v in p.items() if k in keys} for n, p in report.analysis["prompts"].items()} == from_build[
        "prompts"
    ]
    assert report.analysis["shared_prefixes"] == from_build["shared_prefixes"] != []
    assert report.analysis["prompts"]["c"]["prefix_end"]["reason"] == "input ${who}"
    assert report.analysis["prompts"]["c"]["foreign_end"] == {"line": 5, "column": 6}
    lines = audit_lines(report)
    assert "  prefix ends: src/c.prompty:5:6: input ${who}" in lines
    assert any(line.startswith("shared prefixes:") for line in lines)
    assert [d.code for d in report.diagnostics if d.code == "W710"] == ["W710"]


def test_cli_import_and_audit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path, "src/t.j2", "Hello {{ name }}.\n")
    write(tmp_path, "src/bad.j2", "{{ x | title }}\n")
    runner = CliRunner()
    result = runner.invoke(main, ["import", "jinja", "src", "-o", "prompts_src", "--format", "json"])
    assert result.exit_code == 1
    payload = json.loads(result.output)
    assert payload["command"] == "import" and (payload["imported"], payload["refused"]) == (1, 1)
    assert [d["code"] for d in payload["diagnostics"]] == ["E962"]
    result = runner.invoke(main, ["audit", "jinja", "src", "--format", "json"])
    payload = json.loads(result.output)
    assert payload["command"] == "audit" and payload["prompts"]["t"]["prefix_end"]["reason"] == "input ${name}"
    assert not (tmp_path / "build").exists()
    text = runner.invoke(main, ["audit", "jinja", "src"])
    assert "prefix ends: src/t.j2:1:7: input ${name}" in text.output
    dry = runner.invoke(main, ["import", "jinja", "src", "-o", "other", "--dry-run"])
    assert dry.exit_code == 1 and not (tmp_path / "other").exists()


# ---------------------------------------------------------------------------------------------
# Bounded on any input: a diagnostic, never a traceback


@pytest.mark.parametrize(
    ("kind", "name", "text"),
    [
        ("prompty", "p.prompty", "---\na: " + "[" * 5000 + "]" * 5000 + "\n---\nhi\n"),
        ("prompty", "p.prompty", "---\n" + "".join(f"{' ' * i}k{i}:\n" for i in range(200)) + "---\nhi\n"),
        ("jinja", "t.j2", "{{ " + "(" * 3000 + "x" + ")" * 3000 + " }}\n"),
        ("jinja", "t.j2", "{{ " + "not " * 5000 + "x }}{{ " + "-" * 5000 + "1 }}\n"),
        ("jinja", "t.j2", "{% if a %}" * 3000 + "x" + "{% endif %}" * 3000 + "\n"),
        ("dotprompt", "p.prompt", "{{#if a}}" * 3000 + "x" + "{{/if}}" * 3000 + "\n"),
        ("dotprompt", "p.prompt", "{{" * 20000 + "\n"),
        (
            "dotprompt",
            "p.prompt",
            "---\ninput:\n  schema:\n" + "".join(f"{'  ' * (i + 2)}k{i}(object):\n" for i in range(100)) + "---\nhi\n",
        ),
    ],
)
def test_pathological_sources_get_a_diagnostic(kind: str, name: str, text: str) -> None:
    c, _ = one(kind, name, text)
    assert c.refused or c.text
    assert all(d.code.startswith(("E9", "W9", "E1")) for d in c.diagnostics)


def test_import_never_writes_through_a_link(tmp_path: Path) -> None:
    write(tmp_path, "src/t.j2", "Hello {{ name }}.\n")
    write(tmp_path, "elsewhere/victim.txt", "keep me\n")
    (tmp_path / "out").mkdir()
    (tmp_path / "out/t.prompt").symlink_to(tmp_path / "elsewhere/victim.txt")
    for force in (False, True):
        result = import_tree("jinja", tmp_path / "src", tmp_path / "out", force=force, config=APPROX)
        assert [d.code for d in result.diagnostics] == ["E965"] and "symlink" in result.diagnostics[0].message
    assert (tmp_path / "elsewhere/victim.txt").read_text() == "keep me\n"


# ---------------------------------------------------------------------------------------------
# Reading the foreign folder: regular files only, capped before reading, every failure located


def _opened(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The paths opened for reading while the test runs (by `os.open`, promptc's one reader, and by
    the built-in `open`, which an engine's own loader would use)."""
    import builtins
    import os

    opened: list[str] = []
    real_os_open, real_open = os.open, builtins.open

    def os_open(path, flags, *args, **kwargs):
        opened.append(os.fspath(path))
        return real_os_open(path, flags, *args, **kwargs)

    def open_(file, *args, **kwargs):
        if isinstance(file, (str, Path)):
            opened.append(os.fspath(file))
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(os, "open", os_open)
    monkeypatch.setattr(builtins, "open", open_)
    return opened


def test_a_named_pipe_in_the_folder_is_refused_not_waited_for(tmp_path: Path) -> None:
    """A FIFO named like a template blocked `import` and `audit` forever in `read_bytes`. Run as
    real processes with a timeout, so the test fails (and does not hang) if it ever blocks again."""
    import os

    from .conftest import run_promptc

    write(tmp_path, "src/ok.j2", "Hello {{ name }}.\n")
    os.mkfifo(tmp_path / "src/pipe.j2")
    for args in (["import", "jinja", "src", "-o", "out"], ["audit", "jinja", "src"]):
        done = run_promptc(*args, cwd=tmp_path, real=True, timeout=90)
        assert done.returncode == 1 and "Traceback" not in done.stderr, done.stdout + done.stderr
        assert "src/pipe.j2:1:1: error[E975]: not a regular file (a named pipe, a socket or a device)" in done.stdout
        assert "1 refused" in done.stdout
    assert (tmp_path / "out/ok.prompt").is_file() and not (tmp_path / "out/pipe.prompt").exists()


def test_a_file_over_the_size_cap_is_refused_before_a_byte_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """300 MB of template (sparse: it costs no disk) was read whole, 426 MB of memory, before the
    8 MiB limit refused it. Now its size is seen first: E105, and no byte of it is read."""
    import os

    write(tmp_path, "src/ok.j2", "Hello {{ name }}.\n")
    with open(tmp_path / "src/huge.j2", "wb") as handle:
        handle.truncate(300 << 20)
    real_read, taken = os.read, []

    def read(fd: int, size: int) -> bytes:
        data = real_read(fd, size)
        taken.append(len(data))
        return data

    monkeypatch.setattr(os, "read", read)
    result = import_tree("jinja", tmp_path / "src", tmp_path / "out", config=APPROX)
    report = audit("jinja", tmp_path / "src", APPROX)
    for diagnostics in (result.diagnostics, report.diagnostics):
        (problem,) = diagnostics
        assert (problem.code, problem.path) == ("E105", f"{tmp_path.as_posix()}/src/huge.j2")
        assert "314,572,800 bytes" in problem.message and "not read" in problem.message
    assert (result.imported, result.refused, report.imported, report.refused) == (1, 1, 1, 1)
    assert sum(taken) < 1 << 20  # the two small reads of ok.j2, nothing of huge.j2


def test_a_huge_file_where_an_import_would_write_is_refused_unread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What stands at an import's target is read to see whether import wrote it: a 300 MB file
    there (sparse) was read whole. It is larger than any source the build compiles, so it is no
    import's output: E965, and not a byte of it is read."""
    import os

    write(tmp_path, "src/greet.j2", "Hello {{ name }}.\n")
    (tmp_path / "out").mkdir()
    with open(tmp_path / "out/greet.prompt", "wb") as handle:
        handle.truncate(300 << 20)
    real_read, taken = os.read, []

    def read(fd: int, size: int) -> bytes:
        data = real_read(fd, size)
        taken.append(len(data))
        return data

    def whole(path: Path, *args, **kwargs):
        raise AssertionError(f"{path} read whole")

    monkeypatch.setattr(os, "read", read)
    monkeypatch.setattr(Path, "read_bytes", whole)
    monkeypatch.setattr(Path, "read_text", whole)
    result = import_tree("jinja", tmp_path / "src", tmp_path / "out", config=APPROX)
    assert [(d.code, d.path) for d in result.diagnostics] == [("E965", f"{tmp_path.as_posix()}/out/greet.prompt")]
    assert (result.imported, result.refused) == (0, 1)
    assert sum(taken) < 1 << 20
    assert (tmp_path / "out/greet.prompt").stat().st_size == 300 << 20


def test_the_folder_is_read_within_a_total_budget(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import promptc.tools.importers.folder as folder

    monkeypatch.setattr(folder, "MAX_FOLDER_BYTES", 100)
    for name in "abc":
        write(tmp_path, f"src/{name}.j2", f"{name * 40} {{{{ x }}}}\n")
    result = import_tree("jinja", tmp_path / "src", tmp_path / "out", config=APPROX)
    assert [(d.code, d.path) for d in result.diagnostics] == [("E105", f"{tmp_path.as_posix()}/src")]
    assert "more than 100 bytes" in result.diagnostics[0].message
    assert [f.source for f in result.files if f.status == "written"] == ["a.j2", "b.j2"]


def test_a_dangling_link_and_an_unreadable_file_are_located(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import errno
    import os

    from .conftest import run_promptc

    write(tmp_path, "src/ok.j2", "Hello {{ name }}.\n")
    (tmp_path / "src/gone.j2").symlink_to("missing.j2")
    locked = write(tmp_path, "src/locked.j2", "Hi {{ name }}.\n")
    locked.chmod(0)
    real_open = os.open

    def denied(path, flags, *args, **kwargs):
        # `chmod 000` as the file system reports it to a user who is not root (root reads anyway)
        if os.fspath(path).endswith("locked.j2"):
            raise PermissionError(errno.EACCES, "Permission denied", os.fspath(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", denied)
    try:
        expected = [
            ("E975", "src/gone.j2", "cannot read file: a dangling symlink"),
            ("E975", "src/locked.j2", "cannot read file: permission denied"),
        ]
        monkeypatch.chdir(tmp_path)
        result = import_tree("jinja", "src", "out", config=APPROX)
        report = audit("jinja", "src", APPROX)
        for diagnostics in (result.diagnostics, report.diagnostics):
            assert [(d.code, d.path, d.message) for d in diagnostics] == expected
        assert (result.imported, result.refused, report.imported, report.refused) == (1, 2, 1, 2)
        for args in (["import", "jinja", "src", "-o", "again"], ["audit", "jinja", "src"]):
            done = run_promptc(*args, cwd=tmp_path)
            assert done.returncode == 1 and "Traceback" not in done.stderr, done.stdout + done.stderr
            assert done.stdout.count("error[E975]") == 2
    finally:
        locked.chmod(0o644)


def test_links_are_followed_inside_the_folder_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Like the build's walk: a link inside the folder is followed; a template that is a link
    leading outside is refused unread (E975, as the build refuses such a prompt, E802); a linked
    folder leading outside, or back into the walk, is not walked (W976); hidden entries (an
    editor's lock file `.#name.j2` is a dangling link) are skipped."""
    import os

    monkeypatch.chdir(tmp_path)
    write(tmp_path, "src/a.j2", "Hello {{ name }}.\n")
    write(tmp_path, "elsewhere/secret.j2", "Secret {{ key }}.\n")
    (tmp_path / "src/alias.j2").symlink_to("a.j2")
    (tmp_path / "src/stolen.j2").symlink_to(tmp_path / "elsewhere/secret.j2")
    (tmp_path / "src/linked").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    (tmp_path / "src/sub").mkdir()
    (tmp_path / "src/sub/loop").symlink_to("..", target_is_directory=True)
    (tmp_path / "src/.#a.j2").symlink_to("user@host.1234")
    opened = _opened(monkeypatch)
    result = import_tree("jinja", "src", "out", config=APPROX)
    assert [(d.code, d.path) for d in result.diagnostics] == [
        ("W976", "src/linked"),
        ("E975", "src/stolen.j2"),
        ("W976", "src/sub/loop"),
    ]
    assert "symlink leading outside the imported folder" in result.diagnostics[1].message
    assert sorted(f.source for f in result.files if f.status == "written") == ["a.j2", "alias.j2"]
    assert not any("secret" in os.path.realpath(path) for path in opened)
    assert not any(path.startswith(os.path.realpath(tmp_path / "elsewhere")) for path in map(os.path.realpath, opened))


def test_check_renders_from_the_files_the_import_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """--check's Jinja engine loads the templates from what the import read (each file once,
    through promptc's reader), not from the folder again."""
    import os

    write(tmp_path, "src/t.j2", 'Hello {{ name }}.\n{% include "./part.j2" %}\n')
    write(tmp_path, "src/part.j2", "Bye {{ name }}.\n")
    opened = _opened(monkeypatch)
    result = import_tree("jinja", tmp_path / "src", tmp_path / "out", check=True, config=APPROX)
    assert result.ok and result.checked == {"t": 2}, [str(d) for d in result.diagnostics]
    src = os.path.realpath(tmp_path / "src")
    reads = sorted(os.path.relpath(os.path.realpath(p), src) for p in opened if os.path.realpath(p).startswith(src))
    assert reads == ["part.j2", "t.j2"]
