"""While a workspace's vectors fill, the documents open in the editor's buffers are embedded before the rest
(autodoc.focus sends ``embedding.focus``). Real headless Neovim, the toy TEI server holding the fill; the
verdict is the order in which the server received the sections' texts."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pynvim

from autodoc_core.service.engine import Engine
from tests.conftest import PROJECT, write
from tests.model_servers import Behaviour, RunningServer, model_server
from tests.nvim import lua_string, neovim, python_line, rtp, setup_call, wait_for

WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet", "kilo",
         "lima", "mike", "november", "oscar", "papa", "quebec", "romeo", "sierra", "tango"]

# The editor's embedding.focus requests and whether the engine answered them; the fill's state from the
# index runs' reports.
RECORD_FOCUS = """
_G.focus = {}
local rpc = require('autodoc.rpc')
local request = rpc.request
rpc.request = function(method, params, callback, ...)
  if method ~= 'embedding.focus' then
    return request(method, params, callback, ...)
  end
  local sent = { paths = params[2], answered = false }
  table.insert(_G.focus, sent)
  return request(method, params, function(err, result)
    sent.answered = err == nil
    callback(err, result)
  end, ...)
end
_G.semantic = nil
vim.api.nvim_create_autocmd('User', { pattern = 'AutodocIndexed',
  callback = function(ev) _G.semantic = ev.data.report.semantic end })
"""


def twenty_documents(kb: Path) -> None:
    for word in WORDS:
        write(kb, f"{word}.md", f"# {word.title()}\n\n## One\n\nThe {word} part one.\n\n"
                                f"## Two\n\nThe {word} part two.\n")


def embedding_batches(server: RunningServer) -> list[list[str]]:
    """The texts of each batch the server received, in order (a probe or a query has one text)."""
    return [r["body"]["inputs"] for r in list(server.behaviour.requests)
            if r["path"] == "/embed" and len(r["body"]["inputs"]) > 1]


def every_document_sent(server: RunningServer) -> bool:
    texts = " ".join(text for batch in embedding_batches(server) for text in batch).lower()
    return all(word in texts for word in WORDS)


def first_batch_with(batches: list[list[str]], word: str) -> int:
    """The position of the first batch holding a section of `word`'s document."""
    for position, batch in enumerate(batches):
        if any(word in text.lower() for text in batch):
            return position
    raise AssertionError(f"no section of {word}.md was embedded")


@contextmanager
def filling(tmp_path: Path, kb: Path, after_setup: str = "") -> Iterator[tuple[pynvim.Nvim, RunningServer]]:
    """An editor whose start-up scan indexes the twenty documents, their vectors filling through the toy TEI
    server two sections a batch (one document's): the first batch answered, the next ones held."""
    twenty_documents(kb)
    db = tmp_path / "a.db"
    with model_server("tei", Behaviour(hold_after=1)) as server:
        engine = Engine(db)
        engine.workspace_add("kb", str(kb))
        engine.workspace_configure("kb", {"embedder": {"provider": "tei", "url": server.url, "batch_size": 2,
                                                       "timeout": 120}})
        engine.close()
        init = rtp(PROJECT) + python_line() + RECORD_FOCUS + setup_call(db, kb) + "\n" + after_setup
        with neovim(tmp_path, init) as nvim:
            wait_for(lambda: nvim.exec_lua("return _G.semantic") == "partial", timeout=120,
                     what="the start-up scan's report saying the vectors fill")
            assert server.behaviour.holding.wait(timeout=60)  # alpha embedded, bravo's batch held
            yield nvim, server


def focus_answered(nvim: pynvim.Nvim, paths: list[str]) -> None:
    wait_for(lambda: nvim.exec_lua("local last = _G.focus[#_G.focus]; return last and last.answered") and
             nvim.exec_lua("return _G.focus[#_G.focus].paths") == paths,
             timeout=60, what=f"the engine's answer to embedding.focus for {paths}")


def embedded_after_release(server: RunningServer) -> list[list[str]]:
    server.behaviour.release.set()
    wait_for(lambda: every_document_sent(server), timeout=120, what="every document's sections sent")
    return embedding_batches(server)


def test_open_buffers_are_embedded_before_the_rest(tmp_path: Path, kb: Path) -> None:
    with filling(tmp_path, kb) as (nvim, server):
        for word in ("papa", "tango"):  # tango entered last: the most recent first
            nvim.command(f"edit {kb / word}.md")
        focus_answered(nvim, ["tango.md", "papa.md"])
        batches = embedded_after_release(server)
    tango, papa, charlie = (first_batch_with(batches, word) for word in ("tango", "papa", "charlie"))
    assert tango < papa < charlie, batches  # the most recent buffer first, both before document order's next


def test_a_buffer_open_before_the_fill_began_goes_first(tmp_path: Path, kb: Path) -> None:
    """Opened in init.lua, before the engine opened: the index report saying the vectors fill names it."""
    with filling(tmp_path, kb, f"vim.cmd.edit({lua_string(kb / 'tango.md')})") as (nvim, server):
        focus_answered(nvim, ["tango.md"])
        batches = embedded_after_release(server)
    assert first_batch_with(batches, "tango") < first_batch_with(batches, "charlie"), batches


def test_an_upper_case_suffix_is_markdown_too(tmp_path: Path, kb: Path) -> None:
    """`zulu.MD` is indexed (the indexer compares suffixes lower-cased), so its buffer goes first as well: the
    editor's rule is the indexer's (autodoc.markdown_file), where a case-sensitive `*.md` never saw it."""
    write(kb, "zulu.MD", "# Zulu\n\n## One\n\nThe zulu part one.\n\n## Two\n\nThe zulu part two.\n")
    with filling(tmp_path, kb) as (nvim, server):
        nvim.command(f"edit {kb / 'zulu.MD'}")
        focus_answered(nvim, ["zulu.MD"])
        batches = embedded_after_release(server)
    assert first_batch_with(batches, "zulu") < first_batch_with(batches, "charlie"), batches
