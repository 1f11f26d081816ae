"""Compare two build manifests: which prompts lost their cached prefix, whose input contract changed,
which were added or removed.

Pure data in, data out: `diff_manifests(old, new)` takes two parsed `manifest.json` documents and
returns a `ManifestDiff`; the renderers return strings. Reading files and exit codes belong to the CLI.

What counts as what:
- a **cache bust**: a prompt in both manifests whose old `prefix_sha256` was set and differs from the
  new one (or is gone). Every cached copy of the old prefix stops hitting, so the tokens at stake are
  the old `prefix_tokens`. A prompt that had no cache-stable prefix before loses nothing.
- an **input contract change**: a prompt in both whose `inputs` differ. An added input is *breaking*:
  callers that do not pass it fail to render. A removed input is a change callers should know about
  (they pass a value that is no longer used) but does not break them.
- an **output contract change**: a prompt in both whose `/// output:` schema changed, each change
  classified for the code that parses responses (`promptc.outputcontract`): a removed property, a
  changed type, an enum admitting new values … are *breaking* (`--fail-on output-breaking`); a new
  property, a narrowed enum … are compatible (`--fail-on output` fails on either).
- **added** / **removed** prompts, and **changed** ones (any change to the artifact's bytes).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import field, replace
from typing import Any

from ..facts.config import Config
from ..facts.diagnostics import github_escape
from ..facts.diagnostics import markdown_escape as esc
from ..facts.language import FAIL_KINDS
from ..facts.records import dataclass
from ..passes.context import SourceTree
from ..runtime.inputtypes import accepts, describe
from ..runtime.model import ArtifactError, Manifest
from .divergence import FirstDifference, first_difference, prompt_in
from .outputcontract import OutputChange, classify

DIFF_SCHEMA = "promptc.diff/1"  # additive fields since: provider, cacheable figures, first_difference, outputs


class ManifestError(ValueError):
    """The document is not a promptc manifest this version can compare."""


@dataclass(frozen=True, slots=True)
class CacheBust:
    """One prompt whose cached prefix stops hitting.

    Token figures, for whoever prices them (`tokens_at_stake` is what every cached copy of the
    old prefix was saving; `cacheable_tokens_at_stake` what the old build's provider profile
    actually cached of it — 0 below the model's minimum, None without a profile). `first_difference`
    is filled by `locate_busts` when the source trees are known."""

    name: str
    old_prefix_sha256: str
    new_prefix_sha256: str | None
    #: the old prefix's tokens: what every cached copy of it was saving
    tokens_at_stake: int
    new_prefix_tokens: int
    #: the profile of the old build (`openai`), its cacheable tokens, and the new build's
    provider: str | None = None
    cacheable_tokens_at_stake: int | None = None
    new_cacheable_tokens: int | None = None
    #: the tokenizer the figures are counted with, and whether it is the provider's own
    tokenizer: str | None = None
    tokens_exact: bool = False
    first_difference: FirstDifference | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "old_prefix_sha256": self.old_prefix_sha256,
            "new_prefix_sha256": self.new_prefix_sha256,
            "tokens_at_stake": self.tokens_at_stake,
            "new_prefix_tokens": self.new_prefix_tokens,
            "provider": self.provider,
            "cacheable_tokens_at_stake": self.cacheable_tokens_at_stake,
            "new_cacheable_tokens": self.new_cacheable_tokens,
            "tokenizer": self.tokenizer,
            "tokens_exact": self.tokens_exact,
            "first_difference": None if self.first_difference is None else self.first_difference.to_json(),
        }


@dataclass(frozen=True, slots=True)
class TypeChange:
    """An input whose declared type changed: `breaking` when a value the old type admitted can fail
    the new one (a narrower type, or an input that may be None becoming required)."""

    input: str
    old: str
    new: str
    breaking: bool

    def to_json(self) -> dict[str, Any]:
        return {"input": self.input, "old": self.old, "new": self.new, "breaking": self.breaking}


@dataclass(frozen=True, slots=True)
class ContractChange:
    name: str
    added_inputs: tuple[str, ...]
    removed_inputs: tuple[str, ...]
    type_changes: tuple[TypeChange, ...] = ()
    #: the added inputs callers may leave out (their type admits None)
    optional_added: tuple[str, ...] = ()

    @property
    def breaking(self) -> bool:
        required_added = [name for name in self.added_inputs if name not in self.optional_added]
        return bool(required_added) or any(change.breaking for change in self.type_changes)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "added_inputs": list(self.added_inputs),
            "removed_inputs": list(self.removed_inputs),
            "type_changes": [change.to_json() for change in self.type_changes],
            "breaking": self.breaking,
        }


@dataclass(frozen=True, slots=True)
class OutputContractChange:
    """A prompt whose output schema changed: every change, each breaking or compatible."""

    name: str
    changes: tuple[OutputChange, ...]

    @property
    def breaking(self) -> bool:
        return any(change.breaking for change in self.changes)

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "breaking": self.breaking, "changes": [c.to_json() for c in self.changes]}


@dataclass(frozen=True, slots=True)
class ManifestDiff:
    busts: tuple[CacheBust, ...] = ()
    contracts: tuple[ContractChange, ...] = ()
    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    #: prompts in both whose artifact bytes differ, for whatever reason
    changed: tuple[str, ...] = ()
    #: (old, new) when the manifests were metered with different tokenizers: token counts do not compare
    tokenizer: tuple[str | None, str | None] | None = None
    #: name → source path under the source folder (new manifest first), for annotations
    sources: dict[str, str] = field(default_factory=dict, compare=False, repr=False)
    #: name → source path in the old manifest
    old_sources: dict[str, str] = field(default_factory=dict, compare=False, repr=False)
    #: prompts in both whose output schema changed
    outputs: tuple[OutputContractChange, ...] = ()

    @property
    def tokens_at_stake(self) -> int:
        return sum(b.tokens_at_stake for b in self.busts)

    @property
    def breaking(self) -> tuple[ContractChange, ...]:
        return tuple(c for c in self.contracts if c.breaking)

    @property
    def empty(self) -> bool:
        return not (
            self.busts or self.contracts or self.outputs or self.added or self.removed or self.changed or self.tokenizer
        )

    def has(self, kind: str) -> bool:
        """Whether a change of `kind` (one of FAIL_KINDS) exists."""
        if kind == "bust":
            return bool(self.busts)
        if kind == "contract":
            return bool(self.contracts)
        if kind == "breaking":
            return bool(self.breaking)
        if kind == "removed":
            return bool(self.removed)
        if kind == "output":
            return bool(self.outputs)
        if kind == "output-breaking":
            return any(change.breaking for change in self.outputs)
        raise ValueError(f"unknown kind of change {kind!r}; expected one of {', '.join(FAIL_KINDS)}")

    def failing(self, fail_on: Iterable[str]) -> list[str]:
        """The kinds among `fail_on` that this diff contains, in FAIL_KINDS order."""
        wanted = set(fail_on)
        return [kind for kind in FAIL_KINDS if kind in wanted and self.has(kind)]

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": DIFF_SCHEMA,
            "busts": [b.to_json() for b in self.busts],
            "contracts": [c.to_json() for c in self.contracts],
            "outputs": [o.to_json() for o in self.outputs],
            "added": list(self.added),
            "removed": list(self.removed),
            "changed": list(self.changed),
            "tokenizer": {"old": self.tokenizer[0], "new": self.tokenizer[1]} if self.tokenizer else None,
            "summary": {
                "busts": len(self.busts),
                "tokens_at_stake": self.tokens_at_stake,
                "contracts": len(self.contracts),
                "breaking": len(self.breaking),
                "outputs": len(self.outputs),
                "outputs_breaking": sum(1 for o in self.outputs if o.breaking),
                "added": len(self.added),
                "removed": len(self.removed),
                "changed": len(self.changed),
            },
        }


# ---------------------------------------------------------------------------------------------
# Comparing


def manifest_of(manifest: Manifest | Any, which: str) -> Manifest:
    """`manifest` typed (a decoded `manifest.json` document, or already a `Manifest`);
    `ManifestError` naming `which` ("old", "new") when it is not a manifest this version reads."""
    if isinstance(manifest, Manifest):
        return manifest
    try:
        return Manifest.from_json(manifest)
    except ArtifactError as exc:
        raise ManifestError(f"{which} {exc}") from None


def _type_changes(old: dict[str, Any], new: dict[str, Any], names: set[str]) -> tuple[TypeChange, ...]:
    old_props, new_props = old.get("properties", {}), new.get("properties", {})
    old_required, new_required = set(old.get("required", ())), set(new.get("required", ()))
    changes = []
    for name in sorted(names):
        before, after = old_props.get(name, {}), new_props.get(name, {})
        newly_required = name in new_required and name not in old_required
        if before == after and not newly_required:
            continue
        changes.append(
            TypeChange(name, describe(before), describe(after), newly_required or not accepts(after, before))
        )
    return tuple(changes)


def diff_manifests(old: Manifest | dict[str, Any], new: Manifest | dict[str, Any]) -> ManifestDiff:
    """What changed between two manifests (model objects or decoded `manifest.json` documents),
    prompt by prompt, in name order.

    Raises `ManifestError` when either document is not a promptc manifest this version reads.
    """
    before_manifest, after_manifest = manifest_of(old, "old"), manifest_of(new, "new")
    old_artifacts, new_artifacts = before_manifest.artifacts, after_manifest.artifacts
    busts: list[CacheBust] = []
    contracts: list[ContractChange] = []
    outputs: list[OutputContractChange] = []
    changed: list[str] = []
    for name in sorted(old_artifacts.keys() & new_artifacts.keys()):
        before, after = old_artifacts[name], new_artifacts[name]
        if before.prefix_sha256 and before.prefix_sha256 != after.prefix_sha256:
            busts.append(
                CacheBust(
                    name,
                    before.prefix_sha256,
                    after.prefix_sha256,
                    before.prefix_tokens,
                    after.prefix_tokens,
                    before.provider,
                    before.cacheable_tokens,
                    after.cacheable_tokens,
                    before.tokenizer,
                    before.tokens_exact,
                )
            )
        old_inputs, new_inputs = set(before.inputs), set(after.inputs)
        types = _type_changes(before.input_schema, after.input_schema, old_inputs & new_inputs)
        if old_inputs != new_inputs or types:
            optional = set(after.input_schema.get("properties", {})) - set(after.input_schema.get("required", ()))
            added = tuple(sorted(new_inputs - old_inputs))
            contracts.append(
                ContractChange(
                    name,
                    added,
                    tuple(sorted(old_inputs - new_inputs)),
                    types,
                    tuple(n for n in added if n in optional),
                )
            )
        if before.output_schema != after.output_schema and not (
            before.output_schema is None and after.output_schema is None
        ):
            found = classify(before.output_schema, after.output_schema)
            if found:
                outputs.append(OutputContractChange(name, tuple(found)))
        if before.sha256 != after.sha256:
            changed.append(name)
    old_tokenizer, new_tokenizer = before_manifest.tokenizer, after_manifest.tokenizer
    sources = {name: entry.source for name, entry in [*old_artifacts.items(), *new_artifacts.items()]}
    old_sources = {name: entry.source for name, entry in old_artifacts.items()}
    return ManifestDiff(
        busts=tuple(busts),
        contracts=tuple(contracts),
        added=tuple(sorted(new_artifacts.keys() - old_artifacts.keys())),
        removed=tuple(sorted(old_artifacts.keys() - new_artifacts.keys())),
        changed=tuple(changed),
        tokenizer=(old_tokenizer, new_tokenizer) if old_tokenizer != new_tokenizer else None,
        sources=sources,
        old_sources=old_sources,
        outputs=tuple(outputs),
    )


# ---------------------------------------------------------------------------------------------
# Rendering


def _plural(count: int, word: str, plural: str | None = None) -> str:
    return f"{count} {word if count == 1 else (plural or word + 's')}"


def _short(sha: str | None) -> str:
    return sha[:12] if sha else "none"


def _contract_text(change: ContractChange) -> str:
    parts = [f"+{name}" for name in change.added_inputs] + [f"-{name}" for name in change.removed_inputs]
    parts += [f"{t.input}: {t.old} → {t.new}" for t in change.type_changes]
    label = "breaking: existing callers can fail" if change.breaking else "not breaking"
    if change.breaking and not change.type_changes:
        label = "breaking: callers must pass the new inputs"
    return f"{' '.join(parts)} ({label})"


def _cacheable(bust: CacheBust) -> str:
    """`, 0 of them cached by openai` — what the old build's profile actually cached."""
    if bust.provider is None or bust.cacheable_tokens_at_stake is None:
        return ""
    if bust.cacheable_tokens_at_stake == bust.tokens_at_stake:
        return f", all cached by {bust.provider}"
    return f", {bust.cacheable_tokens_at_stake} of them cached by {bust.provider}"


def _difference_lines(difference: FirstDifference | None) -> list[str]:
    """The first differing character, in the new and the old source, each with its line."""
    if difference is None:
        return []
    lines = []
    for label, point in (("new", difference.new), ("old", difference.old)):
        if point is None:
            continue
        why = f" ({point.reason})" if point.reason else ""
        lines.append(f"    {label}: {point.label()}{why}")
        if point.text:
            text, column = _window(point.text, point.column)
            lines.append(f"      | {text}")
            lines.append(f"      | {' ' * (column - 1)}^")
    return lines


def _window(text: str, column: int, width: int = 120) -> tuple[str, int]:
    """A long line cut to `width` characters around `column` (with … where cut), and the column in it."""
    if len(text) <= width:
        return text, column
    start = max(0, min(column - 1 - width // 2, len(text) - width))
    cut = text[start : start + width]
    column -= start
    if start:
        cut, column = "…" + cut[1:], column
    if start + width < len(text):
        cut = cut[:-1] + "…"
    return cut, column


def locate_busts(
    diff: ManifestDiff, old_tree: SourceTree | None, new_tree: SourceTree | None, config: Config
) -> ManifestDiff:
    """`diff` with each cache bust's first differing character located in the old and new source
    trees (`SourceTree`s; either may be None: not given). Compiles only the busted prompts, in
    memory, with `config`."""
    if old_tree is None or new_tree is None or not diff.busts:
        return diff
    located = []
    for bust in diff.busts:
        rel = diff.sources.get(bust.name) or f"{bust.name}.prompt"
        old_rel = diff.old_sources.get(bust.name, rel)
        difference = first_difference(prompt_in(old_tree, old_rel, config), prompt_in(new_tree, rel, config))
        located.append(replace(bust, first_difference=difference))
    return replace(diff, busts=tuple(located))


def summary_line(diff: ManifestDiff) -> str:
    if diff.empty:
        return "no changes"
    parts = [
        f"{_plural(len(diff.busts), 'cache bust')} ({_plural(diff.tokens_at_stake, 'prefix token')} at stake)",
        f"{_plural(len(diff.contracts), 'input contract change')} ({len(diff.breaking)} breaking)",
        *(
            [
                f"{_plural(len(diff.outputs), 'output contract change')} ({sum(o.breaking for o in diff.outputs)} breaking)"
            ]
            if diff.outputs
            else []
        ),
        f"{len(diff.added)} added",
        f"{len(diff.removed)} removed",
        f"{len(diff.changed)} changed",
    ]
    return ", ".join(parts)


def render_text(diff: ManifestDiff) -> str:
    """A human report: one section per kind of change, then the summary line."""
    lines: list[str] = []
    if diff.tokenizer:
        lines.append(f"tokenizer changed: {diff.tokenizer[0]} → {diff.tokenizer[1]} (token counts do not compare)")
    if diff.busts:
        lines.append(f"cache busts ({len(diff.busts)}):")
        for bust in diff.busts:
            lines.append(
                f"  {bust.name}: prefix {_short(bust.old_prefix_sha256)} → {_short(bust.new_prefix_sha256)}, "
                f"{_plural(bust.tokens_at_stake, 'token')} at stake{_cacheable(bust)}"
            )
            lines += _difference_lines(bust.first_difference)
    if diff.contracts:
        lines.append(f"input contract changes ({len(diff.contracts)}):")
        for change in diff.contracts:
            lines.append(f"  {change.name}: {_contract_text(change)}")
    if diff.outputs:
        lines.append(f"output contract changes ({len(diff.outputs)}):")
        for output in diff.outputs:
            label = "breaking: code that parses the response can fail" if output.breaking else "compatible"
            lines.append(f"  {output.name} ({label}):")
            for kind in output.changes:
                lines.append(f"    {'breaking' if kind.breaking else 'compatible'}: {kind.text()}")
    if diff.added:
        lines.append(f"added prompts ({len(diff.added)}): {', '.join(diff.added)}")
    if diff.removed:
        lines.append(f"removed prompts ({len(diff.removed)}): {', '.join(diff.removed)}")
    if diff.changed:
        lines.append(f"changed artifacts ({len(diff.changed)}): {', '.join(diff.changed)}")
    lines.append(f"diff: {summary_line(diff)}")
    return "\n".join(lines)


def _annotation(level: str, title: str, message: str, file: str | None) -> str:
    props = f"file={github_escape(file, prop=True)}," if file else ""
    return f"::{level} {props}title={github_escape(title, prop=True)}::{github_escape(message)}"


def render_github(diff: ManifestDiff, fail_on: Iterable[str] = (), source_root: str | None = None) -> list[str]:
    """GitHub Actions workflow commands, one per change. A change of a kind named in `fail_on` is an
    `::error`, others are `::warning` (`::notice` for added or removed prompts that do not fail).
    `source_root` (the source folder, repository-relative) lets annotations point at the `.prompt` file."""
    failing = set(fail_on)

    def file_of(name: str) -> str | None:
        source = diff.sources.get(name)
        if source is None or source_root is None:
            return None
        return f"{source_root.rstrip('/')}/{source}" if source_root not in ("", ".") else source

    lines: list[str] = []
    for bust in diff.busts:
        level = "error" if "bust" in failing else "warning"
        message = (
            f"cache prefix of `{bust.name}` changed ({_short(bust.old_prefix_sha256)} → {_short(bust.new_prefix_sha256)}): "
            f"{_plural(bust.tokens_at_stake, 'cached prefix token')} stop hitting"
        )
        point = bust.first_difference.new if bust.first_difference is not None else None
        if point is not None and not point.source.startswith("<") and ":" not in point.source:
            # on the line that differs (a path as the CLI shows it: relative to the current folder)
            props = f"file={github_escape(point.source, prop=True)},line={point.line},col={point.column},"
            title = github_escape("promptc: cache bust", prop=True)
            lines.append(f"::{level} {props}title={title}::{github_escape(message + ' (first difference here)')}")
            continue
        lines.append(_annotation(level, "promptc: cache bust", message, file_of(bust.name)))
    for change in diff.contracts:
        fails = "contract" in failing or ("breaking" in failing and change.breaking)
        level = "error" if fails else "warning"
        message = f"input contract of `{change.name}` changed: {_contract_text(change)}"
        lines.append(_annotation(level, "promptc: input contract", message, file_of(change.name)))
    for output in diff.outputs:
        fails = "output" in failing or ("output-breaking" in failing and output.breaking)
        level = "error" if fails else "warning"
        shown = "; ".join(f"{'breaking' if c.breaking else 'compatible'}: {c.text()}" for c in output.changes)
        message = f"output contract of `{output.name}` changed: {shown}"
        lines.append(_annotation(level, "promptc: output contract", message, file_of(output.name)))
    for name in diff.added:
        lines.append(_annotation("notice", "promptc: prompt added", f"new prompt `{name}`", file_of(name)))
    for name in diff.removed:
        level = "error" if "removed" in failing else "notice"
        # the file is gone in this revision; an annotation on it would point nowhere
        lines.append(
            _annotation(level, "promptc: prompt removed", f"prompt `{name}` was removed; its callers break", None)
        )
    return lines


def render_markdown(
    diff: ManifestDiff,
    failing: Iterable[str] = (),
    cost_lines: Iterable[str] = (),
    title: str = "promptc diff",
) -> str:
    """A Markdown report for a pull request (GitHub's `$GITHUB_STEP_SUMMARY`): the verdict (the
    `--fail-on` kinds found), then a table of the cache busts (tokens at stake, what the provider
    cached of them, the first line that differs), the input contract changes, the cost (with
    `--traffic`) and the prompts added, removed and changed. Every name from a source is escaped:
    it is text, never markup."""
    failed = list(failing)
    lines = [f"### {esc(title)}", ""]
    if failed:
        lines.append(f"❌ **fails**: {esc(', '.join(failed))} \\(`--fail-on`\\)")
    else:
        lines.append("✅ no change of a kind named by `--fail-on`")
    lines += ["", f"{esc(summary_line(diff))}", ""]
    if diff.tokenizer:
        lines += [f"tokenizer changed: {esc(str(diff.tokenizer[0]))} → {esc(str(diff.tokenizer[1]))}", ""]
    if diff.busts:
        lines += [
            f"#### Cache busts ({len(diff.busts)})",
            "",
            "| prompt | prefix tokens at stake | cached by the provider | new prefix tokens | first difference |",
            "| --- | ---: | --- | ---: | --- |",
        ]
        for bust in diff.busts:
            if bust.provider is None or bust.cacheable_tokens_at_stake is None:
                cached = "—"
            else:
                cached = f"{bust.cacheable_tokens_at_stake:,} \\({esc(bust.provider)}\\)"
            point = bust.first_difference.new if bust.first_difference is not None else None
            where = esc(point.label()) if point is not None else "—"
            lines.append(
                f"| {esc(bust.name)} | {bust.tokens_at_stake:,} | {cached} | {bust.new_prefix_tokens:,} | {where} |"
            )
        lines.append("")
    if diff.contracts:
        lines += [
            f"#### Input contract changes ({len(diff.contracts)})",
            "",
            "| prompt | added | removed | types | breaking |",
            "| --- | --- | --- | --- | --- |",
        ]
        for change in diff.contracts:
            types = ", ".join(f"{t.input}: {t.old} → {t.new}" for t in change.type_changes)
            lines.append(
                f"| {esc(change.name)} | {esc(', '.join(change.added_inputs)) or '—'} | "
                f"{esc(', '.join(change.removed_inputs)) or '—'} | {esc(types) or '—'} | "
                f"{'**yes**' if change.breaking else 'no'} |"
            )
        lines.append("")
    cost = [line for line in cost_lines]
    if cost:
        lines += ["#### Cost", ""]
        lines += [f"- {esc(line.strip())}" for line in cost if line.strip()]
        lines.append("")
    for label, names in (("Added prompts", diff.added), ("Removed prompts", diff.removed)):
        if names:
            lines += [f"#### {label} ({len(names)})", "", ", ".join(esc(n) for n in names), ""]
    if diff.changed:
        lines += [f"#### Changed artifacts ({len(diff.changed)})", "", ", ".join(esc(n) for n in diff.changed), ""]
    return "\n".join(lines)
