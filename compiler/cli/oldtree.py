"""The old side of `promptc diff`: a source folder on disk (`--old-src DIR`) or the sources and
build of a git revision (`--against REV`), read with `git ls-tree` and one `git cat-file --batch`
— no checkout, no worktree, nothing written. Problems are diagnostics (E940–E943).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from ..driver.sources import read_tree
from ..facts import codes
from ..facts.codes import Code
from ..facts.diagnostics import Diagnostic, file_span, make
from ..facts.language import MANIFEST, RESOURCE_SUFFIX, SOURCE_SUFFIX
from ..facts.records import dataclass
from ..passes.context import SourceTree


class OldTreeError(Exception):
    def __init__(self, diagnostic: Diagnostic) -> None:
        super().__init__(diagnostic.message)
        self.diagnostic = diagnostic


@dataclass(frozen=True, slots=True)
class OldTree:
    sources: SourceTree
    #: the old manifest's bytes when the revision holds a build (None: compile the sources)
    manifest: bytes | None = None
    #: how the old side is named in messages (`HEAD~1`, the folder)
    label: str = ""


def _fail(code: Code, message: str, path: str, hint: str | None = None) -> OldTreeError:
    return OldTreeError(make(code, message, file_span(), hint, path=path))


def from_folder(folder: str) -> OldTree:
    path = Path(folder)
    if not path.is_dir():
        raise _fail(
            codes.OLD_SOURCES_NOT_FOUND,
            f"old source folder `{folder}` does not exist",
            folder,
            "pass the old tree's source folder (its `prompts_src`), e.g. from `git worktree add`",
        )
    tree, _ = read_tree(path)
    return OldTree(tree, None, folder)


def _git(args: list[str], cwd: str, data: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    try:
        return subprocess.run(["git", *args], cwd=cwd, input=data, capture_output=True, check=False, timeout=120)
    except FileNotFoundError:
        raise _fail(
            codes.NOT_A_GIT_REPOSITORY,
            "git is not installed (no `git` on PATH)",
            ".",
            "install git, or use --old-src DIR",
        ) from None
    except subprocess.TimeoutExpired:
        raise _fail(codes.GIT_FAILED, f"`git {args[0]}` did not finish in 120 s", ".") from None


def _message(result: subprocess.CompletedProcess[bytes]) -> str:
    text = result.stderr.decode("utf-8", "replace").strip().splitlines()
    return text[-1] if text else f"exit status {result.returncode}"


def from_revision(revision: str, src: str, out: str) -> OldTree:
    """The files under `src` (and `out`'s manifest) at `revision`, paths as in the working tree."""
    cwd = os.getcwd()
    top = _git(["rev-parse", "--show-toplevel"], cwd)
    if top.returncode != 0:
        raise _fail(
            codes.NOT_A_GIT_REPOSITORY,
            f"`--against {revision}` needs a git repository, and {cwd} is not in one",
            ".",
            "run promptc inside the repository, or compare with a folder: --old-src DIR",
        )
    root = top.stdout.decode("utf-8", "surrogateescape").strip()
    if revision.startswith("-"):  # never an option to git
        raise _fail(codes.UNKNOWN_REVISION, f"`{revision}` is not a revision", ".")
    commit = _git(["rev-parse", "--verify", "--quiet", "--end-of-options", f"{revision}^{{commit}}"], cwd)
    if commit.returncode != 0:
        raise _fail(
            codes.UNKNOWN_REVISION,
            f"unknown revision `{revision}`",
            ".",
            "name a branch, tag or commit git knows (in CI, fetch it first: `git fetch origin main`)",
        )
    sha = commit.stdout.decode().strip()
    src_in_repo = _in_repo(src, root)
    out_in_repo = _in_repo(out, root)
    listing = _git(["ls-tree", "-r", "-z", "--full-tree", sha, "--", src_in_repo + "/"], cwd)
    if listing.returncode != 0:
        raise _fail(codes.GIT_FAILED, f"git ls-tree {revision}: {_message(listing)}", ".")
    blobs: list[tuple[str, str]] = []  # (path under src, object id)
    prefix = src_in_repo + "/" if src_in_repo else ""
    for record in listing.stdout.split(b"\0"):
        if not record:
            continue
        meta, _, name = record.partition(b"\t")
        mode, kind, oid = meta.decode().split()
        path = name.decode("utf-8", "surrogateescape")
        if kind != "blob" or mode == "120000" or not path.startswith(prefix):
            continue  # symlinks at a revision are not followed
        rel = path[len(prefix) :]
        if rel.endswith((SOURCE_SUFFIX, RESOURCE_SUFFIX)) and not any(part.startswith(".") for part in rel.split("/")):
            blobs.append((rel, oid))
    if not blobs:
        raise _fail(
            codes.OLD_SOURCES_NOT_FOUND,
            f"`{src_in_repo or '.'}` holds no prompt sources at {revision}",
            src,
            "the source folder moved or did not exist yet at that revision",
        )
    manifest_path = f"{out_in_repo}/{MANIFEST}" if out_in_repo else MANIFEST
    wanted = [oid for _, oid in blobs] + [f"{sha}:{manifest_path}"]
    contents = _cat(wanted, cwd, revision)
    files: dict[str, bytes] = {}
    for rel, oid in blobs:
        content = contents.get(oid)
        if content is None:  # listed by the tree, absent from the object store
            raise _fail(
                codes.GIT_FAILED,
                f"`{prefix}{rel}` at {revision}: object {oid} is missing from the repository",
                src,
                "the clone is incomplete or corrupt: `git fsck`, or fetch again",
            )
        files[rel] = content
    label = f"{revision}:{src_in_repo}" if src_in_repo else f"{revision}:"
    tree = SourceTree(files=dict(sorted(files.items())), root_display=label)
    return OldTree(tree, contents.get(wanted[-1]), revision)


def _in_repo(path: str, root: str) -> str:
    rel = os.path.relpath(os.path.realpath(path), os.path.realpath(root))
    return "" if rel == "." else Path(rel).as_posix()


def _cat(objects: list[str], cwd: str, revision: str) -> dict[str, bytes | None]:
    """The contents of `objects` (ids or `rev:path`) from one `git cat-file --batch`; None for missing ones."""
    result = _git(["cat-file", "--batch"], cwd, ("\n".join(objects) + "\n").encode("utf-8", "surrogateescape"))
    if result.returncode != 0:
        raise _fail(codes.GIT_FAILED, f"git cat-file at {revision}: {_message(result)}", ".")
    data = result.stdout
    found: dict[str, bytes | None] = {}
    at = 0
    for name in objects:
        newline = data.index(b"\n", at)
        header = data[at:newline].split()
        at = newline + 1
        if len(header) < 3 or header[1] == b"missing":
            found[name] = None
            continue
        size = int(header[2])
        found[name] = data[at : at + size]
        at += size + 1  # the contents end with a newline of the batch format
    return found


__all__ = ["OldTree", "OldTreeError", "from_folder", "from_revision"]
