"""The engine: every method the RPC server, the CLI and the Neovim plugin call.

Methods take and return plain JSON values. Errors are ``AutodocError`` with a JSON-RPC code.
"""

from __future__ import annotations

import dataclasses
import json
import os
import threading
import time
from pathlib import Path
from typing import Any

from . import frontmatter as fm
from . import lexical
from . import workspace as wsmod
from .embedders import Embedder, make_embedder
from .embedding import OFF, PARTIAL, READY, SWITCHING, Progress, counts, fill, semantic_state
from .errors import EMBED_FAILED, NOT_FOUND, OUTSIDE_ROOT, AutodocError, invalid_params
from .http import ProviderError
from .indexer import Indexer, file_problem_summary, remove_workspace_rows
from .markdown import MARKDOWN_SUFFIXES
from .providers import within_deadline
from .rank import Ranker, make_ranker
from .search import SemanticSource, run_search, wants_semantic
from .semantic import VectorIndex
from .store import Store
from .walk import OutsideRoot, is_inside, open_inside
from .workspace import Workspace

CHANGES_PAGE = 1000
INDEX_WAIT_LEVELS = ("lexical", "semantic")
LEASE_RETRY_SECONDS = 5.0
MAX_FILL_BACKOFF_SECONDS = 300.0


class Engine:
    def __init__(self, db_path: str | os.PathLike[str] | None = None) -> None:
        self.store = Store(db_path)
        self._schemas: dict[int, tuple[float, fm.FacetSchema]] = {}
        self._frequencies = lexical.DocumentFrequencies()
        self._embedders: dict[int, tuple[str, Embedder | None]] = {}
        self._rankers: dict[int, tuple[str, Ranker | None]] = {}
        self._indexes: dict[tuple[int, str], VectorIndex] = {}
        self._states: dict[int, tuple[tuple, str, tuple[int, int]]] = {}
        self._progress: dict[int, Progress] = {}
        self._semantic_lock = threading.RLock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._paused = threading.Event()  # embedding.pause: the background filler takes no new batch
        self._filler: threading.Thread | None = None
        self._index_locks: dict[int, threading.Lock] = {}
        self._locks_guard = threading.Lock()

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._filler is not None:
            self._filler.join(timeout=30)
        self.store.close()

    # -- the semantic stage's moving parts ---------------------------------------------------

    def _provider(self, cache: dict, ws: Workspace, option: str, factory):
        """The workspace's embedder or ranker, rebuilt only when its configuration changes (so a
        change takes effect at the next query, with no restart)."""
        config = ws.option(option)
        key = json.dumps(config, sort_keys=True)
        with self._semantic_lock:
            cached = cache.get(ws.id)
            if cached is None or cached[0] != key:
                cached = (key, factory(config))
                cache[ws.id] = cached
            return cached[1]

    def _embedder(self, ws: Workspace) -> Embedder | None:
        return self._provider(self._embedders, ws, "embedder", make_embedder)

    def _usable_embedder(self, ws: Workspace) -> tuple[Embedder | None, str | None]:
        """The embedder, or why the configured one cannot be used (e.g. the model is not installed)."""
        try:
            return self._embedder(ws), None
        except (OSError, ValueError) as exc:
            return None, f"the embedding model cannot be used: {exc}"

    def _ranker(self, ws: Workspace) -> Ranker | None:
        return self._provider(self._rankers, ws, "ranker", make_ranker)

    def _semantic_state(self, conn, ws: Workspace) -> SemanticSource:
        """The workspace's semantic state, embedder and progress, without loading its vectors
        (status, index reports and the filler need no more)."""
        embedder, unavailable = self._usable_embedder(ws)
        if embedder is None:
            return SemanticSource(OFF, unavailable=unavailable)
        if embedder.dimensions is None:  # a remote model not yet asked: its vectors cannot exist yet
            active = ws.active_model_fp
            state = SWITCHING if active else PARTIAL
            return SemanticSource(state, embedder, None, (0, 0))
        fingerprint = embedder.model_fp
        key = (ws.vector_epoch, fingerprint, ws.active_model_fp)
        with self._semantic_lock:
            cached = self._states.get(ws.id)
            if cached is None or cached[0] != key:
                progress = counts(conn, ws.id, fingerprint)
                cached = (key, semantic_state(progress, fingerprint, ws.active_model_fp), progress)
                self._states[ws.id] = cached
        return SemanticSource(cached[1], embedder, None, cached[2])

    def _semantic_source(self, conn, ws: Workspace, probe: bool = False) -> SemanticSource:
        """The state plus the workspace's vectors in memory, refreshed to this snapshot: for a search.
        ``probe``: a remote model this process has not asked yet is asked now (within the semantic
        deadline), so a fresh process does not take a complete model for a new one."""
        failure = self._probe_remote_model(ws) if probe else None
        source = self._semantic_state(conn, ws)
        if failure:
            return dataclasses.replace(source, failure=failure)
        if source.embedder is None or source.embedder.dimensions is None:
            return source
        fingerprint = source.embedder.model_fp
        with self._semantic_lock:
            index = self._indexes.setdefault((ws.id, fingerprint), VectorIndex(ws.id, fingerprint))
        index.refresh(conn, ws.vector_epoch)
        return dataclasses.replace(source, index=index)

    def _probe_remote_model(self, ws: Workspace) -> str | None:
        """Ask an unprobed remote model for its dimensions; why it failed, or None."""
        embedder, _ = self._usable_embedder(ws)
        if embedder is None or not embedder.remote or embedder.dimensions is not None:
            return None
        try:
            within_deadline(embedder.probe, ws.option("semantic_deadline"), "the embedding provider")
        except ProviderError as exc:
            return exc.reason
        return None

    def fill_vectors(self, ws: Workspace, background: bool = False) -> dict[str, Any]:
        """Embed every chunk that lacks a vector for the workspace's model, in this thread.
        In the background, stop early when the process is closing or has handed the lease on."""
        embedder, unavailable = self._usable_embedder(ws)
        if unavailable:
            raise AutodocError(EMBED_FAILED, unavailable)
        if embedder is None:
            return {"state": OFF}
        progress = self._progress.setdefault(ws.id, Progress())
        progress.started, progress.done_this_run = time.monotonic(), 0
        if background:
            def stop() -> bool:
                return self._stop.is_set() or self._paused.is_set() or not self.store.lease.held
        else:
            stop = self._stop.is_set
        try:
            fill(self.store, ws.id, embedder, progress, stop)
        except ProviderError as exc:
            raise AutodocError(EMBED_FAILED, f"embedding failed: {exc.reason}", **progress.as_dict()) from None
        return progress.as_dict()

    def start_background(self) -> None:
        """Fill vectors in a background thread (for long-lived processes: the server, the plugin)."""
        if self._filler is None:
            self._filler = threading.Thread(target=self._fill_loop, name="autodoc-embedder", daemon=True)
            self._filler.start()
        self._wake.set()

    def _fill_loop(self) -> None:
        """Each workspace on its own schedule: a failing or hanging provider backs off (1 s doubling
        to 5 min) without holding up the others. Only the process holding the writer lease fills,
        so two editors on one database never embed the same text twice."""
        retry_at: dict[int, float] = {}
        backoff: dict[int, float] = {}
        while not self._stop.is_set():
            now = time.monotonic()
            self._wake.wait(timeout=min([60.0, *(max(t - now, 0.05) for t in retry_at.values())]))
            self._wake.clear()
            if self._paused.is_set():
                continue  # embedding.resume wakes the loop
            with self.store.snapshot() as conn:
                spaces = [ws for ws in wsmod.all_workspaces(conn) if self._needs_vectors(conn, ws)]
            # Forget schedules of workspaces that need nothing now (filled by another process,
            # removed): a past-due entry would wake this loop every 50 ms for nothing.
            needed = {ws.id for ws in spaces}
            retry_at = {ws_id: at for ws_id, at in retry_at.items() if ws_id in needed}
            backoff = {ws_id: delay for ws_id, delay in backoff.items() if ws_id in needed}
            for ws in spaces:
                if self._stop.is_set():
                    return
                if time.monotonic() < retry_at.get(ws.id, 0):
                    continue
                if not self.store.lease.try_acquire():
                    retry_at[ws.id] = time.monotonic() + LEASE_RETRY_SECONDS  # another process writes now
                    continue
                try:
                    self.fill_vectors(ws, background=True)
                except Exception:  # noqa: BLE001 - recorded in the workspace's progress; a background thread survives
                    delay = backoff[ws.id] = min(backoff.get(ws.id, 0.5) * 2, MAX_FILL_BACKOFF_SECONDS)
                    retry_at[ws.id] = time.monotonic() + delay
                else:
                    backoff.pop(ws.id, None)
                    retry_at.pop(ws.id, None)

    def embedding_pause(self) -> dict[str, Any]:
        """Stop the background filler after the batch it is embedding (nothing is lost: the vectors
        embedded so far are kept). A foreground ``workspace.index`` with ``wait: 'semantic'`` still fills."""
        self._paused.set()
        return {"paused": True}

    def embedding_resume(self) -> dict[str, Any]:
        self._paused.clear()
        self._wake.set()
        return {"paused": False}

    def _needs_vectors(self, conn, ws: Workspace) -> bool:
        try:
            source = self._semantic_state(conn, ws)
        except Exception:  # noqa: BLE001 - e.g. a model folder that vanished: reported by status, not here
            return False
        return source.embedder is not None and source.state != READY

    # -- helpers ---------------------------------------------------------------------------

    def _workspace(self, name: Any) -> Workspace:
        with self.store.snapshot() as conn:
            return wsmod.get(conn, name)

    def _schema(self, ws: Workspace) -> fm.FacetSchema:
        path = Path(ws.root) / fm.SCHEMA_RELPATH
        try:
            stamp = path.stat().st_mtime
        except OSError:
            stamp = 0.0
        cached = self._schemas.get(ws.id)
        if cached is None or cached[0] != stamp:
            cached = (stamp, fm.load_schema(Path(ws.root)))
            self._schemas[ws.id] = cached
        return cached[1]

    def _index_lock(self, ws_id: int) -> threading.Lock:
        with self._locks_guard:
            return self._index_locks.setdefault(ws_id, threading.Lock())

    # -- workspace.* -----------------------------------------------------------------------

    def workspace_add(self, name: Any, root: Any) -> dict[str, Any]:
        name = wsmod.validate_name(name)
        real_root = wsmod.validate_root(root)
        with self.store.write() as conn:
            row = conn.execute("SELECT root FROM workspaces WHERE name = ?", (name,)).fetchone()
            if row and row[0] != real_root:
                raise invalid_params(f"workspace {name!r} already exists with root {row[0]}", name=name)
            if row is None:
                ws_id = conn.execute(
                    "INSERT INTO workspaces(name, root) VALUES (?, ?) RETURNING id", (name, real_root)
                ).fetchone()[0]
                lexical.create_fts_table(conn, ws_id)
        return self._describe(self._workspace(name))

    def workspace_list(self) -> list[dict[str, Any]]:
        with self.store.snapshot() as conn:
            return [self._describe(ws) for ws in wsmod.all_workspaces(conn)]

    def workspace_remove(self, name: Any) -> dict[str, Any]:
        ws = self._workspace(name)
        with self._index_lock(ws.id), self.store.write() as conn:
            remove_workspace_rows(conn, ws.id)
            lexical.drop_fts_table(conn, ws.id)
        return {"removed": ws.name}

    def workspace_configure(self, name: Any, changes: Any) -> dict[str, Any]:
        ws = self._workspace(name)
        valid = wsmod.validate_config(changes)
        config = {**ws.config, **valid}
        with self.store.write() as conn:
            conn.execute("UPDATE workspaces SET config = ? WHERE id = ?", (json.dumps(config, sort_keys=True), ws.id))
        return {"name": ws.name, "settings": {**wsmod.CONFIG_DEFAULTS, **config}}

    def workspace_section_size(self, name: Any, tokens: Any) -> dict[str, Any]:
        return self.workspace_configure(name, {"section_tokens": tokens})

    def workspace_index(self, name: Any, opts: Any = None) -> dict[str, Any]:
        opts = opts or {}
        if not isinstance(opts, dict):
            raise invalid_params("index options must be an object")
        wait = opts.get("wait", "lexical")
        if wait not in INDEX_WAIT_LEVELS:
            raise invalid_params(f"'wait' must be one of {', '.join(INDEX_WAIT_LEVELS)}")
        paths = opts.get("paths")
        if paths is not None and (not isinstance(paths, list) or not all(isinstance(p, str) for p in paths)):
            raise invalid_params("'paths' must be a list of paths relative to the root")
        ws = self._workspace(name)
        with self._index_lock(ws.id), self.store.exclusive():
            report = Indexer(self.store, ws).run(only=paths)
        result = report.as_dict()
        if wait == "semantic":
            result["embedding"] = self.fill_vectors(self._workspace(name))
        elif self._filler is not None:
            self._wake.set()
        with self.store.snapshot() as conn:
            result["semantic"] = self._semantic_state(conn, self._workspace(name)).state
        return result

    def workspace_status(self, name: Any) -> dict[str, Any]:
        ws = self._workspace(name)
        schema = self._schema(ws)
        with self.store.snapshot() as conn:
            documents, generation = conn.execute(
                "SELECT COUNT(*), COALESCE(MAX(generation), 0) FROM documents WHERE ws_id = ?", (ws.id,)
            ).fetchone()
            chunks = conn.execute("SELECT COUNT(*) FROM chunks WHERE ws_id = ?", (ws.id,)).fetchone()[0]
            problems = file_problem_summary(conn, ws.id)
            source = self._semantic_state(conn, ws)
        if schema.problem:
            problems.insert(0, {"path": fm.SCHEMA_RELPATH, "kind": "schema", "reason": schema.problem})
        embedder = None
        if source.embedder is not None:
            embedded, total = source.progress
            progress = self._progress.get(ws.id)
            embedder = {**source.embedder.describe(), "active_model_fp": ws.active_model_fp,
                        "embedded": embedded, "total": total,
                        **({"progress": progress.as_dict()} if progress else {})}
        return {
            **self._describe(ws),
            "documents": documents,
            "chunks": chunks,
            "generation": generation,
            "semantic": source.state,
            "embedder": embedder,
            "ranker": ranker.describe() if (ranker := self._ranker(ws)) else None,
            "schema": {"common": schema.common, "types": schema.types},
            "problems": problems,
            "writer_lease": self.store.lease.holder(),
            "embedding_paused": self._paused.is_set(),
        }

    def _describe(self, ws: Workspace) -> dict[str, Any]:
        return {"name": ws.name, "root": ws.root, "settings": ws.settings(), "indexed_at": ws.indexed_at}

    # -- search.* and doc.* ----------------------------------------------------------------

    def search_query(self, name: Any, query: Any, opts: Any = None) -> dict[str, Any]:
        ws = self._workspace(name)
        schema = self._schema(ws)
        with self.store.snapshot() as conn:
            source = self._semantic_source(conn, ws, probe=wants_semantic(opts))
            return run_search(conn, ws, schema, query, opts, self._frequencies, source, self._ranker(ws))

    def doc_read(self, name: Any, path: Any, opts: Any = None) -> dict[str, Any]:
        ws = self._workspace(name)
        abspath, relpath = self._resolve_inside(ws, path)
        opts = opts or {}
        if not isinstance(opts, dict):
            raise invalid_params("read options must be an object")
        limit = ws.option("max_file_bytes")
        try:
            size = os.path.getsize(abspath)
            if size > limit:
                raise invalid_params(f"{relpath} is {size / 1e6:.1f} MB, over the max_file_bytes limit")
            with open_inside(ws.root, abspath) as handle:
                raw = handle.read(min(limit + 1, size + 65536))
        except OutsideRoot:
            raise AutodocError(OUTSIDE_ROOT, f"{relpath!r} resolves outside the workspace root", path=relpath) from None
        except FileNotFoundError:
            raise AutodocError(NOT_FOUND, f"{relpath} does not exist in workspace {ws.name}", path=relpath) from None
        lines = raw.decode("utf-8", "replace").splitlines()
        first = _line_option(opts, "line_start", 1)
        last = _line_option(opts, "line_end", len(lines))
        if last < first:
            raise invalid_params("'line_end' must not be before 'line_start'")
        return {
            "path": relpath,
            "line_start": first,
            "line_end": min(last, len(lines)),
            "total_lines": len(lines),
            "text": "\n".join(lines[first - 1 : last]),
        }

    def _resolve_inside(self, ws: Workspace, path: Any) -> tuple[str, str]:
        if not isinstance(path, str) or not path:
            raise invalid_params("path must be a non-empty string relative to the workspace root")
        if "\x00" in path or os.path.isabs(path) or path.startswith(("/", "\\")):
            raise AutodocError(OUTSIDE_ROOT, f"{path!r} is not a path relative to the workspace root", path=path)
        abspath = os.path.realpath(os.path.join(ws.root, path))
        if not is_inside(ws.root, abspath):
            raise AutodocError(OUTSIDE_ROOT, f"{path!r} resolves outside the workspace root", path=path)
        if not abspath.lower().endswith(MARKDOWN_SUFFIXES):
            raise invalid_params(f"{path!r} is not a Markdown file (.md, .markdown)", path=path)
        return abspath, os.path.relpath(abspath, ws.root).replace(os.sep, "/")

    def doc_list(self, name: Any, query: Any = "", opts: Any = None) -> list[dict[str, Any]]:
        """Documents whose title, an alias or the path contains ``query`` (case-insensitive): exact
        title or alias first, then prefixes, then the rest, each in path order."""
        ws = self._workspace(name)
        if not isinstance(query, str):
            raise invalid_params("query must be a string")
        limit = (opts or {}).get("limit", 50) if isinstance(opts, dict) else 50
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 1000:
            raise invalid_params("'limit' must be an integer from 1 to 1000")
        needle = query.strip().lower()
        with self.store.snapshot() as conn:
            rows = conn.execute(
                "SELECT path, title, aliases, line_count FROM documents WHERE ws_id = ? ORDER BY path", (ws.id,)
            ).fetchall()
        ranked = []
        for path, title, aliases_json, line_count in rows:
            aliases = json.loads(aliases_json)
            names = [title.lower(), *(a.lower() for a in aliases)]
            if needle and not any(needle in n for n in [*names, path.lower()]):
                continue
            tier = 0 if needle in names else 1 if any(n.startswith(needle) for n in names) else 2
            ranked.append((tier, path, {"path": path, "title": title, "aliases": aliases, "line_count": line_count}))
        ranked.sort(key=lambda item: item[:2])
        return [item[2] for item in ranked[:limit]]

    # -- changes.* -------------------------------------------------------------------------

    def changes_since(self, name: Any, cursor: Any = None) -> dict[str, Any]:
        ws = self._workspace(name)
        if cursor is not None and (isinstance(cursor, bool) or not isinstance(cursor, int) or cursor < 0):
            raise invalid_params("cursor must be null or the integer returned by a previous changes.since")
        start = cursor or 0
        with self.store.snapshot() as conn:
            oldest = conn.execute("SELECT MIN(seq) FROM changes WHERE ws_id = ?", (ws.id,)).fetchone()[0]
            rows = conn.execute(
                "SELECT seq, op, path, generation, at, detail FROM changes WHERE ws_id = ? AND seq > ? "
                "ORDER BY seq LIMIT ?",
                (ws.id, start, CHANGES_PAGE + 1),
            ).fetchall()
        more = len(rows) > CHANGES_PAGE
        rows = rows[:CHANGES_PAGE]
        changes = [
            {"seq": seq, "op": op, "path": path, "generation": gen, "at": at, **(_loads(detail) or {})}
            for seq, op, path, gen, at, detail in rows
        ]
        return {
            "changes": changes,
            "cursor": rows[-1][0] if rows else start,
            "more": more,
            # The log was pruned past this cursor: the client must resynchronise from scratch.
            "reset": bool(cursor) and oldest is not None and oldest > start + 1,
            "at": time.time(),
        }


def _line_option(opts: dict, key: str, default: int) -> int:
    value = opts.get(key, default)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise invalid_params(f"'{key}' must be a line number (1 or more)")
    return value


def _loads(text: str | None) -> Any:
    return json.loads(text) if text else None
