"""`promptc import` on real projects' prompts (tests/import_fixtures/{genkit,contoso-chat,promptflow},
copied with their licences; each folder's README names the commit): what used to refuse common
real files, each against the real engines (dotpromptz, prompty, jinja2), and the tallies of
docs/import.md, which the slow test keeps true by driving the installed command.

- `--check` draws samples shaped by how each input is used (a `chat_history` looped over as
  objects gets a list of objects), and an empty sample is not a verdict;
- Prompty's `sample: ${file:chat.json}` is the check's sample;
- Prompty 1 headers are upgraded the way Prompty's own migration did;
- Jinja imports get a typed contract inferred from use, as Dotprompt imports do;
- Prompt flow's `# system:` role lines start messages, as Prompt flow's chat parser splits them.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from promptc.facts.config import Config
from promptc.tools.importers import import_tree
from promptc.tools.importers.check import promptflow_messages
from promptc.tools.importers.prompty import upgrade

from .conftest import run_promptc, write
from .import_corpus import FIXTURES

ROOT = Path(__file__).resolve().parent.parent
APPROX = Config(tokenizer="approx-bytes/4")
GENKIT, CONTOSO, PROMPTFLOW = FIXTURES / "genkit", FIXTURES / "contoso-chat", FIXTURES / "promptflow"
COPILOT = PROMPTFLOW / "examples/flows/chat/promptflow-copilot"


def _copy(tmp_path: Path, *files: Path, base: Path) -> Path:
    """The real files, paths kept under `base`, copied into a folder of their own."""
    src = tmp_path / "src"
    for file in files:
        target = src / file.relative_to(base)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(file, target)
    return src


def _errors(result) -> list[str]:
    return [str(d) for d in result.diagnostics if d.severity == "error"]


# ---------------------------------------------------------------------------------------------
# Samples shaped by use; an empty sample is not a verdict


def test_a_history_looped_over_as_objects_gets_a_list_of_objects(tmp_path: Path) -> None:
    """Drawn from the bare types, `chat_history` was a string and jinja2 failed on it (E969)."""
    write(
        tmp_path,
        "src/history.j2",
        "Conversation:\n{% for item in chat_history %}\nQ: {{ item.inputs.question }}\n"
        "A: {{ item.outputs.output }}\n{% endfor %}\nNow: {{ question }}\n",
    )
    result = import_tree("jinja", tmp_path / "src", tmp_path / "out", check=True, config=APPROX)
    assert result.ok, _errors(result)
    assert result.checked == {"history": 2}


def test_a_declared_object_is_sampled_with_the_properties_the_body_reads(tmp_path: Path) -> None:
    """Prompty's `kind: object` says nothing of properties; `{{ customer.firstName }}` on `{}`
    rendered "" in Prompty and failed in promptc (E967)."""
    write(
        tmp_path,
        "src/a.prompty",
        "---\nmodel: gpt-4o\ninputs:\n  - name: customer\n    kind: object\n---\nsystem:\n"
        "Hello {{ customer.firstName }}.\n{% for o in customer.orders %}- {{ o.name }}\n{% endfor %}\n",
    )
    result = import_tree("prompty", tmp_path / "src", tmp_path / "out", check=True, config=APPROX)
    assert result.ok, _errors(result)
    assert result.checked == {"a": 2}


def test_an_input_whose_emptiness_drops_a_message_gets_a_full_sample(tmp_path: Path) -> None:
    """Genkit's ex06: with `userQuestion` empty, Dotprompt drops the user message. The check
    reported a differing render (E967) for a file that imports correctly."""
    src = _copy(tmp_path, GENKIT / "js/doc-snippets/src/dotprompt/prompts/ex06.prompt", base=GENKIT)
    done = run_promptc("import", "dotprompt", str(src), "-o", str(tmp_path / "out"), "--check", "--format", "json")
    payload = json.loads(done.stdout)
    assert done.returncode == 0, done.stdout
    assert (payload["imported"], payload["refused"]) == (1, 0)
    assert payload["checked"] == {"js/doc-snippets/src/dotprompt/prompts/ex06": 2}


def test_a_message_left_empty_is_left_out_on_both_sides(tmp_path: Path) -> None:
    """A message only a false condition fills: Dotprompt leaves it out, promptc renders it
    empty. Caused only by emptiness, that is no difference (no E967)."""
    write(
        tmp_path,
        "src/a.prompt",
        '---\ninput:\n  schema:\n    q: string\n    extra: boolean\n---\n{{role "system"}}\nBe brief.\n'
        '{{role "user"}}\n{{#if extra}}Also this.{{/if}}\n{{role "user"}}\n{{q}}\n',
    )
    result = import_tree("dotprompt", tmp_path / "src", tmp_path / "out", check=True, config=APPROX)
    assert result.ok, _errors(result)
    assert result.checked == {"a": 2}


def test_a_source_sample_the_template_cannot_read_is_replaced_and_said(tmp_path: Path) -> None:
    """contoso-chat's `chat.prompty`: `documentation` is declared `object` and its sample is one
    object, where the template loops over a list. The contract takes the list (W972 says why),
    the check renders a list made from the type (W972 at the sample), and the file is written."""
    src = _copy(
        tmp_path,
        CONTOSO / "src/api/contoso_chat/chat.prompty",
        CONTOSO / "src/api/contoso_chat/chat.json",
        base=CONTOSO,
    )
    result = import_tree("prompty", src, tmp_path / "out", check=True, config=APPROX)
    assert result.ok, _errors(result)
    warnings = {d.message: (d.line, d.col) for d in result.diagnostics if d.code == "W972"}
    assert warnings[
        "the kind `object` of the input `documentation` is not imported: the template loops over it, "
        "so it is a list (Prompty does not check kinds)"
    ] == (21, 5)
    assert warnings[
        "the sample value of `documentation` is not imported: it is an object, and the template loops over it"
    ] == (24, 1)
    text = (tmp_path / "out/src/api/contoso_chat/chat.prompt").read_text()
    assert '/// param: model="gpt-4o-mini"' in text  # Prompty 1's azure_deployment, as Prompty 2 reads it
    schema = json.loads((tmp_path / "out/src/api/contoso_chat/chat.documentation.schema.json").read_text())
    assert schema["type"] == "array" and set(schema["items"]["properties"]) == {"id", "title", "content"}


def test_a_source_sample_against_the_declared_kind_says_what_is_wrong(tmp_path: Path) -> None:
    """contoso-chat's groundedness evaluator declares `context: {type: object}` and samples a
    string: the check says so at the declaration, not a traceback or a TypeError."""
    src = _copy(tmp_path, CONTOSO / "src/api/evaluators/custom_evals/groundedness.prompty", base=CONTOSO)
    result = import_tree("prompty", src, tmp_path / "out", check=True, config=APPROX)
    (problem,) = [d for d in result.diagnostics if d.severity == "error"]
    assert problem.code == "E967" and (problem.line, problem.col) == (17, 3)
    assert "does not fit the input types the import declares: context: expected object" in problem.message
    assert problem.hint == "declare the kinds the values have, or give other inputs with --inputs FILE"


# ---------------------------------------------------------------------------------------------
# Prompty: `sample: ${file:…}` and Prompty 1 headers


def test_prompty_file_sample_is_the_checks_sample(tmp_path: Path) -> None:
    """`sample: ${file:s.json}` refused the whole file (E961). It is read beside the prompt, by
    import's reader, as the check's sample: here the only values jinja2 can divide by."""
    prompty = (
        "---\nmodel: gpt-4o\ninputs:\n  n:\n    type: integer\nsample: ${file:s.json}\n---\nuser:\n{{ 10 // n }}\n"
    )
    write(tmp_path, "src/a.prompty", prompty)
    write(tmp_path, "src/s.json", '{"n": 5}')
    result = import_tree("prompty", tmp_path / "src", tmp_path / "out", check=True, config=APPROX)
    assert result.ok, _errors(result)
    assert not [d for d in result.diagnostics if d.code == "W972"]
    # without the file: a warning at the reference, and the samples made from the type (0 divides nothing)
    (tmp_path / "src/s.json").unlink()
    again = import_tree("prompty", tmp_path / "src", tmp_path / "out2", check=True, config=APPROX)
    (dropped,) = [d for d in again.diagnostics if d.code == "W972"]
    assert (dropped.line, dropped.col) == (6, 1) and "src/s.json`: cannot read file: no such file" in dropped.message
    assert [d.code for d in again.diagnostics if d.severity == "error"] == ["E969"]


@pytest.mark.parametrize(
    ("reference", "files", "why"),
    [
        ("../outside.json", {"outside.json": '{"q": "x"}'}, "outside.json`: outside the imported folder"),
        ("s.json", {"src/s.json": "[1, 2]"}, "s.json`: not a mapping of input values"),
        ("s.json", {"src/s.json": '{"q": '}, "(line 1, column "),
        ("s.yaml", {"src/s.yaml": "q: &a x\nr: *a\n"}, "(line 1, column "),
        ("s.txt", {"src/s.txt": "q"}, "s.txt`: Prompty reads a file of this kind as text"),
    ],
)
def test_a_sample_file_that_cannot_serve_is_a_located_warning(
    tmp_path: Path, reference: str, files: dict[str, str], why: str
) -> None:
    write(tmp_path, "src/a.prompty", f"---\nmodel: gpt-4o\nsample: ${{file:{reference}}}\n---\nuser:\n{{{{ q }}}}\n")
    for rel, text in files.items():
        write(tmp_path, rel, text)
    result = import_tree("prompty", tmp_path / "src", tmp_path / "out", check=True, config=APPROX)
    assert result.ok, _errors(result)
    (dropped,) = [d for d in result.diagnostics if d.code == "W972"]
    assert (dropped.line, dropped.col) == (3, 1) and why in dropped.message, dropped.message
    assert dropped.hint and "--inputs" in dropped.hint


def test_a_sample_file_is_read_by_import_s_reader_bounded(tmp_path: Path) -> None:
    """A named pipe is never opened for a blocking read, JSON nested 100,000 levels never reaches
    the recursive parser: each is a W972 at the reference, and the check goes on."""
    import os

    write(tmp_path, "src/a.prompty", "---\nmodel: gpt-4o\nsample: ${file:s.json}\n---\nuser:\n{{ q }}\n")
    os.mkfifo(tmp_path / "src/s.json")
    result = import_tree("prompty", tmp_path / "src", tmp_path / "out", check=True, config=APPROX)
    (dropped,) = [d for d in result.diagnostics if d.code == "W972"]
    assert result.ok and "not a regular file" in dropped.message
    (tmp_path / "src/s.json").unlink()
    write(tmp_path, "src/s.json", "[" * 100_000 + "]" * 100_000)
    result = import_tree("prompty", tmp_path / "src", tmp_path / "out", check=True, config=APPROX)
    (dropped,) = [d for d in result.diagnostics if d.code == "W972"]
    assert result.ok and "JSON nests deeper than 32 levels (line 1, column 33)" in dropped.message


def test_prompty1_headers_load_as_prompty_migrated_them(tmp_path: Path) -> None:
    """contoso-chat's evaluators are Prompty 1 files (`inputs: {question: {type: string}}`),
    which prompty 2.1 cannot load: --check failed with "give inputs with --inputs FILE"."""
    src = _copy(tmp_path, CONTOSO / "src/api/evaluators/custom_evals/coherence.prompty", base=CONTOSO)
    done = run_promptc("import", "prompty", str(src), "-o", str(tmp_path / "out"), "--check")
    assert done.returncode == 0, done.stdout + done.stderr
    text = (tmp_path / "out/src/api/evaluators/custom_evals/coherence.prompt").read_text()
    assert '/// param: model="gpt-4"' in text and "/// param: max_tokens=128" in text
    assert "/// input: question: str, context: @coherence.context.schema.json, answer: str" in text


def test_upgrade_follows_prompty_s_own_migration() -> None:
    """The renames of prompty's migration (`prompty/core/migration.py`, removed in 645fffa3),
    and where each upgraded key came from."""
    header = {
        "model": {
            "api": "chat",
            "configuration": {"type": "azure_openai", "azure_deployment": "gpt-4o", "azure_endpoint": "${env:E}"},
            "parameters": {"max_tokens": 9, "top_p": 0.5, "stop": ["x"]},
        },
        "inputs": {"q": {"type": "string", "sample": "hi"}, "n": 3, "m": {"kind": "integer"}},
        "authors": ["a"],
        "template": "jinja2",
        "sample": {"q": "x"},
    }
    upgraded, moved = upgrade(header)
    assert upgraded == {
        "model": {
            "apiType": "chat",
            "provider": "foundry",
            "id": "gpt-4o",
            "connection": {"kind": "key", "endpoint": "${env:E}"},
            "options": {"maxOutputTokens": 9, "topP": 0.5, "stopSequences": ["x"]},
        },
        "inputs": [
            {"name": "q", "kind": "string", "default": "hi"},
            {"name": "n", "kind": "string", "default": 3},
            {"name": "m", "kind": "integer"},  # a Prompty 2 entry keeps its kind
        ],
        "metadata": {"authors": ["a"]},
        "template": {"format": {"kind": "jinja2"}, "parser": {"kind": "prompty"}},
    }
    assert moved[("model", "id")] == ("model", "configuration", "azure_deployment")
    assert moved[("inputs", 0, "kind")] == ("inputs", "q", "type")
    assert header["model"]["api"] == "chat"  # the header read is left as it was
    v2 = {"model": {"id": "gpt-4o"}, "inputs": {"m": {"kind": "integer"}}, "version": "1"}
    assert upgrade(v2) == (v2, {})


def test_an_engine_that_cannot_load_the_file_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file the engine refuses whatever the inputs: E969 says what it refuses, and does not ask
    for other inputs."""
    import prompty.core.loader

    def refuse(data, path):
        raise ValueError("Invalid Property discriminator field 'kind': expected non-blank string")

    monkeypatch.setattr(prompty.core.loader, "_build_agent", refuse)
    write(tmp_path, "src/a.prompty", "---\nmodel: gpt-4o\n---\nuser:\nhi\n")
    result = import_tree("prompty", tmp_path / "src", tmp_path / "out", check=True, config=APPROX)
    (problem,) = [d for d in result.diagnostics if d.severity == "error"]
    assert problem.code == "E969" and problem.message.startswith("the original engine cannot load the file: ValueError")
    assert problem.hint == "prompty refuses the file itself, whatever the inputs: correct what it names"
    assert result.checked == {"a": 1}  # loaded once: the second input set is not tried


# ---------------------------------------------------------------------------------------------
# Jinja: typed contracts, Prompt flow's role lines


def test_jinja_inputs_are_typed_by_their_use_in_the_bindings(tmp_path: Path) -> None:
    """Jinja imports declared their inputs untyped, so bindings said `Any`."""
    write(
        tmp_path,
        "legacy/t.j2",
        "Hi {{ name }}, {{ n + 1 }} items.\n{% for item in history %}{{ item.role }}: {{ item.text }}\n{% endfor %}"
        "{% if vip is not none %}VIP{% endif %}\n",
    )
    done = run_promptc("import", "jinja", "legacy", "-o", "prompts_src", "--check", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    text = (tmp_path / "prompts_src/t.prompt").read_text()
    assert "/// input: name: str, n: float, history: @t.history.schema.json, vip" in text
    assert run_promptc("build", cwd=tmp_path).returncode == 0
    python = run_promptc("gen", "python", cwd=tmp_path)
    assert python.returncode == 0, python.stderr
    signature = next(line for line in python.stdout.splitlines() if line.startswith("def t("))
    assert "name: str" in signature and "n: float" in signature and "history: list[" in signature
    assert "history: list[Any]" not in signature and "name: Any" not in signature


def test_an_included_template_s_inputs_are_typed_for_each_includer() -> None:
    """The includer declares its includes' inputs, typed by every use; one includer's uses do
    not leak into another's through the partial they share."""
    from promptc.tools.importers import convert

    files = {
        "a.j2": b'{% include "p.j2" %}\n{{ x.b }}\n',
        "b.j2": b'{% include "p.j2" %}\nhi\n',
        "p.j2": b"{{ x.a }}\n",
    }
    shapes = {c.source: c.shapes["x"] for c in convert("jinja", files)}
    assert shapes["a.j2"]["required"] == ["b", "a"]
    assert shapes["b.j2"]["required"] == shapes["p.j2"]["required"] == ["a"]


def test_types_are_inferred_to_a_bounded_depth(tmp_path: Path) -> None:
    """19 nested loops and a 30-segment path: typed 15 levels down, untyped below, so the schema
    file stays within the 32 levels of JSON the build reads (E821)."""
    loops = "".join(f"{{% for x{i} in {'xs' if i == 0 else f'x{i - 1}'} %}}" for i in range(19))
    path = ".".join(f"k{i}" for i in range(30))
    write(tmp_path, "legacy/deep.j2", loops + "{{ x18." + path + " }}" + "{% endfor %}" * 19 + "\n")
    done = run_promptc("import", "jinja", "legacy", "-o", "prompts_src", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    schema = json.loads((tmp_path / "prompts_src/deep.xs.schema.json").read_text())
    levels = 0
    while "items" in schema:
        schema, levels = schema["items"], levels + 1
    assert levels == 13 and schema == {"type": "array"}
    assert run_promptc("build", cwd=tmp_path).returncode == 0


def test_promptflow_role_lines_start_messages(tmp_path: Path) -> None:
    """Prompt flow's `# system:` / `# user:` lines, which its chat parser splits the rendered text
    at, are promptc messages; --check splits jinja2's text the same way."""
    src = _copy(tmp_path, COPILOT / "check_query_relevance.jinja2", COPILOT / "refuse_to_answer.jinja2", base=COPILOT)
    done = run_promptc("import", "jinja", str(src), "-o", str(tmp_path / "out"), "--check", "--format", "json")
    payload = json.loads(done.stdout)
    assert (payload["imported"], payload["refused"]) == (2, 0), payload["diagnostics"]
    assert payload["checked"] == {"check_query_relevance": 2, "refuse_to_answer": 2}
    text = (tmp_path / "out/check_query_relevance.prompt").read_text()
    assert re.findall(r"^----- (\w+) -----$", text, re.M) == ["system", "user"]
    assert text.rstrip().endswith("----- user -----\n${question}")
    assert "# system:" not in text and "# user:" not in text


def test_a_promptflow_role_line_in_a_loop_is_refused_where_it_stands(tmp_path: Path) -> None:
    """A role line in a loop over the chat history makes as many messages as turns: promptc's
    messages are fixed at build time (before: E969, a string sample for the history)."""
    src = _copy(tmp_path, COPILOT / "modify_query_with_history.jinja2", base=COPILOT)
    result = import_tree("jinja", src, tmp_path / "out", check=True, config=APPROX)
    (problem,) = [d for d in result.diagnostics if d.severity == "error"]
    assert problem.code == "E962" and (problem.line, problem.col) == (9, 1)
    assert problem.message.startswith("a Prompt flow role line inside a block")
    assert "send a conversation's turns as messages from your code" in (problem.hint or "")


@pytest.mark.parametrize(
    ("text", "code", "where"),
    [
        ("# system:\nHi.\n# tool:\n{{ x }}\n", "E962", (3, 1)),
        ("# system:\nHi.\n{% if a %}\nuser:\n{{ x }}\n{% endif %}\n", "E962", (4, 1)),
        ("# system:\nHi.\n# user:\n## name:\nbob\n## content:\n{{ x }}\n", "E962", (4, 1)),
    ],
)
def test_promptflow_role_lines_promptc_has_no_message_for(text: str, code: str, where: tuple[int, int]) -> None:
    from promptc.tools.importers import convert

    (converted,) = convert("jinja", {"t.jinja2": text.encode()})
    (problem,) = converted.diagnostics
    assert converted.refused and problem.code == code and (problem.line, problem.col) == where


def test_a_template_that_does_not_open_with_a_role_line_is_one_message() -> None:
    """Only a template whose first line of text is a role line is a Prompt flow chat template
    (Prompt flow's parser refuses text before the first one); others stay one `--role` message."""
    from promptc.tools.importers import convert

    (converted,) = convert("jinja", {"t.j2": b"Notes:\nuser:\n{{ x }}\n"}, role="user")
    assert re.findall(r"^----- (\w+) -----$", converted.text, re.M) == ["user"]
    assert "user:\n${x}" in converted.text


def test_promptflow_messages_split_as_its_chat_parser() -> None:
    """The port of Prompt flow's `parse_chat` separator: `#` optional, case-insensitive, blank
    lines around, each message stripped; a role line must end with a newline. Linear: its own
    pattern re-read runs of blank lines."""
    text = "\n# System:\n  Be brief.  \n\nuser:  \n\nQ?\n#Assistant :\nA.\nuser:"
    assert promptflow_messages(text) == [("system", "Be brief."), ("user", "Q?"), ("assistant", "A.\nuser:")]
    with pytest.raises(ValueError, match="before the first role line"):
        promptflow_messages("text\nuser:\nhi\n")
    assert promptflow_messages("user:\n" + "\n" * 200_000 + "x") == [("user", "x")]


# ---------------------------------------------------------------------------------------------
# The tallies of docs/import.md, by the installed command


def documented_real_counts() -> dict[str, tuple[int, ...]]:
    """The real-projects table in docs/import.md: corpus → (files, imported, refused, renders compared)."""
    text = (ROOT / "docs" / "import.md").read_text(encoding="utf-8")
    section = text.split("## Measured on real projects' prompts", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for m in re.finditer(r"^\| (.+?) \| (\d+) \| (\d+) \| (\d+) \| (\d+) \|$", section, re.M):
        rows[m.group(1)] = tuple(int(m.group(k)) for k in (2, 3, 4, 5))
    return rows


REAL = {
    "Genkit (`firebase/genkit`, every `.prompt` file)": ("dotprompt", GENKIT),
    "Azure contoso-chat (`.prompty`, Prompty 1)": ("prompty", CONTOSO),
    "Prompt flow (`promptflow-copilot`'s Jinja templates)": ("jinja", PROMPTFLOW),
}


@pytest.mark.slow
def test_real_projects_prompts_are_imported_or_refused_with_a_location(tmp_path: Path) -> None:
    counts = {}
    for label, (kind, src) in REAL.items():
        out = tmp_path / kind
        done = run_promptc("import", kind, str(src), "-o", str(out), "--check", "--format", "json", real=True)
        assert "Traceback" not in done.stderr, done.stderr
        payload = json.loads(done.stdout)
        refused = {f["source"] for f in payload["files"] if f["status"] == "refused"}
        for d in payload["diagnostics"]:  # every diagnostic is located, with a code and a hint
            assert d["code"] and d["line"] >= 1 and d["col"] >= 1, d
            if d["severity"] == "error":
                assert d["hint"], d
                assert re.fullmatch(r"E9[67]\d", d["code"]), d
        located = {Path(d["path"]).resolve() for d in payload["diagnostics"] if d["severity"] == "error"}
        for source in refused:
            assert (src / source).resolve() in located, f"{source} refused without a diagnostic of its own"
        for f in payload["files"]:
            if f["status"] == "written":  # rendered by both engines and compared
                assert (out / f["target"]).is_file()
                assert payload["checked"].get(f["target"].removesuffix(".prompt"), 0) >= 1, f["target"]
        counts[label] = (
            len(payload["files"]),
            payload["imported"],
            payload["refused"],
            sum(payload["checked"].values()),
        )
    assert counts == documented_real_counts(), counts
