"""Long work in Neovim is visible and controllable: a progress message updated in place while vectors
fill, require('autodoc').status() for statuslines, :AutodocEmbed pause|resume; and files changed
outside Neovim are noticed without :AutodocIndex. Real headless Neovim, the toy TEI server."""

from __future__ import annotations

import os
import signal
from pathlib import Path

from tests.conftest import PROJECT, write
from tests.model_servers import Behaviour, model_server
from tests.nvim import lua_string, neovim, python_line, rtp, setup_call, wait_for

RECORD_PROGRESS = ("_G.progress = {}\nvim.api.nvim_create_autocmd('Progress', { pattern = 'autodoc', callback = "
                   "function(ev) table.insert(_G.progress, { id = ev.data.id, text = ev.data.text, "
                   "status = ev.data.status, percent = ev.data.percent }) end })\n")


def seven_notes(kb: Path) -> Path:
    for i in range(6):
        write(kb, f"n{i}.md", f"# Note {i}\n\nFlour, water, salt and yeast make bread number {i}.\n")
    write(kb, "a.md", "# Storage\n\nWe keep the index in an embedded relational database.\n")
    return kb


def status(nvim) -> str:
    return nvim.exec_lua("return require('autodoc').status()")


def text_of(event: dict) -> str:
    return "".join(event["text"]) if isinstance(event["text"], list) else event["text"]  # chunks' texts


def progress_texts(nvim) -> list[str]:
    return [text_of(event) for event in nvim.exec_lua("return _G.progress")]


def test_embedding_progress_updates_in_place_and_pauses(tmp_path: Path, kb: Path) -> None:
    seven_notes(kb)
    init = rtp(PROJECT) + python_line() + RECORD_PROGRESS + "require('autodoc').setup({ poll_ms = 100, " + \
        setup_call(tmp_path / "a.db", kb).removeprefix("require('autodoc').setup({ ")
    with model_server("tei", Behaviour(hold_after=1)) as server, neovim(tmp_path, init) as nvim:
        wait_for(lambda: nvim.exec_lua("return require('autodoc').state.phase") == "ready")
        nvim.exec_lua("""
            local embedder = { provider = 'tei', url = ..., batch_size = 2, timeout = 120 }
            require('autodoc.rpc').request('workspace.configure', { 'kb', { embedder = embedder } },
              function() require('autodoc').index('kb') end)""", server.url)
        assert server.behaviour.holding.wait(timeout=60)  # 2 of 7 embedded, the second batch held
        wait_for(lambda: status(nvim) == "kb: 2/7 embedded")
        wait_for(lambda: any(text.startswith("kb: 2/7 embedded · ") and text.endswith(" left")
                             for text in progress_texts(nvim)))
        nvim.command("AutodocEmbed pause")
        wait_for(lambda: status(nvim) == "kb: 2/7 embedded (paused)")
        server.behaviour.release.set()
        wait_for(lambda: status(nvim) == "kb: 4/7 embedded (paused)")  # the held batch is kept, no other taken
        assert "kb: 4/7 embedded · paused" in progress_texts(nvim)
        nvim.command("AutodocEmbed resume")
        wait_for(lambda: status(nvim) == "", timeout=60)
        events = nvim.exec_lua("return _G.progress")
        embedding = [event for event in events if "embedded" in text_of(event)]
        assert text_of(embedding[-1]).startswith("kb: 7/7 embedded · ") and embedding[-1]["status"] == "success"
        assert embedding[-1]["percent"] == 100
        assert len({event["id"] for event in embedding}) == 1  # one message, updated in place
        assert "embedded" not in nvim.exec_lua("return vim.fn.execute('messages')").replace("7/7 embedded", "")


def finds(nvim, word: str, workspace: str = "kb") -> bool:
    """Ask the engine (lexical stage) for `word`; True when it has a hit."""
    nvim.exec_lua("""
        local word, workspace = ...
        _G.found = nil
        require('autodoc.rpc').request('search.query', { workspace, word, { stages = { 'lexical' } } },
          function(err, answer) _G.found = err and -1 or #answer.hits end)""", word, workspace)
    wait_for(lambda: nvim.exec_lua("return _G.found ~= nil"))
    return nvim.exec_lua("return _G.found") > 0


def started(tmp_path: Path, kb: Path, scan_ms: int) -> str:
    return rtp(PROJECT) + python_line() + f"require('autodoc').setup({{ scan_ms = {scan_ms}, " + \
        setup_call(tmp_path / "a.db", kb).removeprefix("require('autodoc').setup({ ") + "\n" + \
        "_G.indexed = 0\nvim.api.nvim_create_autocmd('User', { pattern = 'AutodocIndexed', " \
        "callback = function() _G.indexed = _G.indexed + 1 end })\n"


def test_focus_gained_notices_a_file_added_outside_neovim(tmp_path: Path, kb: Path) -> None:
    seven_notes(kb)
    with neovim(tmp_path, started(tmp_path, kb, scan_ms=0)) as nvim:  # no periodic scan: only the focus
        wait_for(lambda: nvim.exec_lua("return _G.indexed") >= 1)
        assert not finds(nvim, "zeppelin")
        write(kb, "travel/airships.md", "# Airships\n\nThe zeppelin crossed the Atlantic in 1928.\n")  # not via Neovim
        assert not finds(nvim, "zeppelin")
        nvim.command("doautocmd FocusGained")
        wait_for(lambda: finds(nvim, "zeppelin"))
        wait_for(lambda: nvim.exec_lua("return _G.indexed") >= 2)  # the scan's answer, after its commit
        messages = nvim.exec_lua("return vim.fn.execute('messages')")
        assert "kb: 8 files scanned, 1 added" in messages  # a quiet scan speaks only when files changed


def test_start_up_notices_a_file_added_while_neovim_was_closed(tmp_path: Path, kb: Path) -> None:
    """The second session's setup() finds the workspace already in the database (no workspace.add, so no
    index run of its own): the start-up scan alone must find the file written in between. Broken on
    purpose: without the scan at the end of M.start() this times out."""
    seven_notes(kb)
    with neovim(tmp_path, started(tmp_path, kb, scan_ms=0)) as nvim:
        wait_for(lambda: nvim.exec_lua("return _G.indexed") >= 1)
        assert not finds(nvim, "zeppelin")
    write(kb, "travel/airships.md", "# Airships\n\nThe zeppelin crossed the Atlantic in 1928.\n")
    with neovim(tmp_path, started(tmp_path, kb, scan_ms=0)) as nvim:  # no periodic scan, no focus event
        wait_for(lambda: nvim.exec_lua("return _G.indexed") >= 1)
        assert finds(nvim, "zeppelin")
        assert "kb: 8 files scanned, 1 added" in nvim.exec_lua("return vim.fn.execute('messages')")


def test_a_periodic_scan_notices_a_file_changed_outside_neovim(tmp_path: Path, kb: Path) -> None:
    seven_notes(kb)
    with neovim(tmp_path, started(tmp_path, kb, scan_ms=200)) as nvim:
        wait_for(lambda: nvim.exec_lua("return _G.indexed") >= 1)
        assert not finds(nvim, "sourdough") and finds(nvim, '"bread number 3"')
        write(kb, "n3.md", "# Note 3\n\nA sourdough starter replaces the yeast.\n")  # not via Neovim
        wait_for(lambda: finds(nvim, "sourdough"))
        assert not finds(nvim, '"bread number 3"')  # the old text is gone from the index


def test_a_root_not_mounted_at_start_up_keeps_its_index_and_says_so_once(tmp_path: Path, kb: Path) -> None:
    """The start-up scan of a workspace whose folder is gone (a drive not mounted) used to walk it as
    empty and delete every document. Now the run stops, one message says why, and later scans do not
    repeat it."""
    seven_notes(kb)
    with neovim(tmp_path, started(tmp_path, kb, scan_ms=0)) as nvim:
        wait_for(lambda: nvim.exec_lua("return _G.indexed") >= 1)
    kb.rename(tmp_path / "unmounted")
    database = lua_string(tmp_path / "a.db")
    init = rtp(PROJECT) + python_line() + f"require('autodoc').setup({{ scan_ms = 0, db = {database} }})\n"
    with neovim(tmp_path, init) as nvim:
        def said() -> int:
            return nvim.exec_lua("return vim.fn.execute('messages')").count("cannot list the workspace root")
        nvim.exec_lua("""local rpc = require('autodoc.rpc'); local request = rpc.request; _G.index_runs = 0
            rpc.request = function(method, ...)  -- count the index runs asked for
              if method == 'workspace.index' then _G.index_runs = _G.index_runs + 1 end
              return request(method, ...)
            end""")
        nvim.exec_lua("require('autodoc').when_ready(function() end)")
        wait_for(lambda: said() == 1)
        for runs in (2, 3):  # two more scans, one after the other, each failing the same way
            wait_for(lambda: nvim.exec_lua("return next(require('autodoc').indexing) == nil"))
            nvim.command("doautocmd FocusGained")
            wait_for(lambda runs=runs: nvim.exec_lua("return _G.index_runs") == runs)
        wait_for(lambda: nvim.exec_lua("return next(require('autodoc').indexing) == nil"))
        assert finds(nvim, "yeast") and said() == 1


def test_a_root_given_through_a_symlink_indexes_on_save(tmp_path: Path, kb: Path) -> None:
    """The engine keeps a root's real path; buffers opened through the symlink were compared against it
    unresolved, so a save indexed nothing, and every start added the workspace again (a full, loud run)."""
    seven_notes(kb)
    link = tmp_path / "notes-link"
    link.symlink_to(kb, target_is_directory=True)
    with neovim(tmp_path, started(tmp_path, link, scan_ms=0)) as nvim:
        wait_for(lambda: nvim.exec_lua("return _G.indexed") >= 1)
        nvim.command(f"edit {link / 'n2.md'}")
        nvim.current.buffer.append(["", "A levain replaces the yeast."])
        nvim.command("write")
        wait_for(lambda: finds(nvim, "levain"))
    with neovim(tmp_path, started(tmp_path, link, scan_ms=0)) as nvim:
        wait_for(lambda: nvim.exec_lua("return _G.indexed") >= 1)  # the start-up scan, quiet
        assert "files scanned" not in nvim.exec_lua("return vim.fn.execute('messages')")  # not re-added


def test_a_save_under_nested_roots_indexes_both_workspaces(tmp_path: Path, kb: Path) -> None:
    seven_notes(kb)
    write(kb, "inner/x.md", "# Inner\n\nplain words\n")
    init = rtp(PROJECT) + python_line() + "require('autodoc').setup({ scan_ms = 0, db = " + \
        f"{lua_string(tmp_path / 'a.db')}, workspaces = {{ {{ name = 'kb', path = {lua_string(kb)} }}, " + \
        f"{{ name = 'inner', path = {lua_string(kb / 'inner')} }} }} }})\n"
    with neovim(tmp_path, init) as nvim:
        wait_for(lambda: nvim.exec_lua("return require('autodoc').indexing.kb == nil and "
                                       "require('autodoc').indexing.inner == nil and "
                                       "vim.tbl_count(require('autodoc').workspaces) == 2"))
        nvim.command(f"edit {kb / 'inner' / 'x.md'}")
        nvim.current.buffer.append(["", "The zeppelin landed."])
        nvim.command("write")
        wait_for(lambda: finds(nvim, "zeppelin", "kb") and finds(nvim, "zeppelin", "inner"))


def test_a_save_during_an_index_run_waits_for_it_and_searches_still_answer(tmp_path: Path, kb: Path) -> None:
    """The start-up index of 300 files is held at its 120th document. A save meanwhile used to send its
    own index request, which took the host's second worker and waited on the run's lock, so the search
    after it waited too, until the run ended (here: never, until the release). Now index runs queue on
    the host's index thread, and the save is indexed after the run."""
    for i in range(300):
        write(kb, f"n{i:03}.md", f"# Note {i}\n\nbody {i}\n")
    release = tmp_path / "release"
    env = {"AUTODOC_TEST_HOLD_AT": "index.document:120", "AUTODOC_TEST_RELEASE_FILE": str(release)}
    with neovim(tmp_path, started(tmp_path, kb, scan_ms=0), env) as nvim:
        wait_for(lambda: nvim.exec_lua("return require('autodoc').indexing.kb ~= nil"), timeout=60)
        nvim.command(f"edit {kb / 'n007.md'}")
        nvim.current.buffer.append(["", "A narwhal swims by."])
        nvim.command("write")
        assert not finds(nvim, "narwhal")  # answered while the run is still held
        release.touch()
        wait_for(lambda: finds(nvim, "narwhal"), timeout=120)


def test_searches_answer_while_two_new_workspaces_index(tmp_path: Path, kb: Path) -> None:
    """Two new workspaces are indexed at start-up. Each run took one of the host's two workers (the second
    waiting on the first's write lock), so a search waited for both; index runs now queue on a thread of
    their own. The first run is held at its 120th document: the search must answer meanwhile."""
    other = tmp_path / "other"
    for i in range(300):
        write(kb, f"n{i:03}.md", f"# Note {i}\n\nbody {i}\n")
        write(other, f"m{i:03}.md", f"# Memo {i}\n\nmemo {i}\n")
    release = tmp_path / "release"
    env = {"AUTODOC_TEST_HOLD_AT": "index.document:120", "AUTODOC_TEST_RELEASE_FILE": str(release)}
    init = rtp(PROJECT) + python_line() + "require('autodoc').setup({ scan_ms = 0, db = " + \
        f"{lua_string(tmp_path / 'a.db')}, workspaces = {{ {{ name = 'kb', path = {lua_string(kb)} }}, " + \
        f"{{ name = 'other', path = {lua_string(other)} }} }} }})\n"
    with neovim(tmp_path, init, env) as nvim:
        wait_for(lambda: nvim.exec_lua("local a = require('autodoc') return a.indexing.kb and a.indexing.other"),
                 timeout=60)
        assert not finds(nvim, "zeppelin")  # answered while both runs are still due
        release.touch()
        wait_for(lambda: finds(nvim, "memo", "other") and finds(nvim, '"body 299"'), timeout=120)


def test_a_host_that_dies_is_noticed_and_the_next_search_starts_another(tmp_path: Path, kb: Path) -> None:
    """The Python host is killed (out of memory, a crash): Neovim used to keep notifying its dead channel,
    an error at every scan and keystroke, and requests waited for ever. Now the requests under way fail
    with why, one message says what happened, and the next search opens the engine in a new host, on
    the configured database."""
    seven_notes(kb)
    with neovim(tmp_path, started(tmp_path, kb, scan_ms=0)) as nvim:
        wait_for(lambda: nvim.exec_lua("return _G.indexed") >= 1)
        assert finds(nvim, "yeast")
        pid = nvim.exec_lua("return vim.fn.jobpid(require('autodoc.host').state.channel)")
        os.kill(pid, signal.SIGKILL)
        wait_for(lambda: nvim.exec_lua("return require('autodoc.host').state.phase") == "idle")
        assert "the Python host exited (code " in nvim.exec_lua("return vim.fn.execute('messages')")
        # A request outside the picker and the commands (a picker source, a status poll) starts the new
        # host: it must open the configured database, not the default one.
        wait_for(lambda: finds(nvim, "yeast"), timeout=120)
        nvim.command("AutodocSearch yeast")
        wait_for(lambda: (nvim.exec_lua("local s = require('autodoc.picker').state; return s and "
                                        "vim.api.nvim_buf_get_lines(s.list_buf, 0, 1, false)[1]") or "")
                 .startswith("n"), timeout=120)
        assert nvim.exec_lua("return require('autodoc').state.phase") == "ready"
        assert nvim.exec_lua("return require('autodoc.host').state.channel") not in (None, 0)


def test_indexing_progress_updates_in_place(tmp_path: Path, kb: Path) -> None:
    """The host's start-up index of 300 files is held at its 120th document (a checkpoint hold, released
    by a file): the progress message says "indexing 120/300 files" with a rate, then ends as the run's
    report, one message updated in place. Broken on purpose: without M.watch_indexing no
    "indexing 120/300" update is ever shown and this times out."""
    for i in range(300):
        write(kb, f"n{i:03}.md", f"# Note {i}\n\nbody {i}\n")
    release = tmp_path / "release"
    env = {"AUTODOC_TEST_HOLD_AT": "index.document:120", "AUTODOC_TEST_RELEASE_FILE": str(release)}
    init = rtp(PROJECT) + python_line() + RECORD_PROGRESS + "require('autodoc').setup({ poll_ms = 100, " + \
        setup_call(tmp_path / "a.db", kb).removeprefix("require('autodoc').setup({ ")
    with neovim(tmp_path, init, env) as nvim:
        wait_for(lambda: any(text.startswith("kb: indexing 120/300 files") for text in progress_texts(nvim)),
                 timeout=120)
        release.touch()
        wait_for(lambda: any("300 files scanned, 300 added" in text for text in progress_texts(nvim)), timeout=120)
        events = [e for e in nvim.exec_lua("return _G.progress") if "files" in text_of(e)]
        assert len({event["id"] for event in events}) == 1  # one message, updated in place
        assert events[-1]["status"] == "success"
