"""Incremental indexing of one workspace into the store.

A file is re-read only when its size or mtime changed, and re-parsed only when its content hash
(or the chunking settings, or the facet schema) changed. Each document is written in one
transaction together with its new generation; unchanged chunks keep their rows (only their
spans move), so the lexical index and, later, embeddings are rewritten only for changed text.

Change detection, rename pairing and the batched writes share one run's state (its report, problems and
whether links changed); the tables are the store's (store.documents, chunks, symbols, facets, links,
changes). Parsing in worker processes is in ``parsing``, link resolution in ``links``, the run's progress
and report in ``report``.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable
from pathlib import Path

import apsw

from autodoc_core.errors import IO_ERROR, AutodocError
from autodoc_core.index import checkpoints
from autodoc_core.index.links import link_signature, resolve_links
from autodoc_core.index.parsing import parse_all
from autodoc_core.index.report import IndexProgress, IndexReport
from autodoc_core.parse import frontmatter as fm
from autodoc_core.parse.document import ParsedDocument
from autodoc_core.parse.symbols import symbol_keys
from autodoc_core.parse.walk import (
    FoundFile,
    OutsideRoot,
    RootUnlisted,
    WalkNotes,
    canonical_relpaths,
    listed_markdown_files,
    markdown_files,
    not_indexed_reason,
    open_inside,
)
from autodoc_core.store import changes, chunks, documents, facets, links, symbols
from autodoc_core.store import workspace as workspaces
from autodoc_core.store.chunks import Spans, head_text
from autodoc_core.store.database import Store
from autodoc_core.store.documents import Stamp as _Existing
from autodoc_core.store.workspace import Workspace

# 2: symbols collected per chunk; 3: line_count without the empty tail after a final newline; 4: comments and
# tables of contents are not indexed, and sections with no text are no chunks; 5: empty anchors and rules are not
# indexed either, and a block over four budgets is cut between lines; 6: without a schema file, frontmatter fields
# are facets (strings), and a non-ASCII facet value is kept case-folded too; 7: CJK runs are indexed as bigrams and
# full-width forms folded (parse.cjk): the word index of every chunk is rewritten, its rows and vectors kept; 8:
# inline code in headings keeps its underscores and asterisks (breadcrumbs): only sections under such headings are
# rewritten (their text hash holds the breadcrumb), the rest kept
PARSER_VERSION = 8
CJK_BIGRAMS_SINCE = 7
BATCH_SIZE = 200
BINARY_SNIFF_BYTES = 8192


RACY_SECONDS = 2.0  # file systems keep times to 1-2 s (FAT, some network mounts); most to 1-10 ms


def content_hash(raw: bytes) -> str:
    return hashlib.blake2b(raw, digest_size=16).hexdigest()


def binary_reason(raw: bytes) -> str | None:
    """Why a file is no Markdown text (the indexer skips it, and a read refuses it), or None."""
    return "binary content (NUL bytes), not Markdown text" if b"\x00" in raw[:BINARY_SNIFF_BYTES] else None


def _parser_version(parsed_with: str) -> int:
    """The PARSER_VERSION a document was parsed with ("p6:t512:snone" -> 6)."""
    head = parsed_with.split(":", 1)[0]
    return int(head[1:]) if head[:1] == "p" and head[1:].isdigit() else 0


def _fts_fields(parsed: ParsedDocument) -> tuple[str, list[str], list[str]]:
    return parsed.title, parsed.aliases, parsed.tags


class Indexer:
    def __init__(self, store: Store, ws: Workspace, progress: IndexProgress | None = None,
                 on_file: Callable[[str], None] | None = None) -> None:
        self.store = store
        self.ws = ws
        self.progress = progress or IndexProgress()
        self.on_file = on_file  # called with each file's path as the scan reaches it
        schema_raw = fm.schema_bytes(Path(ws.root))  # read once: the digest names the schema parsed
        self.schema = fm.parse_schema(schema_raw)
        schema_digest = content_hash(schema_raw)[:8] if schema_raw is not None else "none"
        self.parsed_with = f"p{PARSER_VERSION}:t{ws.option('section_tokens')}:s{schema_digest}"
        self.report = IndexReport()
        self.paths_with_problems: set[str] = set()
        self.stale_problems: set[str] = set()
        self.links_changed = False  # a written document's keys, links or supersession changed
        self.started_ns = time.time_ns()  # when run() began: files written since (or just before) are racy

    def run(self, only: list[str] | None = None) -> IndexReport:
        """Index the workspace; ``only`` limits the pass to these relative paths (a saved buffer)."""
        if only is not None:
            only = canonical_relpaths(self.ws.root, only)
        started = time.perf_counter()
        self.started_ns = time.time_ns()
        existing = self._existing(only)
        notes = WalkNotes()
        found = self._found(only, notes)
        if only is None and existing and not found and not os.listdir(self.ws.root):
            # An empty folder where documents were: most likely a mount point whose drive is not mounted.
            raise AutodocError(IO_ERROR, f"the workspace root {self.ws.root} is empty but the index holds "
                               f"{len(existing)} documents (a drive not mounted?); the index is unchanged. If the "
                               "files are gone for good, remove the workspace (workspace.remove)",
                               path=self.ws.root)
        self.report.scanned = len(found)
        pending: list[tuple[FoundFile, bytes, str]] = []
        touched: list[tuple[FoundFile, _Existing]] = []
        skipped: dict[str, str] = {}
        for item in found.values():
            self.progress.scanned += 1
            if self.on_file:
                self.on_file(item.relpath)
            old = existing.get(item.relpath)
            if old and old.size == item.size and old.mtime_ns == item.mtime_ns and old.parsed_with == self.parsed_with:
                self.report.unchanged += 1
                continue
            raw, reason = self._read(item)
            if raw is None:
                skipped[item.relpath] = reason or "unreadable"
                continue
            digest = content_hash(raw)
            if old and old.content_hash == digest and old.parsed_with == self.parsed_with:
                touched.append((item, old))
                self.report.unchanged += 1
            else:
                pending.append((item, raw, digest))

        for name in notes.bad_names:
            skipped[name] = "the name is not valid UTF-8; rename it to index what it holds"
        for folder in notes.unlisted:  # an unreadable folder is not an empty one: its documents stay
            skipped[f"{folder}/"] = "the folder cannot be listed; its documents stay as last indexed"
        gone = {p: e for p, e in existing.items()
                if (p not in found or p in skipped) and not any(p.startswith(f"{f}/") for f in notes.unlisted)}
        if only is not None:
            gone = {p: e for p, e in gone.items() if p in only}
            self.report.not_indexed = [{"path": p, "reason": not_indexed_reason(self.ws.root, p)}
                                       for p in dict.fromkeys(only) if p not in found and p not in existing]
        # Only a new path can be a rename: a file moved over an existing one is that document changed,
        # and the moved-away path must still go (paired, it stayed as a ghost).
        renames = self._pair_renames(gone, [p for p in pending if p[0].relpath not in existing])
        # Problems of files that are gone (deleted, or skipped before and deleted since) go with them.
        self.stale_problems = set() if only is not None else self.paths_with_problems - set(found) - set(skipped)
        self.progress.phase, self.progress.to_write = "writing", len(pending)
        self.progress.writing_since = time.monotonic()
        self._write(pending, touched, renames, gone, skipped, existing)
        self.report.seconds = time.perf_counter() - started
        return self.report

    def unchanged(self) -> IndexReport | None:
        """Without writing: the report of a whole run that would find every document as indexed (the same size,
        time and parser settings; none new, none gone, no file with a problem, links resolved), or None when a run
        has something to write. A scan while another process fills then leaves that process its lease."""
        started = time.perf_counter()
        existing = self._existing(None)
        notes = WalkNotes()
        found = self._found(None, notes)
        if (not existing or notes.bad_names or notes.unlisted or self.paths_with_problems
                or found.keys() != existing.keys()):
            return None
        for path, item in found.items():
            old = existing[path]
            if (old.size, old.mtime_ns, old.parsed_with) != (item.size, item.mtime_ns, self.parsed_with):
                return None
        with self.store.snapshot() as conn:
            if workspaces.links_dirty(conn, self.ws.id):
                return None
        self.report.scanned = self.report.unchanged = len(found)
        self.report.seconds = time.perf_counter() - started
        return self.report

    def _existing(self, only: list[str] | None) -> dict[str, _Existing]:
        """Stored documents (only those at ``only``'s paths when given)."""
        with self.store.snapshot() as conn:
            self.paths_with_problems = documents.paths_with_problems(conn, self.ws.id)
            return documents.stamps(conn, self.ws.id, only)

    def _found(self, only: list[str] | None, notes: WalkNotes) -> dict[str, FoundFile]:
        """The files the walk finds. A root that cannot be listed (a drive not mounted, a folder moved)
        stops the run before anything is written: walked as empty, it deleted every document."""
        try:
            files = markdown_files(self.ws.root, notes) if only is None else listed_markdown_files(self.ws.root, only)
            return {item.relpath: item for item in files}
        except RootUnlisted as exc:
            raise AutodocError(IO_ERROR, f"{exc}; the index is unchanged (is the drive mounted?)",
                               path=self.ws.root) from None

    def _read(self, item: FoundFile) -> tuple[bytes | None, str | None]:
        limit = self.ws.option("max_file_bytes")
        if item.size > limit:
            return None, f"{item.size / 1e6:.1f} MB is over the {limit / 1e6:g} MB limit (max_file_bytes)"
        try:
            with open_inside(self.ws.root, item.abspath) as handle:
                # Ask for about the file's size, not the limit: read(n) allocates n bytes up front, and
                # a 10 MB buffer shrunk to 2 kB leaves a memory mapping behind per file (259k files
                # exhausted vm.max_map_count).
                raw = handle.read(min(limit + 1, item.size + 65536))
        except FileNotFoundError:
            return None, "the file disappeared while it was being indexed"
        except OutsideRoot:
            return None, "the file now resolves outside the workspace root"
        except OSError as exc:
            return None, f"cannot read the file: {exc.strerror or exc}"
        if len(raw) > limit:
            return None, f"the file grew past the {limit / 1e6:g} MB limit (max_file_bytes)"
        if (binary := binary_reason(raw)) is not None:
            return None, binary
        return raw, None

    def _pair_renames(self, gone: dict[str, _Existing], pending: list) -> dict[str, tuple[str, _Existing]]:
        """New path -> (old path, old row) where a vanished file's exact content reappears elsewhere."""
        by_hash: dict[str, list[str]] = {}
        for path, old in gone.items():
            by_hash.setdefault(old.content_hash, []).append(path)
        renames = {}
        for item, _raw, digest in pending:
            candidates = by_hash.get(digest)
            if candidates and item.relpath not in gone:
                old_path = candidates.pop()
                renames[item.relpath] = (old_path, gone[old_path])
        for old_path, _ in renames.values():
            gone.pop(old_path, None)
        return renames

    def _write(self, pending: list[tuple[FoundFile, bytes, str]], touched: list[tuple[FoundFile, _Existing]],
               renames: dict[str, tuple[str, _Existing]], gone: dict[str, _Existing], skipped: dict[str, str],
               existing: dict[str, _Existing]) -> None:
        if touched:
            with self.store.write() as conn:
                for item, old in touched:
                    documents.touch(conn, old.id, item.size, self._stored_mtime(item))
        parsed_documents = parse_all([(raw, item.relpath) for item, raw, _ in pending], self.schema,
                                     self.ws.option("section_tokens"))
        for start in range(0, len(pending), BATCH_SIZE):
            with self.store.write() as conn:
                for item, _raw, digest in pending[start : start + BATCH_SIZE]:
                    parsed = next(parsed_documents)
                    self._write_document(conn, item, parsed, digest, existing.get(item.relpath), renames)
                    self.progress.written += 1
                    checkpoints.reached("index.document")  # inside the batch's transaction
                workspaces.bump_epoch(conn, self.ws.id)
                if self.links_changed:
                    workspaces.set_links_dirty(conn, self.ws.id, True)
            checkpoints.reached("index.batch")  # after the batch's commit
        self.progress.phase = "finishing"
        with self.store.write() as conn:
            for path, old in gone.items():
                self._delete_document(conn, path, old.id)
            if gone:
                workspaces.bump_epoch(conn, self.ws.id)
            for path, reason in skipped.items():
                self._set_problems(conn, path, "skipped", [reason])
                self.report.skipped += 1
            for path in self.stale_problems:
                documents.set_problems(conn, self.ws.id, path, "", [])
            if workspaces.links_dirty(conn, self.ws.id) or gone:
                checkpoints.reached("index.links")
                resolve_links(conn, self.ws.id)
                workspaces.set_links_dirty(conn, self.ws.id, False)
            changes.prune(conn, self.ws.id)
            workspaces.set_indexed_at(conn, self.ws.id, time.time())

    def _stored_mtime(self, item: FoundFile) -> int:
        """The file's time, or 0 when it was written within RACY_SECONDS of this run's start: a same-size
        rewrite in the same timestamp tick would look unchanged for good ("racily clean", as git calls
        it), so such a file is read and compared by content next time, until its time is old enough."""
        return item.mtime_ns if item.mtime_ns < self.started_ns - int(RACY_SECONDS * 1e9) else 0

    def _next_generation(self, conn: apsw.Connection) -> int:
        return workspaces.next_generation(conn, self.ws.id)

    def _write_document(self, conn: apsw.Connection, item: FoundFile, parsed: ParsedDocument, digest: str,
                        old: _Existing | None, renames: dict[str, tuple[str, _Existing]]) -> None:
        generation = self._next_generation(conn)
        renamed_from = None
        if old is None and item.relpath in renames:
            renamed_from, old = renames[item.relpath]
        fields = documents.Fields(
            item.relpath, item.size, self._stored_mtime(item), digest, self.parsed_with, generation, parsed.title,
            parsed.doc_type, parsed.status, parsed.aliases, parsed.tags, parsed.meta, parsed.supersedes,
            parsed.superseded_by, parsed.line_count,
        )
        # Only the first change of a run needs the comparison: after it, links are re-resolved anyway.
        compare = old is not None and not self.links_changed
        before = link_signature(conn, old.id) if compare else None
        if old is None:
            doc_id = documents.insert(conn, self.ws.id, fields)
            same_fields = False
        else:
            doc_id = old.id
            same_fields = documents.head_fields(conn, doc_id) == _fts_fields(parsed)
            documents.update(conn, doc_id, fields)
        retokenize = old is not None and _parser_version(old.parsed_with) < CJK_BIGRAMS_SINCE
        self._write_chunks(conn, doc_id, parsed, generation, reuse=same_fields, new=old is None,
                           retokenize=retokenize)
        self._write_doc_rows(conn, doc_id, parsed, new=old is None)
        if old is None or (compare and (renamed_from or before != link_signature(conn, doc_id))):
            self.links_changed = True
        if parsed.problems or item.relpath in self.paths_with_problems:
            self._set_problems(conn, item.relpath, "warning", parsed.problems)
        if renamed_from:
            if renamed_from in self.paths_with_problems:
                self._set_problems(conn, renamed_from, "warning", [])
            self._log(conn, "deleted", renamed_from, generation, {"renamed_to": item.relpath})
            self._log(conn, "added", item.relpath, generation, {"renamed_from": renamed_from})
            self.report.renamed += 1
        elif old is None:
            self._log(conn, "added", item.relpath, generation)
            self.report.added += 1
        else:
            self._log(conn, "changed", item.relpath, generation)
            self.report.changed += 1

    def _write_chunks(self, conn: apsw.Connection, doc_id: int, parsed: ParsedDocument, generation: int, reuse: bool,
                      new: bool, retokenize: bool = False) -> None:
        """The document's chunks: a chunk whose text is unchanged keeps its row (and its vector); ``retokenize``
        rewrites its word-index row too (the index's tokenizing changed since the document was written)."""
        reusable: dict[str, list[int]] = {}
        existing = () if new else chunks.hashes_of_document(conn, doc_id)
        for chunk_id, text_hash in existing:
            reusable.setdefault(text_hash, []).append(chunk_id)
        if not reuse:
            stale = [i for ids in reusable.values() for i in ids]
            reusable = {}
        else:
            stale = []
        title, aliases, tags = _fts_fields(parsed)
        for ord_, chunk in enumerate(parsed.chunks):
            spans = Spans(ord_, chunk.kind, chunk.byte_start, chunk.byte_end, chunk.line_start, chunk.line_end,
                          generation)
            head = head_text(title, chunk.breadcrumb, aliases, tags)
            kept = reusable.get(chunk.text_hash)
            if kept:
                chunk_id = kept.pop()
                chunks.move(conn, chunk_id, spans)
                # Same text, same symbols, unless the extraction changed: rewriting them is cheap.
                symbols.delete(conn, chunk_id)
                symbols.insert(conn, self.ws.id, chunk_id, symbol_keys(chunk.symbols))
                if retokenize:
                    chunks.index_words(conn, self.ws.id, chunk_id, head, chunk.body, replace=True)
                self.report.chunks_kept += 1
                continue
            chunk_id = chunks.insert(conn, self.ws.id, doc_id, spans, chunk.breadcrumb, chunk.body, chunk.text_hash)
            chunks.index_words(conn, self.ws.id, chunk_id, head, chunk.body)
            symbols.insert(conn, self.ws.id, chunk_id, symbol_keys(chunk.symbols))
            self.report.chunks_written += 1
        stale.extend(i for ids in reusable.values() for i in ids)
        self._delete_chunks(conn, stale)

    def _delete_chunks(self, conn: apsw.Connection, chunk_ids: list[int]) -> None:
        for chunk_id in chunk_ids:
            symbols.delete(conn, chunk_id)
            chunks.delete(conn, self.ws.id, chunk_id)
        self.report.chunks_deleted += len(chunk_ids)

    def _write_doc_rows(self, conn: apsw.Connection, doc_id: int, parsed: ParsedDocument, new: bool) -> None:
        facets.replace(conn, self.ws.id, doc_id, set(parsed.facets) | {("tag", tag) for tag in parsed.tags}, new)
        links.replace(conn, self.ws.id, doc_id, parsed.keys, parsed.link_keys, new)

    def _delete_document(self, conn: apsw.Connection, path: str, doc_id: int) -> None:
        self._delete_chunks(conn, chunks.ids_of_document(conn, doc_id))
        facets.delete(conn, doc_id)
        links.delete(conn, doc_id)
        documents.delete(conn, doc_id)
        self._log(conn, "deleted", path, self._next_generation(conn))
        self.report.deleted += 1

    def _set_problems(self, conn: apsw.Connection, path: str, kind: str, reasons: list[str]) -> None:
        documents.set_problems(conn, self.ws.id, path, kind, reasons)
        self.report.problems.extend({"path": path, "kind": kind, "reason": r} for r in reasons)

    def _log(self, conn: apsw.Connection, op: str, path: str, generation: int, detail: dict | None = None) -> None:
        changes.log(conn, self.ws.id, op, path, generation, detail)
