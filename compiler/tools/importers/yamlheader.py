"""The YAML front matter of Dotprompt and Prompty files, read with positions.

PyYAML composes the node tree (its scanner reports a syntax error with the line and column); this
module builds plain Python values from the nodes itself, so that it can

* refuse aliases and anchors (`&a` / `*a`): a few lines of aliases expand to gigabytes once the
  value is copied into JSON, and no prompt header needs them;
* refuse a key given twice (YAML says keys are unique; PyYAML keeps the later one silently);
* keep the position of every key and value, so a diagnostic about `config.topK` points at it;
* bound the work: the header is at most `MAX_HEADER_CHARS` and nested at most `MAX_DEPTH` deep.

Only the safe schema is used (`yaml.SafeLoader`'s resolver: strings, numbers, booleans, null,
lists, mappings); tags such as `!!python/object` are refused by it.
"""

from __future__ import annotations

from dataclasses import field
from typing import Any

import yaml

from ...facts.records import dataclass

MAX_HEADER_CHARS = 256 * 1024
MAX_DEPTH = 64


class YamlError(ValueError):
    """A header that cannot be used: `line` and `column` are 1-based, relative to the header text."""

    def __init__(self, message: str, line: int, column: int, hint: str | None = None) -> None:
        super().__init__(message)
        self.message, self.line, self.column, self.hint = message, line, column, hint


@dataclass(frozen=True, slots=True)
class Located:
    """A header value and where it stands (1-based line and column in the header text)."""

    value: Any
    line: int
    column: int
    #: for a mapping: key → (line, column) of the key; for a list: each item's position
    keys: dict[str, tuple[int, int]] = field(default_factory=dict)


class Header:
    """The parsed header: the plain value (`data`) and the position of every value by its path
    (`("config", "topK")`, `("inputs", 0, "name")`)."""

    def __init__(self, data: Any, positions: dict[tuple[Any, ...], tuple[int, int]]) -> None:
        self.data = data
        self.positions = positions

    def where(self, *path: Any) -> tuple[int, int]:
        """The position of the key of the value at `path` (of the value, for a list item), or of its
        nearest located ancestor."""
        while path:
            if ("key", *path) in self.positions:
                return self.positions[("key", *path)]
            if path in self.positions:
                return self.positions[path]
            path = path[:-1]
        return self.positions.get((), (1, 1))


def parse(text: str) -> Header:
    """Parse header text (between the `---` lines). Empty text is an empty mapping."""
    if len(text) > MAX_HEADER_CHARS:
        raise YamlError(f"the header is {len(text):,} characters; the limit is {MAX_HEADER_CHARS:,}", 1, 1)
    try:
        loader = _loader()(text)
        try:
            node = loader.get_single_node()
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, column = (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)
        problem = exc.problem or exc.context or "invalid YAML"
        raise YamlError(f"invalid YAML in the header: {problem}", line, column) from None
    except yaml.YAMLError as exc:
        raise YamlError(f"invalid YAML in the header: {exc}", 1, 1) from None
    positions: dict[tuple[Any, ...], tuple[int, int]] = {(): (1, 1)}
    if node is None:
        return Header({}, positions)
    return Header(_build(node, (), positions), positions)


def _build(root: Any, path: tuple[Any, ...], positions: dict[tuple[Any, ...], tuple[int, int]]) -> Any:
    """Plain values from the node tree, iteratively (no recursion limit)."""
    result: dict[str, Any] = {}
    # work items: (node, path, container, key) — the value is stored into container[key]
    stack: list[tuple[Any, tuple[Any, ...], Any, Any]] = [(root, path, result, "value")]
    while stack:
        node, at, container, key = stack.pop()
        if len(at) > MAX_DEPTH:
            raise YamlError(f"the header is nested more than {MAX_DEPTH} levels deep", *_mark(node))
        positions[at] = _mark(node)
        if isinstance(node, yaml.ScalarNode):
            container[key] = _scalar(node)
        elif isinstance(node, yaml.SequenceNode):
            items: list[Any] = [None] * len(node.value)
            container[key] = items
            for index in range(len(node.value) - 1, -1, -1):
                stack.append((node.value[index], (*at, index), items, index))
        elif isinstance(node, yaml.MappingNode):
            mapping: dict[str, Any] = {}
            container[key] = mapping
            seen: dict[str, tuple[int, int]] = {}
            pending = []
            for key_node, value_node in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    raise YamlError("YAML merge keys (`<<`) are not supported in a prompt header", *_mark(key_node))
                if not isinstance(key_node, yaml.ScalarNode):
                    raise YamlError("a header key must be a plain string", *_mark(key_node))
                name = key_node.value
                if name in seen:
                    line, column = seen[name]
                    raise YamlError(
                        f"`{name}` is given twice (first at line {line}, column {column})",
                        *_mark(key_node),
                        "YAML keys are unique; keep one",
                    )
                seen[name] = _mark(key_node)
                positions[("key", *at, name)] = seen[name]
                mapping[name] = None
                pending.append((value_node, (*at, name), mapping, name))
            stack.extend(reversed(pending))
        else:  # pragma: no cover - the composer makes only these three
            raise YamlError("unsupported YAML node", *_mark(node))
    return result["value"]


def _loader() -> Any:
    """SafeLoader that refuses anchors and aliases while composing (so none is ever expanded)."""

    class Loader(yaml.SafeLoader):
        depth = 0

        def compose_node(self, parent: Any, index: Any) -> Any:
            event = self.peek_event()  # type: ignore[no-untyped-call]  # PyYAML's stubs leave it untyped
            if self.depth >= MAX_DEPTH:  # PyYAML composes recursively: stop long before Python's limit
                mark = event.start_mark
                raise YamlError(
                    f"the header is nested more than {MAX_DEPTH} levels deep", mark.line + 1, mark.column + 1
                )
            if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
                mark = event.start_mark
                raise YamlError(
                    "YAML anchors and aliases are not supported in a prompt header",
                    mark.line + 1,
                    mark.column + 1,
                    "write the value out where it is used",
                )
            self.depth += 1
            try:
                return super().compose_node(parent, index)
            finally:
                self.depth -= 1

    return Loader


def _mark(node: Any) -> tuple[int, int]:
    mark = node.start_mark
    return mark.line + 1, mark.column + 1


def _scalar(node: Any) -> Any:
    if node.tag == "tag:yaml.org,2002:str" or node.style in ("'", '"', "|", ">"):
        return node.value
    constructor = yaml.SafeLoader.yaml_constructors.get(node.tag)
    if constructor is None:
        raise YamlError(f"the YAML tag `{node.tag}` is not supported in a prompt header", *_mark(node))
    try:
        value = constructor(yaml.SafeLoader(""), node)
    except Exception as exc:  # a malformed timestamp, number …
        raise YamlError(f"cannot read the value `{node.value}`: {exc}", *_mark(node)) from None
    if not isinstance(value, (str, int, float, bool, type(None))):
        return node.value  # dates, binary: kept as the text the author wrote
    return value
