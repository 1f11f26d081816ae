"""Stage 6 — bindings: the typed modules `python_bindings` and `typescript_bindings` name,
generated from the build in hand (`promptc gen python|typescript` is the same generator on a
folder). `promptc build`, `watch`, `promptc.build()` and CI all get them, since the driver runs
this stage; `check --locked` reports a bindings file that is not what the build would write."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

from ..facts import codes
from ..facts.config import BINDINGS_OPTIONS, Config
from ..facts.diagnostics import Diagnostic, make
from ..facts.records import dataclass
from ..runtime.atomic import read_file, reason, write_file
from ..runtime.confine import option_refusal
from ..runtime.model import Artifact
from .python import python_module_of
from .typescript import typescript_module_of

Generator = Callable[[dict[str, Artifact], str, str], "tuple[str, list[Diagnostic]]"]

#: `[tool.promptc]` key naming a bindings file → what generates it
GENERATORS: dict[str, Generator] = {
    "python_bindings": python_module_of,
    "typescript_bindings": typescript_module_of,
}
assert tuple(GENERATORS) == BINDINGS_OPTIONS


@dataclass(frozen=True, slots=True)
class Binding:
    """One configured bindings file and what the build makes of it: its text ("" when a
    diagnostic stops it: E920) and the generator's diagnostics."""

    key: str
    path: str
    text: str
    diagnostics: tuple[Diagnostic, ...]
    #: why the confinement rule refuses the path (E914, E915, E916: outside the project, through a
    #: link, over a file promptc did not generate), or None; checked again when it is written
    refused: Diagnostic | None = None


def configured(config: Config) -> list[str]:
    """The bindings keys the configuration sets."""
    return list(config.bindings())


def refusals(config: Config) -> list[Diagnostic]:
    """Why the confinement rule refuses a configured bindings path (`promptc.runtime.confine`):
    the driver asks before it writes anything, so a refused path leaves the previous build as it was."""
    return [d for key in configured(config) if (d := option_refusal(config, key, generated=True)) is not None]


def generate(config: Config, artifacts: Mapping[str, Artifact]) -> list[Binding]:
    """Every configured bindings file's text, for the build `artifacts` are (by prompt name)."""
    found = []
    for key in configured(config):
        target = getattr(config, key)
        text, diagnostics = GENERATORS[key](dict(artifacts), config.out, target)
        found.append(Binding(key, target, text, tuple(diagnostics), option_refusal(config, key, generated=True)))
    return found


def write(bindings: list[Binding]) -> list[Diagnostic]:
    """Write each bindings file whose bytes change, atomically (the old module or the new, never a
    fragment), never through a link and never over a file promptc did not generate. The
    diagnostics: the generators' (E920 stops a file, W921 is reported), the confinement rule's
    (E914, E915, E916) and E904 for a file that cannot be written."""
    diagnostics: list[Diagnostic] = []
    for binding in bindings:
        diagnostics += binding.diagnostics
        if not binding.text:
            continue
        if binding.refused is not None:
            diagnostics.append(binding.refused)
            continue
        path = Path(binding.path)
        data = binding.text.encode("utf-8")
        try:
            if not path.is_file() or read_file(path, follow=False) != data:
                path.parent.mkdir(parents=True, exist_ok=True)
                write_file(path, data, symlinks="refuse")
        except OSError as exc:
            diagnostics.append(
                make(
                    codes.OUTPUT_UNWRITABLE,
                    f"cannot write `{path.as_posix()}` ({binding.key}): {reason(exc)}; it is unchanged",
                    None,
                    "free some disk space, or check that the path names a file in a folder",
                    path=path.as_posix(),
                )
            )
    return diagnostics


def stale(bindings: list[Binding]) -> list[tuple[Binding, Diagnostic]]:
    """Each bindings file that is not what the build would write (E905: missing or stale), that
    cannot be generated (the generator's first error, E920), or that the build would refuse to
    write (E914, E915, E916: the confinement rule)."""
    problems = []
    for binding in bindings:
        first = next((d for d in binding.diagnostics if d.severity == "error"), binding.refused)
        if first is not None:
            problems.append((binding, first))
            continue
        path = Path(binding.path)
        if path.is_file() and read_file(path, follow=False) == binding.text.encode("utf-8"):
            continue
        what = "is missing" if not path.is_file() else "is stale: it is not what `promptc build` would generate"
        problems.append(
            (
                binding,
                make(
                    codes.BUILD_STALE,
                    f"`{path.as_posix()}` ({binding.key}) {what}",
                    None,
                    "run `promptc build` and commit the result",
                    path=path.as_posix(),
                ),
            )
        )
    return problems
