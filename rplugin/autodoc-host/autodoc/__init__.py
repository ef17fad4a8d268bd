"""The Neovim remote plugin: a thin adapter from Lua requests to the autodoc_core engine.

Only AutoDoc's own host (lua/autodoc/host.lua) loads it: it lives outside ``rplugin/python3/`` so that
``:UpdateRemotePlugins`` never hands it to Neovim's python3 host. Importing it is cheap: the engine, numpy
and the model load lazily in a worker thread. Requests are asynchronous: Lua sends (request id, method,
params, lane) and the answer comes back through ``exec_lua`` via ``nvim.async_call``. Two workers answer requests;
``workspace.index`` runs one at a time on a third, so searches never wait behind index runs.
Within a lane only the newest request runs (the greatest id: the editor numbers requests as they are made,
and one made earlier may come later): the host keeps one map from lane to its newest request's
``SearchStream``, and a newer request cancels the one it replaces. A cancelled request still queued is answered
as cancelled; ``search.stream`` (the picker's one request per query) pushes its lexical answer through
``rpc._partial`` before the final one, and stops at the next stage boundary once cancelled.
``host.state`` answers what the host has done so far, read-only (:help autodoc-host.state).
Nothing is printed: stdout is the RPC pipe. Logs go to ``stdpath('log')/autodoc.log``.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import pynvim

if TYPE_CHECKING:  # the engine loads in a worker thread, on first use
    from autodoc_core.search.stream import SearchStream
    from autodoc_core.service.engine import Engine

LOG = logging.getLogger("autodoc.nvim")
RESOLVE = "require('autodoc.rpc')._resolve(...)"
PARTIAL = "require('autodoc.rpc')._partial(...)"


@pynvim.plugin
class AutodocPlugin:
    def __init__(self, nvim: pynvim.Nvim) -> None:
        self.nvim = nvim
        self._engine = None
        self._engine_lock = threading.Lock()
        self._db: str | None = None
        self._pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="autodoc")
        # Index runs queue on their own thread: two at once (two new workspaces, a save or a scan during a
        # run) would otherwise hold both workers, one waiting on the other's lock, and searches behind them.
        self._index_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="autodoc-index")
        # Each lane's newest request: its id and the stream that carries its cancellation. Kept once it ends,
        # so that an older request arriving later is still known to be older.
        self._lanes: dict[str, tuple[int, SearchStream]] = {}
        self._latest_lock = threading.Lock()
        self._runs: Counter[str] = Counter()  # requests run, by method
        self._cancelled: Counter[str] = Counter()  # superseded searches, by the stage they stopped before
        self._partials = 0

    @pynvim.function("AutodocRequest", sync=False)
    def request(self, args: list) -> None:
        request_id, method, params = args[0], args[1], args[2] if len(args) > 2 else []
        lane = args[3] if len(args) > 3 and args[3] else None
        stream = self._stream_for(request_id)
        if lane:
            with self._latest_lock:
                newest = self._lanes.get(lane)
                stale = newest is not None and request_id < newest[0]
                if not stale:
                    self._lanes[lane] = (request_id, stream)
            if stale:  # made before the lane's newest, sent after it (it waited for the engine to open)
                self._cancel(request_id, "queued")
                return
            if newest is not None:
                newest[1].cancel()  # a search waiting for its query's embedding stops now
        if method == "plugin.setup" and params and isinstance(params[0], dict) and params[0].get("db"):
            self._db = params[0]["db"]  # now, in arrival order: a search on the other worker must not open the default
        pool = self._index_pool if method == "workspace.index" else self._pool
        pool.submit(self._run, request_id, method, params, stream)

    @pynvim.function("AutodocStoredLines", sync=True)
    def stored_lines(self, args: list) -> list[str] | None:
        """The lines the index stores of a file that is gone (a picker's preview of a hit whose folder is gone), or
        None. Neovim waits for the answer: only an engine already open is asked (opening one takes seconds)."""
        engine = self._engine
        if engine is None or len(args) < 2:
            return None
        try:
            answer = engine.doc_read(args[0], args[1])
        except Exception:  # the preview says it cannot read the file
            LOG.exception("no stored lines for %r in %r", args[1], args[0])
            return None
        return answer["text"].split("\n") if answer.get("text_source") else None

    def _stream_for(self, request_id: int) -> SearchStream:
        """The stream a request's cancellation is read from; a streamed search also hands over through it."""
        from autodoc_core.search.stream import SearchStream

        return SearchStream(on_partial=lambda answer: self._push(request_id, answer))

    def _run(self, request_id: int, method: str, params: Any, stream: SearchStream) -> None:
        if stream.cancelled:
            self._cancel(request_id, "queued")
            return
        with self._latest_lock:  # also guards the counters
            self._runs[method] += 1
        try:
            if method == "plugin.setup":
                result = self._setup(params[0] if params else {})
            elif method == "host.state":
                result = self._state()
            elif method == "search.stream":
                result = self._search(params, stream)
            else:
                from autodoc_core.surface.rpc import call

                result = call(self._get_engine(), method, params)
            self._reply(request_id, result, None)
        except Exception as exc:
            from autodoc_core.search.stream import SearchCancelled

            if isinstance(exc, SearchCancelled):
                self._cancel(request_id, exc.stage)
                return  # every failure is reported to the user
            from autodoc_core.surface.rpc import error_object

            LOG.exception("request %s %s failed", request_id, method)
            self._reply(request_id, None, error_object(exc))

    def _state(self) -> dict:
        """host.state: the requests run by method, the searches cancelled by the stage they stopped before, the
        partial answers handed over (a copy: the caller cannot change the host's counts)."""
        with self._latest_lock:
            return {"runs": dict(self._runs), "cancelled": dict(self._cancelled), "partials": self._partials}

    def _cancel(self, request_id: int, stage: str) -> None:
        with self._latest_lock:
            self._cancelled[stage] += 1
        self._reply(request_id, None, {"code": 0, "message": "cancelled",
                                       "data": {"reason": "superseded", "stage": stage}})

    def _search(self, params: Any, stream: SearchStream) -> dict:
        """search.query's answer, its lexical answer pushed first; stopped once a newer request takes the lane."""
        from autodoc_core.surface.rpc import call

        return call(self._get_engine(), "search.stream", params, stream)

    def _push(self, request_id: int, answer: dict) -> None:
        with self._latest_lock:
            self._partials += 1

        def deliver() -> None:
            try:
                self.nvim.exec_lua(PARTIAL, request_id, answer)
            except Exception:  # Neovim may be closing
                LOG.exception("could not deliver the partial answer to request %s", request_id)

        self.nvim.async_call(deliver)

    def _setup(self, options: dict) -> dict:
        """Open the engine now, in this worker thread: imports, numpy and the database."""
        log_file = options.get("log")
        if log_file and not LOG.handlers:
            handler = logging.FileHandler(log_file)
            handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
            logging.getLogger("autodoc").addHandler(handler)
            logging.getLogger("autodoc").setLevel(logging.INFO)
        if options.get("db"):
            self._db = options["db"]
        engine = self._get_engine()
        engine.start_background()
        return {"db": str(engine.store.path)}

    def _get_engine(self) -> Engine:
        with self._engine_lock:
            if self._engine is None:
                from autodoc_core.service.engine import Engine

                self._engine = Engine(self._db)
            return self._engine

    def _reply(self, request_id: int, result: Any, error: dict | None) -> None:
        def deliver() -> None:
            try:
                self.nvim.exec_lua(RESOLVE, request_id, result, error)
            except Exception:  # Neovim may be closing
                LOG.exception("could not deliver the answer to request %s", request_id)

        self.nvim.async_call(deliver)
