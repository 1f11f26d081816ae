"""A structural check for regular expressions that read a run of characters again and again.

Python's `re` backtracks: a pattern that can split one run of characters between two repeats, or
that re-checks the rest of a run at each of its characters, costs the square of the run's length
(80,000 blanks took 14.5 s in the grammar's TEXT terminal, issue 33), and a repeated group that can
end and start again inside a run costs an exponential. The shapes, read from the parsed pattern
(`re._parser`, the tree `re.compile` itself builds) over a sample alphabet:

- **two repeats meet**: an unbounded repeat that gives characters back (greedy or lazy, not
  possessive) followed — possibly past items that can match nothing — by a repeat that can read
  the same characters (`\\s*#?\\s*`, `(.*?)[ \\t]*\\Z`);
- **a lookahead re-reads a run**: inside an unbounded repeat, a lookahead that starts with a
  repeat of the characters just read (`(?:[ \\t](?![ \\t]*///))+`);
- **a repeated group splits a run**: an unbounded repeated group whose last repeat can read the
  start of its next round, or that holds a repeat (not running to a delimiter outside its set)
  that can read the character its rounds must start with (`\\S+\\.json(?:,\\S+\\.json)*`);
- **a search starts in a run**: a pattern used with `search`, `finditer`, `sub`, `findall` or
  `split` whose match can begin with an unbounded repeat, with no lookbehind or anchor to keep it
  from starting again at each character of the run (`[ \\t]+///.*` searched over a line).

Possessive repeats and atomic groups give nothing back and are never flagged. The check is
conservative in one direction only: what it flags may be harmless (then say why in `ALLOWED`),
what it passes may still be slow in a way it does not model — `bench/pathological.py` measures.
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
import re
import re._constants as C  # noqa: N812 - re's own names for its node kinds
import re._parser as P  # noqa: N812
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

#: the characters the sets are compared on: ASCII and a few of each kind the patterns name
ALPHABET = frozenset([chr(i) for i in range(128)] + list("\u00a0\u2000\u200b\u2028\u3000\ue000\ue001é\u0660"))
_REPEATS = (C.MAX_REPEAT, C.MIN_REPEAT, C.POSSESSIVE_REPEAT)
_CATEGORIES = {
    C.CATEGORY_SPACE: r"\s",
    C.CATEGORY_NOT_SPACE: r"\S",
    C.CATEGORY_DIGIT: r"\d",
    C.CATEGORY_NOT_DIGIT: r"\D",
    C.CATEGORY_WORD: r"\w",
    C.CATEGORY_NOT_WORD: r"\W",
}
#: calls that try a pattern at every position of the text
SEARCHING = frozenset({"search", "finditer", "sub", "subn", "findall", "split"})

Item = tuple[Any, Any]


def _category(category: Any) -> frozenset[str]:
    pattern = _CATEGORIES.get(category)
    return ALPHABET if pattern is None else frozenset(c for c in ALPHABET if re.match(pattern, c))


def charset(item: Item) -> frozenset[str] | None:
    """The characters one item reads when it reads exactly one, else None."""
    op, av = item
    if op is C.LITERAL:
        return frozenset({chr(av)})
    if op is C.NOT_LITERAL:
        return ALPHABET - {chr(av)}
    if op is C.ANY:
        return ALPHABET
    if op is C.IN:
        negate, found = False, set()
        for kind, value in av:
            if kind is C.NEGATE:
                negate = True
            elif kind is C.LITERAL:
                found.add(chr(value))
            elif kind is C.RANGE:
                found |= {c for c in ALPHABET if value[0] <= ord(c) <= value[1]}
            elif kind is C.CATEGORY:
                found |= _category(value)
            else:
                found |= ALPHABET
        return ALPHABET - found if negate else frozenset(found)
    return None


def _one(seq: Iterable[Item]) -> frozenset[str] | None:
    items = list(seq)
    return charset(items[0]) if len(items) == 1 else None


def nullable(item: Item) -> bool:
    """Whether the item can match the empty string."""
    op, av = item
    if op in _REPEATS:
        return av[0] == 0 or all(nullable(i) for i in av[2])
    if op in (C.AT, C.ASSERT, C.ASSERT_NOT, C.GROUPREF_EXISTS):
        return True
    if op is C.SUBPATTERN:
        return all(nullable(i) for i in av[3])
    if op is C.ATOMIC_GROUP:
        return all(nullable(i) for i in av)
    if op is C.BRANCH:
        return any(all(nullable(i) for i in branch) for branch in av[1])
    return False


def first(seq: Iterable[Item]) -> frozenset[str]:
    """The characters a match of the sequence can start with."""
    out: set[str] = set()
    for item in seq:
        op, av = item
        one = charset(item)
        if one is not None:
            out |= one
        elif op in _REPEATS:
            out |= first(av[2])
        elif op is C.SUBPATTERN:
            out |= first(av[3])
        elif op is C.ATOMIC_GROUP:
            out |= first(av)
        elif op is C.BRANCH:
            for branch in av[1]:
                out |= first(branch)
        elif op not in (C.AT, C.ASSERT, C.ASSERT_NOT):
            out |= ALPHABET
        if not nullable(item):
            break
    return frozenset(out)


def edge_repeats(seq: Iterable[Item], *, end: bool) -> list[tuple[frozenset[str], bool, bool]]:
    """(set, possessive, lazy) of the unbounded one-character repeats a match of the sequence can
    start with (or, with `end`, end with)."""
    out: list[tuple[frozenset[str], bool, bool]] = []
    items = list(seq)
    for item in reversed(items) if end else items:
        op, av = item
        if op in _REPEATS:
            one = _one(av[2])
            if one is not None and av[1] == C.MAXREPEAT:
                out.append((one, op is C.POSSESSIVE_REPEAT, op is C.MIN_REPEAT))
            elif op is not C.POSSESSIVE_REPEAT:
                out += edge_repeats(av[2], end=end)
        elif op is C.SUBPATTERN:
            out += edge_repeats(av[3], end=end)
        elif op is C.BRANCH:
            for branch in av[1]:
                out += edge_repeats(branch, end=end)
        # an atomic group gives nothing back: what it holds is not an edge that backtracks
        if not nullable(item):
            break
    return out


def _inner_repeats(seq: Iterable[Item]) -> list[tuple[Item, frozenset[str]]]:
    """The repeats anywhere in the sequence that give characters back and do not run to a
    delimiter outside their set (a repeat that must be followed by such a character ends at one
    place, whatever comes after)."""
    out: list[tuple[Item, frozenset[str]]] = []
    items = list(seq)
    for i, item in enumerate(items):
        op, av = item
        if op in _REPEATS:
            one = _one(av[2])
            if one is not None and av[1] == C.MAXREPEAT and op is not C.POSSESSIVE_REPEAT:
                after = charset(items[i + 1]) if i + 1 < len(items) else None
                if after is None or after & one:
                    out.append((item, one))
            out += _inner_repeats(av[2])
        elif op is C.SUBPATTERN:
            out += _inner_repeats(av[3])
        elif op is C.BRANCH:
            for branch in av[1]:
                out += _inner_repeats(branch)
        elif op in (C.ASSERT, C.ASSERT_NOT):
            out += _inner_repeats(av[1])
    return out


def _show(chars: frozenset[str]) -> str:
    return "".join(sorted(chars))[:16].encode("unicode_escape").decode()


def _lint(seq: Iterable[Item], problems: list[str], in_repeat: bool) -> None:
    items = list(seq)
    for i, item in enumerate(items):
        op, av = item
        for chars, possessive, lazy in edge_repeats([item], end=True):
            if possessive:
                continue
            for following, _, _ in edge_repeats(items[i + 1 :], end=False):
                if chars & following:
                    problems.append(
                        f"two repeats meet: a {'lazy' if lazy else 'greedy'} repeat of [{_show(chars)}] "
                        f"then one of [{_show(following)}]"
                    )
        if op in (C.ASSERT, C.ASSERT_NOT) and av[0] == 1 and in_repeat and i > 0:
            before = [chars for chars, _, _ in edge_repeats([items[i - 1]], end=True)]
            single = charset(items[i - 1])
            if single is not None:
                before.append(single)
            for chars, _, _ in edge_repeats(av[1], end=False):
                if any(b & chars for b in before):
                    problems.append(f"a lookahead re-reads a run of [{_show(chars)}] inside a repeat")
        if op in _REPEATS:
            body = list(av[2])
            unbounded = av[1] == C.MAXREPEAT
            if unbounded and op is not C.POSSESSIVE_REPEAT and _one(body) is None:
                starts = first(body)
                required = next((first([b]) for b in body if not nullable(b)), frozenset())
                head = next((b for b in body if b[0] in _REPEATS), None)
                for chars, possessive, _ in edge_repeats(body, end=True):
                    if not possessive and chars & starts:
                        problems.append(f"a repeated group splits a run: it ends with [{_show(chars)}]*")
                for repeat, chars in _inner_repeats(body):
                    if repeat is not head and chars & required:
                        problems.append(f"a repeated group splits a run: it holds [{_show(chars)}]*")
            _lint(body, problems, in_repeat or unbounded)
        elif op is C.SUBPATTERN:
            _lint(av[3], problems, in_repeat)
        elif op is C.ATOMIC_GROUP:
            _lint(av, problems, in_repeat)
        elif op is C.BRANCH:
            for branch in av[1]:
                _lint(branch, problems, in_repeat)
        elif op in (C.ASSERT, C.ASSERT_NOT):
            _lint(av[1], problems, in_repeat)


def _search_starts_in_a_run(parsed: list[Item]) -> list[str]:
    """A searched pattern whose match can start with a repeat and fail after it: the search then
    starts again at the run's next character and reads the rest of the run again. Not when a
    lookbehind or an anchor comes first, nor when nothing after the repeat can fail (the match
    then takes the run and the search goes on after it)."""
    alternatives = parsed[0][1][1] if len(parsed) == 1 and parsed[0][0] is C.BRANCH else [parsed]
    found = []
    for seq in map(list, alternatives):
        if seq and (seq[0][0] is C.AT or (seq[0][0] in (C.ASSERT, C.ASSERT_NOT) and seq[0][1][0] == -1)):
            continue
        for i, item in enumerate(seq):
            op, av = item
            bare = op in _REPEATS and _one(av[2]) is not None and av[1] == C.MAXREPEAT
            rest_can_fail = not bare or not all(nullable(x) for x in seq[i + 1 :])
            if rest_can_fail:
                for chars, _, _ in edge_repeats([item], end=False):
                    found.append(
                        f"a search starts in a run: a match can start with [{_show(chars)}]* and fail after it"
                    )
            if not nullable(item):
                break
    return found


def problems(pattern: str, flags: int = 0, *, searched: bool = False) -> list[str]:
    """What in `pattern` can read a run of characters more than a bounded number of times."""
    parsed = list(P.parse(pattern, flags))
    found: list[str] = []
    _lint(parsed, found, in_repeat=False)
    if searched:
        found += _search_starts_in_a_run(parsed)
    return sorted(set(found))


# ---------------------------------------------------------------------------------------------
# Every pattern of a package


def _searched_names(path: Path) -> tuple[set[str], list[tuple[str, int]]]:
    """The names a module calls a searching method on (`NAME.search(...)`), and the literal
    patterns it passes to `re.search` and the like, with their flags when they are literal too."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    literals: list[tuple[str, int]] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        owner, method = node.func.value, node.func.attr
        if isinstance(owner, ast.Name) and owner.id != "re" and method in SEARCHING:
            names.add(owner.id)
        if isinstance(owner, ast.Name) and owner.id == "re" and node.args:
            first_arg = node.args[0]
            if isinstance(first_arg, ast.Constant) and isinstance(first_arg.value, str):
                literals.append((first_arg.value, 1 if method in SEARCHING else 0))
    return names, literals


def patterns(package: Any) -> Iterator[tuple[str, re.Pattern[str], bool]]:
    """(where, pattern, searched) for every compiled pattern a module of `package` holds at module
    level (also as a value of a module-level dict), and every literal pattern passed to `re`."""
    seen: set[tuple[str, bool]] = set()
    for info in pkgutil.walk_packages(package.__path__, f"{package.__name__}."):
        module = importlib.import_module(info.name)
        path = Path(module.__file__ or "")
        searched, literals = _searched_names(path) if path.suffix == ".py" else (set(), [])
        found: list[tuple[str, re.Pattern[str], bool]] = []
        for name, value in vars(module).items():
            values = value.items() if isinstance(value, dict) else [(None, value)]
            for key, candidate in values:
                if isinstance(candidate, re.Pattern):
                    where = f"{info.name}.{name}" + (f"[{key!r}]" if key is not None else "")
                    found.append((where, candidate, key is None and name in searched))
        for text, searching in literals:
            found.append((f"{info.name}: re.*({text!r})", re.compile(text), bool(searching)))
        for where, pattern, is_searched in found:
            key = (pattern.pattern, is_searched)
            if key in seen:
                continue
            seen.add(key)
            yield where, pattern, is_searched
