"""One progress poller per workspace (autodoc.watch): an index run while vectors fill asks for the
workspace's status once a poll_ms, not once for each. Real headless Neovim, the toy TEI server holding the
fill, and an index run held at a checkpoint."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import PROJECT, write
from tests.model_servers import Behaviour, model_server
from tests.nvim import neovim, python_line, rtp, setup_call, wait_for

POLL_MS = 100

# Each workspace.status request is recorded with its time and whether an index run was under way.
RECORD_STATUS_ASKS = """
_G.asks = {}
local rpc = require('autodoc.rpc')
local request = rpc.request
rpc.request = function(method, params, callback, lane)
  if method == 'workspace.status' then
    table.insert(_G.asks, { ms = vim.uv.hrtime() / 1e6, indexing = require('autodoc').indexing.kb ~= nil })
  end
  return request(method, params, callback, lane)
end
_G.indexed = 0
vim.api.nvim_create_autocmd('User', { pattern = 'AutodocIndexed',
  callback = function() _G.indexed = _G.indexed + 1 end })
"""


def asks_while_indexing(nvim) -> list[float]:
    return [ask["ms"] for ask in nvim.exec_lua("return _G.asks") if ask["indexing"]]


def test_an_index_run_while_vectors_fill_has_one_poller(tmp_path: Path, kb: Path) -> None:
    """Before, the fill's poll chain and the index run's ran side by side: two status requests each
    poll_ms, some of them a few milliseconds apart."""
    for i in range(7):
        write(kb, f"n{i}.md", f"# Note {i}\n\nFlour, water, salt and yeast make bread number {i}.\n")
    release = tmp_path / "release"
    # Arrival 114 falls inside the 300-file run whether or not the embedder change parses the 7 notes again.
    env = {"AUTODOC_TEST_HOLD_AT": "index.document:114", "AUTODOC_TEST_RELEASE_FILE": str(release)}
    init = rtp(PROJECT) + python_line() + RECORD_STATUS_ASKS + \
        f"require('autodoc').setup({{ poll_ms = {POLL_MS}, scan_ms = 0, " + \
        setup_call(tmp_path / "a.db", kb).removeprefix("require('autodoc').setup({ ")
    with model_server("tei", Behaviour(hold_after=1)) as server, neovim(tmp_path, init, env) as nvim:
        wait_for(lambda: nvim.exec_lua("return _G.indexed") >= 1, timeout=120)
        nvim.exec_lua("""
            local embedder = { provider = 'tei', url = ..., batch_size = 2, timeout = 120 }
            require('autodoc.rpc').request('workspace.configure', { 'kb', { embedder = embedder } },
              function() require('autodoc').index('kb') end)""", server.url)
        assert server.behaviour.holding.wait(timeout=60)  # the fill is held: its poller runs on
        wait_for(lambda: nvim.exec_lua("return _G.indexed") >= 2, timeout=120)
        for i in range(300):
            write(kb, f"more{i:03}.md", f"# More {i}\n\nbody {i}\n")
        nvim.exec_lua("require('autodoc').index('kb')")
        wait_for(lambda: len(asks_while_indexing(nvim)) >= 6, timeout=120)  # the run is held meanwhile
        release.touch()
        wait_for(lambda: nvim.exec_lua("return _G.indexed") >= 3, timeout=120)
        server.behaviour.release.set()
        asks = asks_while_indexing(nvim)
        gaps = [later - earlier for earlier, later in zip(asks, asks[1:], strict=False)]
        assert min(gaps) >= POLL_MS * 0.9, gaps
