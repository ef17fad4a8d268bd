"""The engine: every method the RPC server, the CLI and the Neovim plugin call.

Methods take and return plain JSON values. Errors are ``AutodocError`` with a JSON-RPC code.

The semantic stage's parts live in ``semantic_runtime`` (one ``SemanticRuntime`` per workspace).
"""

from __future__ import annotations

import dataclasses
import os
import threading
import time
from pathlib import Path
from typing import Any

import apsw

from autodoc_core.errors import EMBED_FAILED, UNKNOWN_WORKSPACE, AutodocError, invalid_params
from autodoc_core.index import checkpoints
from autodoc_core.index.indexer import Indexer, IndexProgress
from autodoc_core.index.report import IndexReport
from autodoc_core.index.vectors import fill
from autodoc_core.index.wanted import KEPT, WantedDocuments
from autodoc_core.parse import frontmatter as fm
from autodoc_core.parse.walk import relative_to_root
from autodoc_core.providers import idle_core
from autodoc_core.providers.http import ProviderError
from autodoc_core.providers.idle_core import SEARCHES
from autodoc_core.rank import hits as rank_hits
from autodoc_core.related import Elsewhere, Source, locate, run_related, run_related_elsewhere, source_vector
from autodoc_core.retrieve import lexical
from autodoc_core.retrieve.query import parse_query
from autodoc_core.retrieve.semantic_stage import QueryVectors
from autodoc_core.search.answer import SearchAnswer
from autodoc_core.search.caches import Remembered, SearchCaches
from autodoc_core.search.pipeline import SemanticSource, run_search, wants_semantic
from autodoc_core.search.scope import EVERY, Scope, Searched, lacking_error, lacking_filters
from autodoc_core.search.scope import resolve as resolve_scope
from autodoc_core.search.stream import SearchStream
from autodoc_core.service import changes, documents, moves
from autodoc_core.service.filler import BackgroundFiller, EmbeddingPause
from autodoc_core.service.roots import root_state
from autodoc_core.service.scoped import limit_of, search_scope
from autodoc_core.service.semantic_runtime import SemanticRuntime, SemanticRuntimes
from autodoc_core.store import chunks as chunk_rows
from autodoc_core.store import documents as document_rows
from autodoc_core.store import workspace as wsmod
from autodoc_core.store.database import Store
from autodoc_core.store.embeddings import SemanticState
from autodoc_core.store.workspace import Workspace

INDEX_WAIT_LEVELS = ("lexical", "semantic")

idle_core.checkpoint = checkpoints.reached  # the encoder's passes, where tests can hold them


class Engine:
    def __init__(self, db_path: str | os.PathLike[str] | None = None) -> None:
        self.store = Store(db_path)
        self._schemas: Remembered[fm.FacetSchema] = Remembered()
        self._frequencies = lexical.DocumentFrequencies()
        self.caches = SearchCaches()  # what searches remember between them; this engine's alone
        self._semantic = SemanticRuntimes()
        self._indexing: dict[int, IndexProgress] = {}  # runs under way in this process, by workspace id
        self._stop = threading.Event()
        self._paused = EmbeddingPause(self.store)  # embedding.pause: no background fill takes a new batch
        self._filler: BackgroundFiller | None = None
        self._wanted = WantedDocuments()  # documents embedded first while a workspace fills
        self._index_locks: dict[int, threading.Lock] = {}
        self._locks_guard = threading.Lock()

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        self._stop.set()
        if self._filler is not None:
            self._filler.join(timeout=30)
        self._semantic.finish_warming(timeout=30)
        self.store.close()

    # -- the semantic stage (its parts: service/semantic_runtime.py) ------------------------

    def _semantic_state(self, conn: apsw.Connection, ws: Workspace) -> SemanticSource:
        return self._semantic.of(ws).semantic_state(conn, ws)

    def fill_vectors(self, ws: Workspace, background: bool = False) -> dict[str, Any]:
        """Embed every chunk that lacks a vector for the workspace's model, in this thread.
        In the background, stop early when the process is closing or has handed the lease on."""
        runtime = self._semantic.of(ws)
        embedder, unavailable = runtime.usable_embedder(ws)
        if unavailable:
            raise AutodocError(EMBED_FAILED, unavailable)
        if embedder is None:
            return {"state": SemanticState.OFF}
        progress = runtime.fill_progress()
        if background:  # the filler claimed the fill; it lends the lease between batches and waits for it back
            def stop() -> bool:
                return self._stop.is_set() or self._paused.is_set() or self.store.lease.filling_elsewhere() or \
                    (self._filler is not None and self._filler.asked_elsewhere(ws.id))
        else:
            stop = self._stop.is_set
            self.store.lease.claim_fill(take=True)  # asked for: another process's background fill stops for it
        try:
            complete = fill(self.store, ws.id, embedder, progress, stop, self._wanted,
                            stored=lambda: self._catch_up(runtime, ws.id))
            self._catch_up(runtime, ws.id)  # the model made active: the state moved once more
            if complete and progress.done_this_run:  # stopped early: the WAL is the next writer's
                self.store.shrink_wal()
        except ProviderError as exc:
            raise AutodocError(EMBED_FAILED, f"embedding failed: {exc.reason}", **progress.as_dict()) from None
        finally:
            if not background:
                self.store.lease.end_fill()
        return progress.as_dict()

    def _catch_up(self, runtime: SemanticRuntime, ws_id: int) -> None:
        """A batch stored: the next search finds the workspace's semantic state and vectors current."""
        with self.store.snapshot() as conn:
            ws = next((ws for ws in wsmod.all_workspaces(conn) if ws.id == ws_id), None)
            if ws is not None:  # removed while the batch was embedded: nothing to catch up with
                runtime.catch_up(conn, ws)

    def start_background(self) -> None:
        """Fill vectors in a background thread (for long-lived processes: the server, the plugin)."""
        if self._filler is None:
            self._semantic.warm_from_now()
            self._warm_local_encoders()
            self._filler = BackgroundFiller(self.store, self._semantic.needs_vectors, self.fill_vectors, self._stop,
                                            self._paused)
        self._filler.wake()

    def _warm_local_encoders(self) -> None:
        """Load each in-process encoder in a thread of its own now, not at the first search (nor in the
        filler's thread, whose lowered priority its threads inherit); those built from now on load when built."""
        with self.store.snapshot() as conn:
            spaces = wsmod.all_workspaces(conn)
        for ws in spaces:
            embedder, _ = self._semantic.of(ws).usable_embedder(ws)
            if embedder is not None and hasattr(embedder, "warm_up"):
                embedder.warm_up()

    def embedding_pause(self) -> dict[str, Any]:
        """Stop the background filler after the batch it is embedding (nothing is lost: the vectors
        embedded so far are kept), in every process on the database and after a restart, until
        ``embedding_resume``. A foreground ``workspace.index`` with ``wait: 'semantic'`` still fills."""
        self._paused.set()
        if self._filler is not None:
            self._filler.wake()  # its look after the batch under way says "paused" in workspace.status
        return {"paused": True}

    def embedding_paused(self) -> bool:
        return self._paused.is_set()

    def embedding_resume(self) -> dict[str, Any]:
        self._paused.clear()
        if self._filler is not None:
            self._filler.wake()
        return {"paused": False}

    # -- helpers ---------------------------------------------------------------------------

    def _workspace(self, name: Any) -> Workspace:
        with self.store.snapshot() as conn:
            return wsmod.get(conn, name)

    def _schema(self, ws: Workspace) -> fm.FacetSchema:
        """The workspace's facet schema; without a schema file, the fields its documents have, as strings."""
        path = Path(ws.root) / fm.SCHEMA_RELPATH
        try:
            stamp = path.stat().st_mtime
        except OSError:
            stamp = 0.0
        # An index run can bring inferred fields; the epoch tells a workspace added again under a removed one's id.
        version = (stamp, ws.next_generation, ws.vector_epoch)
        return self._schemas.get(ws.id, version, lambda: self._load_schema(ws))

    def _load_schema(self, ws: Workspace) -> fm.FacetSchema:
        schema = fm.load_schema(Path(ws.root))
        if schema.inferred:
            with self.store.snapshot() as conn:
                schema.common = {name: "string" for name in wsmod.facet_fields(conn, ws.id)}
        return schema

    def _index_lock(self, ws_id: int) -> threading.Lock:
        with self._locks_guard:
            return self._index_locks.setdefault(ws_id, threading.Lock())

    # -- workspace.* -----------------------------------------------------------------------

    def workspace_add(self, name: Any, root: Any, opts: Any = None) -> dict[str, Any]:
        """Register ``root`` as ``name``. A name already at another folder is refused unless ``opts.move``: then
        the workspace moves there (``moves.move_workspace``) and the answer's ``moved_from`` says from where."""
        name = wsmod.validate_name(name)
        if self.store.replica is not None and self._registered(name):
            return self._describe(self._workspace(name))  # a replica's editor adds its workspaces: they are there
        real_root = wsmod.validate_root(root)
        move = moves.validate_add_options(opts)
        with self.store.write() as conn:
            stored_root = wsmod.root_of(conn, name)
            if stored_root is None:
                # SQLite gives a removed workspace's id to the next one: its vector epoch starts where no earlier
                # one's reached, so a process holding that one's vectors in memory never takes them for this one's.
                wsmod.create(conn, name, real_root, time.time_ns())
        if stored_root is not None and stored_root != real_root:
            if not move:
                raise moves.refusal(name, stored_root, real_root, self.store.path)
            moved = moves.move_workspace(self.store, self._index_lock, name, real_root)
            self._frequencies = lexical.DocumentFrequencies()  # the old folder's word counts
            if moved is not None:
                return {**self._describe(self._workspace(name)), **moved}
        return self._describe(self._workspace(name))

    def _registered(self, name: str) -> bool:
        with self.store.snapshot() as conn:
            return wsmod.root_of(conn, name) is not None

    def workspace_list(self) -> list[dict[str, Any]]:
        with self.store.snapshot() as conn:
            return [self._describe(ws) for ws in wsmod.all_workspaces(conn)]

    def workspace_remove(self, name: Any) -> dict[str, Any]:
        ws = self._workspace(name)
        with self._index_lock(ws.id), self.store.write() as conn:
            wsmod.remove(conn, ws.id)
        return {"removed": ws.name}

    def workspace_configure(self, name: Any, changes: Any) -> dict[str, Any]:
        ws = self._workspace(name)
        valid = wsmod.validate_config(changes)
        with self.store.write() as conn:
            # Read again inside the write: the configuration read before it misses a change another process
            # made while this one waited for the lease, and writing it back would undo that change.
            current = wsmod.get(conn, ws.name)
            config = {**current.config, **valid}
            wsmod.set_config(conn, current.id, config)
        if self._filler is not None:
            self._filler.wake()  # a new model starts filling now, not at the filler's next look a minute later
        return {"name": ws.name, "settings": {**wsmod.CONFIG_DEFAULTS, **config}}

    def workspace_section_size(self, name: Any, tokens: Any) -> dict[str, Any]:
        return self.workspace_configure(name, {"section_tokens": tokens})

    def workspace_index(self, name: Any, opts: Any = None, lease_wait: float | None = None) -> dict[str, Any]:
        """``lease_wait``: how long to wait for another process's writer lease (default: the lease's own
        wait; the background scanner passes 0 and skips the round, raising BUSY at once)."""
        opts = opts or {}
        if not isinstance(opts, dict):
            raise invalid_params("index options must be an object")
        wait = opts.get("wait", "lexical")
        if wait not in INDEX_WAIT_LEVELS:
            raise invalid_params(f"'wait' must be one of {', '.join(INDEX_WAIT_LEVELS)}")
        paths = opts.get("paths")
        if isinstance(paths, str):  # one path, as search's paths take it
            paths = [paths]
        if paths is not None and (not isinstance(paths, list) or not all(isinstance(p, str) for p in paths)):
            raise invalid_params("'paths' must be a list of paths relative to the root")
        waited_for = self._workspace(name)
        if paths is not None:  # an absolute path inside the root, as an agent passes it, is that file
            paths = [relative_to_root(waited_for.root, path) for path in paths]
        if (unchanged := self._unchanged_while_another_fills(waited_for, paths, wait)) is not None:
            with self.store.snapshot() as conn:
                return {**unchanged.as_dict(), "semantic": self._semantic_state(conn, waited_for).state,
                        "files_with_problems": self._files_with_problems(conn, waited_for)}
        with self._index_lock(waited_for.id), self.store.exclusive(lease_wait):
            ws = self._workspace(name)  # again, under the lock: it may have been removed while this run waited
            if ws.id != waited_for.id:
                raise AutodocError(UNKNOWN_WORKSPACE, f"workspace {name!r} was removed and added again while this "
                                   "index run waited; run it again", name=name)
            progress = self._indexing[ws.id] = IndexProgress()
            try:
                report = Indexer(self.store, ws, progress).run(only=paths)
                self.store.shrink_wal()
            finally:
                self._indexing.pop(ws.id, None)
        result = report.as_dict()
        if wait == "semantic":
            result["embedding"] = self.fill_vectors(self._workspace(name))
        elif self._filler is not None:
            self._filler.wake(ws.id)
        with self.store.snapshot() as conn:
            result["semantic"] = self._semantic_state(conn, self._workspace(name)).state
            result["files_with_problems"] = self._files_with_problems(conn, self._workspace(name))
        return result

    def _files_with_problems(self, conn: apsw.Connection, ws: Workspace) -> int:
        """The files workspace.status lists problems of, as counted there: this run's ``problems`` are only the
        files it read (a second run reads the changed ones)."""
        return len(document_rows.paths_with_problems(conn, ws.id)) + (1 if self._schema(ws).problem else 0)

    def _unchanged_while_another_fills(self, ws: Workspace, paths: list[str] | None, wait: str) -> IndexReport | None:
        """While another process fills, a whole scan that would change nothing writes nothing and leaves that
        process its lease (it lent it at every editor's scan); None when this run is to run as always."""
        if paths is not None or wait != "lexical" or not self.store.lease.filling_elsewhere():
            return None
        return Indexer(self.store, ws).unchanged()

    def workspace_status(self, name: Any) -> dict[str, Any]:
        ws = self._workspace(name)
        schema = self._schema(ws)
        # A remote model this process has not asked yet has no fingerprint, and without one a workspace fully
        # embedded by another process would read as switching models with nothing embedded. Ask it (once; a
        # failure is kept for a while and said below).
        runtime = self._semantic.of(ws)
        unreachable = runtime.probe_remote_model(ws)
        with self.store.snapshot() as conn:
            documents, generation = document_rows.count_and_generation(conn, ws.id)
            chunks = chunk_rows.count(conn, ws.id)
            problems = document_rows.problems(conn, ws.id)
            source = runtime.semantic_state(conn, ws)
        if schema.problem:
            problems.insert(0, {"path": fm.SCHEMA_RELPATH, "kind": "schema", "reason": schema.problem})
        embedder = None
        if source.embedder is not None:
            embedded, total = source.progress
            # The pace from the database's count: another process may be the one embedding (the lease holder).
            progress = runtime.status_progress(source.embedder.model_fp, embedded, total)
            # total counts distinct texts: a section whose heading path and body repeat another's shares its vector
            embedder = {**source.embedder.describe(), "active_model_fp": ws.active_model_fp,
                        "embedded": embedded, "total": total, "repeated_chunks": max(chunks - total, 0),
                        "progress": progress,
                        **({"unreachable": unreachable} if unreachable else {})}
        return {
            **self._describe(ws, documents),
            "documents": documents,
            "chunks": chunks,
            "generation": generation,
            "semantic": source.state,
            "embedder": embedder,
            "ranker": ranker.describe() if (ranker := runtime.ranker(ws)) else None,
            "schema": {"common": schema.common, "types": schema.types},
            "problems": problems,
            "writer_lease": self.store.lease.holder(),
            "embedding_paused": self._paused.is_set(),
            "filler": self._filler.state() if self._filler is not None else None,
            "indexing": running.as_dict() if (running := self._indexing.get(ws.id)) else None,
        }

    def _describe(self, ws: Workspace, documents: int | None = None) -> dict[str, Any]:
        if documents is None:
            with self.store.snapshot() as conn:
                documents = document_rows.count_and_generation(conn, ws.id)[0]
        folder, problem = root_state(ws.root, documents)
        return {"name": ws.name, "root": ws.root, "settings": ws.settings(), "indexed_at": ws.indexed_at,
                "folder": folder, "root_problem": problem}

    # -- search.* and doc.* ----------------------------------------------------------------

    def embedding_counts(self, name: Any) -> tuple[int, int]:
        """(embedded, total) for the workspace's model, as ``workspace_status``'s embedder gives them, without the
        rest of the status (its problems, counts and folder check): an agent's search while the vectors fill
        says how far they reach."""
        ws = self._workspace(name)
        with self.store.snapshot() as conn:
            return self._semantic_state(conn, ws).progress

    def workspace_counts(self) -> list[dict[str, Any]]:
        """Each workspace's counts and states for a server's ``/health`` and ``/metrics``, read at every scrape:
        one snapshot, cached semantic counts, no problems list, schema or remote model asked."""
        found = []
        with self.store.snapshot() as conn:
            for ws in wsmod.all_workspaces(conn):
                documents = document_rows.count_and_generation(conn, ws.id)[0]
                source = self._semantic_state(conn, ws)
                embedded, total = source.progress if source.embedder is not None else (None, None)
                found.append({**self._describe(ws, documents), "documents": documents,
                              "sections": chunk_rows.count(conn, ws.id), "semantic": source.state,
                              "embedded": embedded, "total": total, "indexing": ws.id in self._indexing})
        return found

    def search_query(self, name: Any, query: Any, opts: Any = None) -> SearchAnswer:
        return self.search(name, query, opts)

    def search(self, name: Any, query: Any, opts: Any = None, stream: SearchStream | None = None) -> SearchAnswer:
        """``search.query`` of a scope: ``name`` is a workspace name, a list of names, or "*" (search.scope; the
        parameter keeps its name for callers that pass params by name); with a ``stream`` (the picker), its
        lexical answer first and a stop once superseded."""
        found = self._scope(name)
        parts = [self._part(name) for name in found.names]
        shared = QueryVectors() if len(parts) > 1 else None
        snippets = len(parts) > 1 and (opts is None or isinstance(opts, dict) and opts.get("snippets", True) is True)
        if snippets:  # made once, for the merged hits only
            opts = {**(opts or {}), "snippets": False}
        if len(parts) > 1 and isinstance(query, str) and ":" in query:  # a filter is `field:value`
            lacking = lacking_filters({part.name: self._filters_of(part.name, query) for part in parts})
            for part in parts:
                if part.name in lacking:
                    part.error = lacking_error(lacking[part.name])

        def search_one(part: Searched, follower: SearchStream | None) -> SearchAnswer:
            if part.error is not None:  # not searched (a filter its documents cannot match)
                raise part.error
            return self._filling_said(part, self._search_one(part.name, query, opts, follower, shared))

        made: dict[int, str] = {}  # by chunk id: a streamed search's partial and final answers share them
        return search_scope(found, parts, search_one, limit_of(opts), stream,
                            (lambda answer: self._with_snippets(answer, made)) if snippets else None)

    def _with_snippets(self, answer: SearchAnswer, made: dict[int, str]) -> None:
        """The merged answer's hits given their snippets (in place: they are the merge's copies), each chunk's
        made once in ``made``."""
        missing = [hit for hit in answer.hits if hit.chunk_id is not None and hit.chunk_id not in made]
        if missing:
            with self.store.snapshot() as conn:
                rank_hits.with_snippets(conn, missing, answer.query.words)
            made.update((hit.chunk_id, hit.snippet) for hit in missing)
        for hit in answer.hits:
            if hit.chunk_id is not None:
                hit.snippet = made[hit.chunk_id]

    def _filters_of(self, name: str, query: str) -> dict[str, str]:
        """The fields ``query`` filters the workspace by (not excluded), field -> the filter as typed."""
        parsed = parse_query(query, self._schema(self._workspace(name)))
        return {facet.field: f"{facet.field}:{facet.value}" for facet in parsed.facets if not facet.negated}

    def _scope(self, scope: Any) -> Scope:
        with self.store.snapshot() as conn:
            return resolve_scope(scope, [ws.name for ws in wsmod.all_workspaces(conn)])

    def _part(self, name: str) -> Searched:
        """A workspace of a search's scope, with the state of its folder (its hits are searched even when it
        is gone)."""
        ws = self._workspace(name)
        folder, problem = root_state(ws.root, 1)  # no fault even with documents: none to count for the sentence
        if folder != "ok":
            with self.store.snapshot() as conn:
                folder, problem = root_state(ws.root, document_rows.count_and_generation(conn, ws.id)[0])
        return Searched(ws.name, ws.root, folder, problem)

    def _filling_said(self, part: Searched, answer: SearchAnswer) -> SearchAnswer:
        """``answer``, and in ``part`` how far its workspace's vectors reach while they fill (for its note)."""
        if answer.semantic == SemanticState.PARTIAL:
            part.embedded = self.embedding_counts(part.name)
            part.paused = self.embedding_paused()
        return answer

    def _search_one(self, name: Any, query: Any, opts: Any = None, stream: SearchStream | None = None,
                    shared: QueryVectors | None = None) -> SearchAnswer:
        """One workspace's search, as ``run_search`` gives it; ``shared``: the query's embeddings of a search of
        several workspaces."""
        ws = self._workspace(name)
        schema = self._schema(ws)
        runtime = self._semantic.of(ws)
        failure = runtime.probe_remote_model(ws) if wants_semantic(opts) else None
        with SEARCHES.searching(), self.store.snapshot() as conn:
            checkpoints.reached("search.running")
            # Read again inside the search's snapshot (nested reads share it): a batch committed since the
            # first read would leave the vector index at the previous epoch, mapping reused chunk ids to
            # their old documents for this one answer.
            ws = self._workspace(name)
            source = dataclasses.replace(runtime.source(conn, ws, failure), shared=shared)
            answer = run_search(conn, ws, schema, query, opts, self._frequencies, source, runtime.ranker(ws), stream,
                                self.caches, several=shared is not None)
        self._want_while_filling(ws, source, answer)
        return answer

    def search_related(self, name: Any, path: Any, opts: Any = None) -> SearchAnswer:
        """Sections related to the section holding ``opts.line`` (or to the document), from the workspaces of
        ``scope``. With several, the source's workspace is ``opts.workspace`` or the one whose folder holds an
        absolute ``path``, and the others are searched with its vector and words (``run_related_elsewhere``)."""
        found = self._scope(name)
        home, opts = self._related_home(name, found.names, path, opts)
        parts = [self._part(name) for name in found.names]
        if found.names == (home,):
            def related_here(part: Searched, _: SearchStream | None) -> SearchAnswer:
                return self._filling_said(part, self._related_one(home, path, opts, several=False))

            answer = search_scope(found, parts, related_here, limit_of(opts))
        else:
            source, elsewhere, about = self._related_source(home, path, opts)

            def related_in(part: Searched, _: SearchStream | None) -> SearchAnswer:
                if part.name == home:
                    return self._filling_said(part, self._related_one(home, path, opts, several=True))
                return self._filling_said(part, self._related_elsewhere(part.name, source, elsewhere, opts))

            answer = search_scope(found, parts, related_in, limit_of(opts))
            answer.related = {**about, "workspace": home}
            source_answer = next((part.answer for part in parts if part.name == home and part.answer), None)
            if source_answer is not None:  # the words chosen from the source, not the first workspace's share
                answer.query = dataclasses.replace(source_answer.query, problems=answer.query.problems,
                                                   facets=answer.query.facets)
        return answer

    def _related_home(self, scope: Any, names: tuple[str, ...], path: Any, opts: Any) -> tuple[str, Any]:
        """The source's workspace, and the options without ``workspace``. A workspace-relative path is the one
        workspace of the scope (``names``) that holds it, else the one workspace of any that does."""
        named_here = isinstance(opts, dict) and opts.get("workspace") is not None
        if isinstance(scope, str) and scope != EVERY and not named_here:
            return scope, opts
        rest = dict(opts) if isinstance(opts, dict) else opts
        named = rest.pop("workspace", None) if isinstance(rest, dict) else None
        if named == EVERY:
            raise invalid_params("opts.workspace names the one workspace that holds the source, not a scope ('*'): "
                                 "the scope is the first parameter", path=str(path)[:200])
        if named is not None:
            return self._workspace(named).name, rest
        if isinstance(path, str) and os.path.isabs(path):
            real = os.path.realpath(path)
            with self.store.snapshot() as conn:
                holding = [ws for ws in wsmod.all_workspaces(conn) if real == ws.root or
                           real.startswith(ws.root.rstrip(os.sep) + os.sep)]
            if holding:
                return max(holding, key=lambda ws: len(ws.root)).name, rest
            raise invalid_params(f"{path} is in no workspace's folder", path=path)
        with self.store.snapshot() as conn:  # a workspace-relative path: the workspaces holding a document there
            holding = [ws.name for ws in wsmod.all_workspaces(conn) if isinstance(path, str)
                       and document_rows.content_hash_at(conn, ws.id, path) is not None]
        in_scope = [name for name in holding if name in names]
        if len(in_scope) == 1 or not in_scope and len(holding) == 1:
            return (in_scope or holding)[0], rest
        holding = in_scope or holding
        which = f"{', '.join(holding)} each hold {path}" if holding else f"no workspace holds {path}"
        raise invalid_params(f"a related search of several workspaces needs the source's workspace ({which}): "
                             "name it (opts.workspace), or give the file's absolute path", path=str(path)[:200],
                             holding=holding)

    def _related_one(self, name: Any, path: Any, opts: Any, several: bool) -> SearchAnswer:
        ws = self._workspace(name)
        schema = self._schema(ws)
        runtime = self._semantic.of(ws)
        failure = runtime.probe_remote_model(ws) if wants_semantic(opts) else None
        with SEARCHES.searching(), self.store.snapshot() as conn:
            ws = self._workspace(name)  # inside the snapshot, as for search_query
            source = runtime.source(conn, ws, failure)
            answer = run_related(conn, ws, schema, path, opts, self._frequencies, source, runtime.ranker(ws),
                                 self.caches, several)
        self._want_while_filling(ws, source, answer)
        return answer

    def _related_source(self, home: str, path: Any, opts: Any) -> tuple[Source, Elsewhere, dict[str, Any]]:
        """The source, located in its workspace, with its vector, and what the answer says of it."""
        ws = self._workspace(home)
        runtime = self._semantic.of(ws)
        line = opts.get("line") if isinstance(opts, dict) else None
        with self.store.snapshot() as conn:
            source = locate(conn, ws, path, line if isinstance(line, int) and not isinstance(line, bool) else None)
            semantic = runtime.source(conn, ws, None)
            vector = source_vector(semantic, source)
        model = semantic.embedder.model_fp if semantic.embedder is not None else None
        section = source.section
        about = {"path": source.path, "section": None if section is None else {
            "breadcrumb": section.breadcrumb, "chunk_id": section.chunk_id, "line_start": section.line_start,
            "line_end": section.line_end}}
        return source, Elsewhere(home, vector, model), about

    def _related_elsewhere(self, name: str, source: Source, elsewhere: Elsewhere, opts: Any) -> SearchAnswer:
        ws = self._workspace(name)
        schema = self._schema(ws)
        runtime = self._semantic.of(ws)
        with SEARCHES.searching(), self.store.snapshot() as conn:
            ws = self._workspace(name)
            semantic = runtime.source(conn, ws, None)
            model = semantic.embedder.model_fp if semantic.embedder is not None else None
            why = None if model == elsewhere.model else \
                f"{elsewhere.workspace} embeds with another model than this workspace: its vectors are not comparable"
            here = dataclasses.replace(elsewhere, why_not=why)
            return run_related_elsewhere(conn, ws, schema, source, here, opts, self._frequencies, semantic,
                                         runtime.ranker(ws), self.caches)

    def _want_while_filling(self, ws: Workspace, source: SemanticSource, answer: SearchAnswer) -> None:
        """A search while the workspace fills: its hits' documents are embedded next."""
        if source.embedder is not None and source.state != SemanticState.READY:
            self._wanted.want(ws.id, [hit.path for hit in answer.hits])
            if self._filler is not None:
                self._filler.wake(ws.id)

    def embedding_focus(self, name: Any, paths: Any) -> dict[str, Any]:
        """``embedding.focus``: documents the user has open (workspace-relative paths, the most recent first),
        embedded first while the workspace fills; past the number kept, the older ones are dropped."""
        ws = self._workspace(name)
        if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
            raise invalid_params("'paths' must be a list of workspace-relative paths")
        self._wanted.want(ws.id, paths[:KEPT])
        if self._filler is not None:
            self._filler.wake(ws.id)
        return {"wanted": len(self._wanted.paths(ws.id))}

    def doc_read(self, name: Any, path: Any, opts: Any = None) -> dict[str, Any]:
        ws = self._workspace(name)
        if self.store.replica is not None:
            with self.store.snapshot() as conn:
                return documents.stored_read(conn, ws, path, opts)

        def indexed_hash(relpath: str) -> str | None:
            with self.store.snapshot() as conn:
                return document_rows.content_hash_at(conn, ws.id, relpath)

        def stored(relpath: str) -> list[str] | None:
            with self.store.snapshot() as conn:
                return documents.stored_lines(conn, ws, relpath)

        return documents.read(ws, path, opts, indexed_hash, stored)

    def doc_texts(self, name: Any, paths: list[str]) -> dict[str, documents.FileText | str]:
        """Whole files' lines for a search's hits (MCP), each file read once, one snapshot for all: what
        ``doc_read`` of each gives, or the reason it gives none."""
        ws = self._workspace(name)
        with self.store.snapshot() as conn:
            if self.store.replica is not None:
                return documents.stored_texts(conn, ws, paths)
            return documents.texts(ws, paths, lambda relpath: document_rows.content_hash_at(conn, ws.id, relpath),
                                   lambda relpath: documents.stored_lines(conn, ws, relpath))

    def doc_list(self, name: Any, query: Any = "", opts: Any = None) -> list[dict[str, Any]]:
        """Documents whose title, an alias or the path contains ``query`` (case-insensitive): exact
        title or alias first, then prefixes, then the rest, each in path order."""
        ws = self._workspace(name)
        with self.store.snapshot() as conn:
            return documents.find(conn, ws, query, opts)

    # -- changes.* -------------------------------------------------------------------------

    def changes_since(self, name: Any, cursor: Any = None) -> dict[str, Any]:
        ws = self._workspace(name)
        with self.store.snapshot() as conn:
            return changes.since(conn, ws, cursor)
