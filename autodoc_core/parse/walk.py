"""Find a workspace's Markdown files: skip hidden and ignored folders, never leave the root.

Ignored: any name starting with ``.`` (``.git``, ``.obsidian``), ``node_modules``, and what the
``.gitignore`` files inside the root exclude (each applies to its own folder, as in git).
Symlinks are followed only when they resolve inside the root, and a file found both under its own path
and through a symlink is indexed once, under its own path (else under the first link to it).
"""

from __future__ import annotations

import fnmatch
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, BinaryIO

import pathspec

from autodoc_core.errors import OUTSIDE_ROOT, AutodocError, invalid_params
from autodoc_core.parse.markdown import MARKDOWN_SUFFIXES

ALWAYS_SKIPPED = {"node_modules", "__pycache__"}


@dataclass(frozen=True)
class FoundFile:
    relpath: str  # "/"-separated, relative to the root
    abspath: str
    size: int
    mtime_ns: int
    linked: bool = False  # reached through a symlink: abspath need not be the file's real path


@dataclass
class WalkNotes:
    """What a walk could not look at: its files are neither found nor gone."""

    unlisted: list[str] = field(default_factory=list)  # folders (relative) that could not be listed
    bad_names: list[str] = field(default_factory=list)  # names that are not UTF-8, shown escaped


class RootUnlisted(OSError):
    """The workspace root itself cannot be listed (not mounted, moved, no permission)."""


def shown_name(name: str) -> str:
    """A file name as text even when its bytes are not UTF-8 (``caf\\xe9.md``)."""
    return os.fsencode(name).decode("utf-8", "backslashreplace")


def _utf8(name: str) -> bool:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:  # surrogate-escaped bytes: the database stores text
        return False
    return True


def is_inside(root: str, path: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


class OutsideRoot(OSError):
    """The path, once opened, turned out to be a file outside the workspace root."""


def open_inside(root: str, path: str) -> BinaryIO:
    """Open ``path`` for reading only if the file actually opened lies inside ``root``.

    Checked on the open file itself (``/proc/self/fd``), so a symlink swapped in after the walk
    or after a path check cannot lead the read outside the root.
    """
    handle = open(path, "rb")  # noqa: SIM115 - returned to the caller, who closes it
    try:
        opened = os.readlink(f"/proc/self/fd/{handle.fileno()}")
    except OSError:  # no /proc (not Linux): the best check there is
        opened = os.path.realpath(path)
    if not is_inside(os.path.realpath(root), opened):
        handle.close()
        raise OutsideRoot(f"{path} resolves outside the workspace root")
    return handle


def _skipped_name(name: str) -> bool:
    """Hidden names (``.git``, ``.obsidian``) and folders never worth walking."""
    return name.startswith(".") or name in ALWAYS_SKIPPED


def lua_rules() -> str:
    """The walk's rules as the Lua module ``lua/autodoc/walk_rules.lua`` (the picker counts a folder's Markdown
    files as the indexer would); tests/test_docs.py fails when that file and these constants differ."""
    def listed(names: list[str]) -> str:
        return "{ " + ", ".join(f"'{name}'" for name in sorted(names)) + " }"

    return ("-- Generated from autodoc_core/parse/walk.py (lua_rules): do not edit. Regenerate with\n"
            "-- python -c 'from autodoc_core.parse.walk import lua_rules; print(lua_rules(), end=\"\")' "
            "> lua/autodoc/walk_rules.lua\n"
            "return {\n"
            f"  skipped_folders = {listed(list(ALWAYS_SKIPPED))}, -- besides hidden ones (a leading dot)\n"
            f"  markdown_suffixes = {listed(list(MARKDOWN_SUFFIXES))}, -- compared lower-cased\n"
            "}\n")


def read_inside(root: str, path: str) -> bytes | None:
    """A small file's bytes if it is a file inside ``root`` (followed symlinks included), else None."""
    try:
        with open_inside(root, path) as handle:
            return handle.read()
    except OSError:  # missing, a folder, unreadable, or outside the root (OutsideRoot)
        return None


def _gitignore(root: str, folder: str) -> pathspec.PathSpec | None:
    raw = read_inside(root, os.path.join(folder, ".gitignore"))
    if raw is None:
        return None
    return pathspec.GitIgnoreSpec.from_lines(raw.decode("utf-8", "replace").splitlines())


def _ignored(specs: list[tuple[str, pathspec.PathSpec]], relpath: str, is_dir: bool) -> bool:
    """As git decides: the last pattern that matches wins, a deeper .gitignore after the ones above it
    (so its `!keep.md` re-includes what a parent ignored). A folder is skipped whole only when no
    negation could re-include something inside it (`notes/**` with `!notes/README.md`, or `*`, `!*/`,
    `!*.md`); otherwise it is walked and its files decide."""
    verdict = None
    for base, spec in specs:
        local = relpath[len(base) + 1 :] if base else relpath
        include = spec.check_file(local + "/" if is_dir else local).include
        if include is not None:
            verdict = include
    if is_dir and verdict and any(_may_reinclude_below(base, relpath, pattern.pattern)
                                  for base, spec in specs for pattern in spec.patterns if pattern.include is False):
        return False
    return bool(verdict)


def _may_reinclude_below(base: str, folder: str, negation: str) -> bool:
    """Whether a `!pattern` of the .gitignore at ``base`` could match something inside ``folder``: one with
    no inner slash matches at any depth (`!*.md`); one with a path (`!.yarn/patches`) only where its
    leading segments match the folder's (so it keeps no one walking `dist/`)."""
    pattern = negation.removeprefix("!").strip("/")
    if "/" not in pattern:
        return True
    local = folder[len(base) + 1 :] if base else folder
    segments = pattern.split("/")
    for depth, name in enumerate(local.split("/")):
        if depth >= len(segments) or segments[depth] == "**":
            return True
        if not fnmatch.fnmatchcase(name, segments[depth]):
            return False
    return True


def markdown_files(root: str, notes: WalkNotes | None = None) -> Iterator[FoundFile]:
    """Every Markdown file under ``root`` the rules admit. Raises RootUnlisted when the root itself
    cannot be listed; a folder below it that cannot be, or a name that is not UTF-8, goes in ``notes``."""
    real_root = os.path.realpath(root)
    own: set[str] = set()
    linked: list[FoundFile] = []
    for found in _walk(real_root, real_root, "", [], {real_root}, notes or WalkNotes(), linked=False):
        if found.linked:
            linked.append(found)
        else:
            own.add(found.abspath)
            yield found
    for found in linked:  # after the walk: only then is it known which files were found under their own path
        real = os.path.realpath(found.abspath)
        if real not in own:
            own.add(real)
            yield found


def canonical_relpaths(root: str, relpaths: list[str]) -> list[str]:
    """Each path as a full walk would index it: a path through a symlink becomes the file's own path when
    the walk finds the file there (a buffer opened through a linked folder is saved to its real file)."""
    real_root = os.path.realpath(root)
    if not os.path.isdir(real_root):  # the run that follows says so
        return list(relpaths)
    canonical = []
    for relpath in relpaths:
        listed = next(listed_markdown_files(root, [relpath]), None)  # abspath is the file's real path
        own = os.path.relpath(listed.abspath, real_root).replace(os.sep, "/") if listed else relpath
        canonical.append(own if own != relpath and any(listed_markdown_files(root, [own])) else relpath)
    return canonical


def listed_markdown_files(root: str, relpaths: list[str]) -> Iterator[FoundFile]:
    """The files among ``relpaths`` that a full walk would find, without walking the whole tree
    (a saved buffer in a workspace of 25,000 files): same hidden, ignore and symlink rules."""
    real_root = os.path.realpath(root)
    if not os.path.isdir(real_root):  # a drive not mounted: its files are not gone, and none may be deleted
        raise RootUnlisted(f"cannot list the workspace root {root}: it is not a folder now")
    for relpath in dict.fromkeys(relpaths):
        parts = relpath.replace(os.sep, "/").split("/")
        if not relpath or any(not p or _skipped_name(p) for p in parts):  # "." and ".." start with "."
            continue
        if not parts[-1].lower().endswith(MARKDOWN_SUFFIXES) or not _utf8(relpath):  # a full walk reports it
            continue
        specs: list[tuple[str, pathspec.PathSpec]] = []
        ignored = False
        for depth in range(len(parts)):
            base = "/".join(parts[:depth])
            spec = _gitignore(real_root, os.path.join(real_root, *parts[:depth]))
            if spec is not None:
                specs.append((base, spec))
            if _ignored(specs, "/".join(parts[: depth + 1]), is_dir=depth < len(parts) - 1):
                ignored = True
                break
        target = os.path.realpath(os.path.join(real_root, *parts))
        if ignored or not is_inside(real_root, target):
            continue
        try:
            info = os.stat(target)
        except OSError:
            continue
        if stat.S_ISREG(info.st_mode):
            yield FoundFile("/".join(parts), target, info.st_size, info.st_mtime_ns)


def relative_to_root(root: str, path: str) -> str:
    """An absolute path inside the root (the workspace keeps its real path) as the relative one the index
    uses; anything else as given."""
    if not os.path.isabs(path):
        return path
    for candidate in (os.path.normpath(path), os.path.realpath(path)):
        if is_inside(root, candidate):
            return os.path.relpath(candidate, root)
    return path


def resolve_inside(root: str, path: Any) -> tuple[str, str]:
    """(absolute path, path relative to the root) of a Markdown file that resolves inside the root."""
    if not isinstance(path, str) or not path:
        raise invalid_params("path must be a non-empty string relative to the workspace root")
    if "\x00" not in path:
        path = relative_to_root(root, path)  # an absolute path inside the root, as an agent may give it
    if "\x00" in path or os.path.isabs(path) or path.startswith(("/", "\\")):
        raise AutodocError(OUTSIDE_ROOT, f"{path!r} is not a path relative to the workspace root", path=path)
    abspath = os.path.realpath(os.path.join(root, path))
    if not is_inside(root, abspath):
        raise AutodocError(OUTSIDE_ROOT, f"{path!r} resolves outside the workspace root", path=path)
    if not abspath.lower().endswith(MARKDOWN_SUFFIXES):
        raise invalid_params(f"{path!r} is not a Markdown file (.md, .markdown)", path=path)
    return abspath, os.path.relpath(abspath, root).replace(os.sep, "/")


def not_indexed_reason(root: str, relpath: str) -> str:
    """Why a path given to index is not a document: a run for listed paths answered "0 added" and nothing
    else for a typo, an absolute path or a file outside the root."""
    path = os.path.join(root, relpath)
    if os.path.isabs(relpath) or ".." in relpath.replace("\\", "/").split("/"):
        return "not a path relative to the workspace root"
    if not os.path.lexists(path):
        return "no such file"
    if not is_inside(os.path.realpath(root), os.path.realpath(path)):
        return "it resolves outside the workspace root"
    if not relpath.lower().endswith(MARKDOWN_SUFFIXES) or not os.path.isfile(path):
        return "not a Markdown file (.md, .markdown)"
    return "hidden, ignored by a .gitignore, or in node_modules: a full walk skips it too"


def _walk(root: str, folder: str, relfolder: str, specs: list, seen: set[str],
          notes: WalkNotes, linked: bool) -> Iterator[FoundFile]:
    spec = _gitignore(root, folder)
    if spec is not None:
        specs = [*specs, (relfolder, spec)]
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError as exc:
        if not relfolder:
            raise RootUnlisted(f"cannot list the workspace root {folder}: {exc.strerror or exc}") from None
        notes.unlisted.append(relfolder)
        return
    for entry in entries:
        if _skipped_name(entry.name):
            continue
        relpath = f"{relfolder}/{entry.name}" if relfolder else entry.name
        if not _utf8(entry.name):
            notes.bad_names.append(shown_name(relpath))
            continue
        target = entry.path
        try:
            symlink = entry.is_symlink()
            if symlink:
                target = os.path.realpath(entry.path)
                if not is_inside(root, target):
                    continue
            is_dir = os.path.isdir(target)
        except OSError:
            continue
        if _ignored(specs, relpath, is_dir):
            continue
        if is_dir:
            real = os.path.realpath(target)
            if real not in seen:
                yield from _walk(root, target, relpath, specs, seen | {real}, notes, linked or symlink)
        elif entry.name.lower().endswith(MARKDOWN_SUFFIXES):
            try:
                stat = os.stat(target)
            except OSError:
                continue
            yield FoundFile(relpath, target, stat.st_size, stat.st_mtime_ns, linked or symlink)
