"""Reading documents (a line range, inside the workspace root only) and finding them by title,
alias or path."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import apsw

from autodoc_core.errors import IO_ERROR, NOT_FOUND, OUTSIDE_ROOT, AutodocError, invalid_params, whole_number
from autodoc_core.index.indexer import binary_reason, content_hash
from autodoc_core.parse.walk import OutsideRoot, open_inside, resolve_inside
from autodoc_core.store import chunks as chunk_rows
from autodoc_core.store import documents as document_rows
from autodoc_core.store.workspace import Workspace

MAX_LIST = 1000
DEFAULT_LIST = 50


StoredLines = Callable[[str], list[str] | None]  # a document's lines as the index stores them (stored_lines)


def read(ws: Workspace, path: Any, opts: Any = None,
         indexed_hash: Callable[[str], str | None] = lambda relpath: None,
         index_copy: StoredLines = lambda relpath: None) -> dict[str, Any]:
    """Lines ``line_start``..``line_end`` (default: all) of a Markdown file inside the root. The file
    actually opened is checked too, so a symlink swapped in after the check is refused. ``indexed_hash``
    gives the content hash the index holds for a path (None: not indexed): the answer says whether the
    file changed since, when line numbers from a search may no longer hold. A file that is gone but still
    indexed (deleted, or its workspace's folder is: its hits are still searched) is read from ``index_copy``, and
    ``text_source`` says so."""
    abspath, relpath = resolve_inside(ws.root, path)
    opts = opts or {}
    if not isinstance(opts, dict):
        raise invalid_params("read options must be an object")
    try:
        raw = _raw(ws, abspath, relpath)
    except AutodocError as exc:
        if (lines := _gone_copy(exc, index_copy)) is None:
            raise
        return _lines_wanted(relpath, lines, opts, {"changed_since_indexed": None, "text_source": GONE_TEXT})
    stored = indexed_hash(relpath)
    return _lines_wanted(relpath, text_lines(raw), opts,
                         {"changed_since_indexed": None if stored is None else stored != content_hash(raw)})


def _lines_wanted(relpath: str, lines: list[str], opts: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    first = _line_option(opts, "line_start", 1)
    if first > len(lines):
        count = f"{len(lines)} line" + ("s" if len(lines) != 1 else "")
        raise invalid_params(f"'line_start' {first} is past the end: {relpath} has {count}")
    last = _line_option(opts, "line_end", len(lines))
    if last < first:
        raise invalid_params("'line_end' must not be before 'line_start'")
    return {"path": relpath, "line_start": first, "line_end": min(last, len(lines)), "total_lines": len(lines),
            "text": "\n".join(lines[first - 1 : last]), **extra}


# A read replica's machine has the index, not the Markdown folder: its reads answer from the sections' text
# the database holds, each section's shown text at its lines (the heading as its breadcrumb's last part;
# blocks the index leaves out, such as HTML comments, left out here too).
STORED_TEXT = ("the text the index stores (this replica has no Markdown folder): each section's indexed text at "
               "its lines, without what indexing leaves out")
GONE_TEXT = ("the file is gone (deleted, or its workspace's folder is) and still indexed: the text the index stores, "
             "each section's indexed text at its lines, without what indexing leaves out")
NOT_STORED = "this document's text is not stored in the database (a replica has no Markdown folder to read it from)"


def stored_lines(conn: apsw.Connection, ws: Workspace, relpath: str) -> list[str] | None:
    """The document's lines rebuilt from its stored sections, or None when the database holds none."""
    found = document_rows.located(conn, ws.id, relpath)
    sections = chunk_rows.sections_of_document(conn, found.id) if found else []
    if not sections:
        return None
    lines = [""] * found.line_count
    for section in sections:
        body = section.body.split("\n") if section.body else []
        start = max(section.line_start, section.line_end - len(body) + 1)
        if start > section.line_start and section.kind == "section":
            depth = section.breadcrumb.count(" › ") + 1
            lines[section.line_start - 1] = "#" * min(depth, 6) + " " + section.breadcrumb.rsplit(" › ", 1)[-1]
        for offset, line in enumerate(body[: section.line_end - start + 1]):
            if 0 < start + offset <= len(lines):
                lines[start + offset - 1] = line
    return lines


def stored_read(conn: apsw.Connection, ws: Workspace, path: Any, opts: Any = None) -> dict[str, Any]:
    """``read`` on a replica: the lines from the stored sections."""
    if not isinstance(path, str) or not path:
        raise invalid_params("'path' must be a document's path in the workspace")
    if not isinstance(opts or {}, dict):
        raise invalid_params("read options must be an object")
    relpath = path.strip("/")
    lines = stored_lines(conn, ws, relpath)
    if lines is None:
        raise AutodocError(NOT_FOUND, f"{relpath}: {NOT_STORED}" if document_rows.located(conn, ws.id, relpath)
                           else f"{relpath} is not indexed in workspace {ws.name}", path=relpath)
    return _lines_wanted(relpath, lines, opts or {}, {"changed_since_indexed": None, "text_source": STORED_TEXT})


@dataclass
class FileText:
    """A whole file's lines, and whether it changed since it was indexed (None: it is not indexed)."""

    lines: list[str]
    changed_since_indexed: bool | None
    source: str | None = None  # not the file's own lines: the index's copy (STORED_TEXT, GONE_TEXT)


def texts(ws: Workspace, paths: list[str], indexed_hash: Callable[[str], str | None],
          index_copy: StoredLines = lambda relpath: None) -> dict[str, FileText | str]:
    """Each file's lines as ``read`` gives them whole (a gone file's from ``index_copy``, as ``read``), or why it
    cannot be read: the texts of a search's hits, each file read once."""
    found: dict[str, FileText | str] = {}
    for path in dict.fromkeys(paths):
        try:
            abspath, relpath = resolve_inside(ws.root, path)
            raw = _raw(ws, abspath, relpath)
        except AutodocError as exc:  # deleted, or grown too large, since it was indexed
            lines = _gone_copy(exc, index_copy)
            found[path] = exc.reason if lines is None else FileText(lines, None, GONE_TEXT)
            continue
        stored = indexed_hash(relpath)
        found[path] = FileText(text_lines(raw), None if stored is None else stored != content_hash(raw))
    return found


def stored_texts(conn: apsw.Connection, ws: Workspace, paths: list[str]) -> dict[str, FileText | str]:
    """``texts`` on a replica: each document's lines from its stored sections, or why there are none."""
    found: dict[str, FileText | str] = {}
    for path in dict.fromkeys(paths):
        lines = stored_lines(conn, ws, path)
        found[path] = NOT_STORED if lines is None else FileText(lines, None, STORED_TEXT)
    return found


def _gone_copy(exc: AutodocError, index_copy: StoredLines) -> list[str] | None:
    """The index's copy of the file ``_raw`` found gone (its NOT_FOUND names the relative path), or None."""
    return index_copy(exc.data["path"]) if exc.code == NOT_FOUND else None


def _raw(ws: Workspace, abspath: str, relpath: str) -> bytes:
    limit = ws.option("max_file_bytes")
    try:
        size = os.path.getsize(abspath)
        if size > limit:
            raise invalid_params(f"{relpath} is {size / 1e6:.1f} MB, over the max_file_bytes limit")
        with open_inside(ws.root, abspath) as handle:
            raw = handle.read(min(limit + 1, size + 65536))
    except OutsideRoot:
        raise AutodocError(OUTSIDE_ROOT, f"{relpath!r} resolves outside the workspace root", path=relpath) from None
    except (FileNotFoundError, NotADirectoryError):
        raise AutodocError(NOT_FOUND, f"{relpath} does not exist in workspace {ws.name}", path=relpath) from None
    except OSError as exc:  # a folder named like a note, no permission, a failing disk
        raise AutodocError(IO_ERROR, f"{relpath} cannot be read: {exc.strerror or exc}", path=relpath) from None
    if (binary := binary_reason(raw)) is not None:  # decoded, it was pages of U+FFFD handed to an agent as text
        raise invalid_params(f"{relpath} is not indexed and cannot be read: {binary}", path=relpath)
    return raw


def text_lines(raw: bytes) -> list[str]:
    """A file's lines numbered as the indexer and an editor number them: split at "\\n" only (a form
    feed, U+2028 or a lone "\\r" is no line break there, as it is for str.splitlines), a final newline
    ending the last line, and an empty file one empty line."""
    lines = raw.decode("utf-8", "replace").removeprefix("\ufeff").replace("\r\n", "\n").split("\n")
    return lines[:-1] if len(lines) > 1 and lines[-1] == "" else lines


def find(conn: apsw.Connection, ws: Workspace, query: Any, opts: Any = None) -> list[dict[str, Any]]:
    """Documents whose title, an alias or the path contains ``query`` (case-insensitive): exact
    title or alias first, then prefixes, then the rest, each in path order."""
    if not isinstance(query, str):
        raise invalid_params("query must be a string")
    opts = opts if isinstance(opts, dict) else {}
    limit, offset = opts.get("limit", DEFAULT_LIST), opts.get("offset", 0)
    if not whole_number(limit, 1, MAX_LIST):
        raise invalid_params(f"'limit' must be an integer from 1 to {MAX_LIST}")
    if not whole_number(offset, 0):
        raise invalid_params(f"'offset' must be an integer from 0, got {offset!r}")
    needle = query.strip().lower()
    rows = document_rows.names(conn, ws.id)
    ranked = []
    for path, title, aliases_json, line_count in rows:
        aliases = json.loads(aliases_json)
        names = [title.lower(), *(a.lower() for a in aliases)]
        if needle and not any(needle in n for n in [*names, path.lower()]):
            continue
        tier = 0 if needle in names else 1 if any(n.startswith(needle) for n in names) else 2
        ranked.append((tier, path, {"path": path, "title": title, "aliases": aliases, "line_count": line_count}))
    ranked.sort(key=lambda item: item[:2])
    return [item[2] for item in ranked[offset : offset + limit]]


def _line_option(opts: dict[str, Any], key: str, default: int) -> int:
    value = opts.get(key, default)
    if value is None:
        return default
    if not whole_number(value, 1):
        raise invalid_params(f"'{key}' must be a line number (an integer, 1 or more), got {value!r}")
    return value
