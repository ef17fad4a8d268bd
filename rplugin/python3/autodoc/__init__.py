"""The Neovim remote plugin: a thin adapter from Lua requests to the autodoc_core engine.

Importing this module is cheap (every Python remote plugin shares one host, which imports them all
before answering Neovim's first blocking call): the engine, numpy and the model load lazily in a
worker thread. Requests are asynchronous: Lua sends (request id, method, params, lane) and the
answer comes back through ``exec_lua`` via ``nvim.async_call``. Two workers answer requests;
``workspace.index`` runs one at a time on a third, so searches never wait behind index runs.
Within a lane only the newest request runs; older ones still queued are answered as cancelled.
Nothing is printed: stdout is the RPC pipe. Logs go to ``stdpath('log')/autodoc.log``.
"""

from __future__ import annotations

import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import pynvim

if TYPE_CHECKING:  # the engine loads in a worker thread, on first use
    from autodoc_core.service.engine import Engine

LOG = logging.getLogger("autodoc.nvim")
RESOLVE = "require('autodoc.rpc')._resolve(...)"


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
        self._latest: dict[str, int] = {}
        self._latest_lock = threading.Lock()

    @pynvim.function("AutodocRequest", sync=False)
    def request(self, args: list) -> None:
        request_id, method, params = args[0], args[1], args[2] if len(args) > 2 else []
        lane = args[3] if len(args) > 3 and args[3] else None
        if lane:
            with self._latest_lock:
                self._latest[lane] = request_id
        if method == "plugin.setup" and params and isinstance(params[0], dict) and params[0].get("db"):
            self._db = params[0]["db"]  # now, in arrival order: a search on the other worker must not open the default
        pool = self._index_pool if method == "workspace.index" else self._pool
        pool.submit(self._run, request_id, method, params, lane)

    def _superseded(self, request_id: int, lane: str | None) -> bool:
        with self._latest_lock:
            return lane is not None and self._latest.get(lane) != request_id

    def _run(self, request_id: int, method: str, params: Any, lane: str | None) -> None:
        if self._superseded(request_id, lane):
            self._reply(request_id, None, {"code": 0, "message": "cancelled", "data": {"reason": "superseded"}})
            return
        try:
            if method == "plugin.setup":
                result = self._setup(params[0] if params else {})
            else:
                from autodoc_core.surface.rpc import call

                result = call(self._get_engine(), method, params)
            self._reply(request_id, result, None)
        except Exception as exc:  # noqa: BLE001 - every failure is reported to the user
            from autodoc_core.surface.rpc import error_object

            LOG.exception("request %s %s failed", request_id, method)
            self._reply(request_id, None, error_object(exc))

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
            except Exception:  # noqa: BLE001 - Neovim may be closing
                LOG.exception("could not deliver the answer to request %s", request_id)

        self.nvim.async_call(deliver)
