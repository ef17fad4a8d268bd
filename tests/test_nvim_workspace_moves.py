"""What the editor says about a workspace's folder: setup() moves a workspace the database holds at another folder
(and says so), a command does not, and a folder that is gone reads as gone in :AutodocStatus and :checkhealth."""

from __future__ import annotations

import contextlib
import shutil
from pathlib import Path

import pynvim
import pytest

from autodoc_core.service.engine import Engine
from tests.conftest import PROJECT, write
from tests.nvim import child_nvim, lua_string, neovim, python_line, rtp, setup_call, wait_for


def indexed_database(db: Path, root: Path) -> None:
    """A database holding `kb` at `root`, indexed, without vectors (nothing embeds in the background)."""
    with Engine(db) as engine:
        engine.workspace_add("kb", str(root))
        engine.workspace_configure("kb", {"embedder": "none"})
        engine.workspace_index("kb")


# Installed before setup(), so nothing said while the engine opens is missed: what was said, at which level.
RECORD_NOTIFY = """
_G.notified = {}
local notify = vim.notify
vim.notify = function(message, level, opts)
  table.insert(_G.notified, { message = message, level = level })
  return notify(message, level, opts)
end
_G.autodoc_indexed = 0
vim.api.nvim_create_autocmd('User', { pattern = 'AutodocIndexed', callback = function()
  _G.autodoc_indexed = _G.autodoc_indexed + 1
end })
"""


def editor(tmp_path: Path, configured: Path) -> contextlib.AbstractContextManager[pynvim.Nvim]:
    """A Neovim whose setup() names `kb` at `configured`, on the database tmp_path/autodoc.db."""
    init = rtp(PROJECT) + python_line() + RECORD_NOTIFY + setup_call(tmp_path / "autodoc.db", configured) + "\n"
    return neovim(tmp_path, init)


def messages(nvim: pynvim.Nvim) -> str:
    return nvim.exec_lua("return vim.api.nvim_exec2('messages', { output = true }).output")


def notified(nvim: pynvim.Nvim, part: str, level: str) -> list[str]:
    """What was said at `level` ('WARN', 'ERROR') that contains `part`."""
    return [entry["message"] for entry in nvim.exec_lua("return _G.notified")
            if part in entry["message"] and entry["level"] == nvim.exec_lua(f"return vim.log.levels.{level}")]


def search_paths(nvim: pynvim.Nvim, query: str) -> list[str]:
    nvim.exec_lua("""
        _G.answer = nil
        require('autodoc.rpc').request('search.query', { 'kb', ..., { stages = { 'lexical' } } },
          function(err, result) _G.answer = { err = err, result = result } end)""", query)
    answer = wait_for(lambda: nvim.exec_lua("return _G.answer"), timeout=60)
    assert not answer.get("err"), answer
    return sorted(hit["path"] for hit in answer["result"]["hits"])


def checkhealth(nvim: pynvim.Nvim) -> str:
    nvim.command("checkhealth autodoc")
    return "\n".join(nvim.current.buffer[:])


def root_in_editor(nvim: pynvim.Nvim) -> str | None:
    return nvim.exec_lua("return require('autodoc').workspaces.kb")


@pytest.fixture
def old_and_new(tmp_path: Path) -> tuple[Path, Path]:
    """Two folders with a note each on okapis; the database holds `kb` at the old one."""
    old, new = tmp_path / "old", tmp_path / "new"
    write(old, "old-note.md", "# Old\n\nThe okapi of the old folder.\n")
    write(new, "new-note.md", "# New\n\nThe okapi of the new folder.\n")
    indexed_database(tmp_path / "autodoc.db", old)
    return old.resolve(), new.resolve()


def test_setup_moves_a_workspace_the_database_holds_at_another_folder(tmp_path, old_and_new) -> None:
    """Before: workspace.add was refused, the refusal only logged, and the old folder kept being searched."""
    old, new = old_and_new
    with editor(tmp_path, new) as nvim:
        wait_for(lambda: root_in_editor(nvim) == str(new), timeout=60, what="kb at the configured folder")
        wait_for(lambda: nvim.exec_lua("return _G.autodoc_indexed") >= 1, timeout=60, what="kb indexed again")
        assert search_paths(nvim, "okapi") == ["new-note.md"]
        said = f"autodoc: workspace 'kb' moved from {old} to {new} (as setup() configures it); indexing it again"
        assert notified(nvim, said, "WARN") == [said]
        assert said in messages(nvim)
        report = checkhealth(nvim)
        assert f"OK kb ({new}): 1 document, " in report and "setup() names the folder" not in report


def test_a_command_does_not_move_a_workspace_and_says_why_on_screen(tmp_path, old_and_new) -> None:
    old, new = old_and_new
    with editor(tmp_path, old) as nvim:
        wait_for(lambda: nvim.exec_lua("return _G.autodoc_indexed") >= 1, timeout=60, what="kb indexed")
        nvim.command(f"AutodocWorkspaceAdd kb {new}")
        refusal = f"workspace 'kb' already exists with root {old}; to move it to {new}"
        wait_for(lambda: notified(nvim, refusal, "ERROR"), timeout=60, what="the refusal said as an error")
        assert refusal in messages(nvim)
        assert root_in_editor(nvim) == str(old) and search_paths(nvim, "okapi") == ["old-note.md"]


def test_checkhealth_names_the_configured_folder_the_database_does_not_use(tmp_path, old_and_new) -> None:
    """A move that cannot be done (the configured folder does not exist) is said, and so is the folder not used."""
    old, _ = old_and_new
    missing = tmp_path / "typo"
    with editor(tmp_path, missing) as nvim:
        said = f"autodoc: setup() workspace 'kb': root '{missing}' is not a folder; it stays at {old}, "
        wait_for(lambda: notified(nvim, said, "ERROR"), timeout=60, what="the failed move said as an error")
        report = checkhealth(nvim)
        assert f"ERROR kb: setup() names the folder {missing}, but the database has it at {old}" in report
        assert f"the folder {missing} does not exist: create it or correct the path in setup()" in report, report
        assert "restart Neovim" not in report, report  # a restart cannot make the folder


def test_a_configured_folder_that_does_not_exist_is_said_and_named_by_checkhealth(tmp_path: Path) -> None:
    missing = tmp_path / "typo"
    with editor(tmp_path, missing) as nvim:
        said = f"autodoc: setup() workspace 'kb': root '{missing}' is not a folder"
        wait_for(lambda: notified(nvim, said, "ERROR"), timeout=60, what="the failed add said as an error")
        report = checkhealth(nvim)
        assert f"WARNING kb: setup() names the folder {missing}, which is not a folder, but the database has no " \
               "such workspace" in report, report


def test_two_configured_names_on_one_folder_are_warned(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    write(kb, "note.md", "# Note\n\nokapi\n")
    workspaces = f"{{ {{ name = 'a', path = {lua_string(kb)} }}, {{ name = 'b', path = {lua_string(kb)} }} }}"
    init = (rtp(PROJECT) + python_line()
            + f"require('autodoc').setup({{ db = {lua_string(tmp_path / 'x.db')}, workspaces = {workspaces} }})\n")
    with neovim(tmp_path, init) as nvim:
        said = f"setup() names the folder {kb.resolve()} as the workspaces 'a' and 'b': each is indexed and searched"
        wait_for(lambda: said in messages(nvim), timeout=60, what="the warning about the shared folder")


def test_a_deleted_folder_reads_as_gone_in_status_and_checkhealth(tmp_path, old_and_new) -> None:
    """Before: `kb: 1 documents, 1 chunks, semantic off` and `OK kb (...)`, as if nothing were wrong."""
    old, _ = old_and_new
    with editor(tmp_path, old) as nvim:
        wait_for(lambda: nvim.exec_lua("return _G.autodoc_indexed") >= 1, timeout=60, what="kb indexed")
        shutil.rmtree(old)
        nvim.exec_lua("""
            _G.status = nil
            require('autodoc.rpc').request('workspace.status', { 'kb' }, function(err, result)
              _G.status = err and vim.inspect(err) or require('autodoc.status').text('kb', result)
            end)""")
        status = wait_for(lambda: nvim.exec_lua("return _G.status"), timeout=60)
        assert status.startswith(f"kb: folder {old} is gone (1 document, 1 section kept in the index"), status
        assert "semantic" not in status
        report = checkhealth(nvim)
        assert f"ERROR kb ({old}): folder {old} is gone (1 document, 1 section kept in the index" in report, report
        assert f"OK kb ({old})" not in report
        assert "restore the folder" in report and "--call workspace.remove '[\"kb\"]'" in report
        assert ":AutodocWorkspaceRemove! kb" in report


def test_a_workspace_is_removed_from_the_editor_and_a_configured_one_only_with_the_bang(tmp_path, old_and_new) -> None:
    old, _ = old_and_new
    with editor(tmp_path, old) as nvim:
        wait_for(lambda: root_in_editor(nvim) == str(old), timeout=60, what="kb open in the editor")
        nvim.command("AutodocWorkspaceRemove kb")
        wait_for(lambda: notified(nvim, "is in setup({ workspaces })", "WARN"), timeout=60,
                 what="the refusal to remove a configured workspace")
        assert root_in_editor(nvim) == str(old)
        nvim.command("AutodocWorkspaceRemove! kb")
        wait_for(lambda: root_in_editor(nvim) is None, timeout=60, what="kb gone from the editor's workspaces")
        assert any("workspace 'kb' removed from the index (its folder is untouched)" in entry["message"]
                   for entry in nvim.exec_lua("return _G.notified"))
    engine = Engine(tmp_path / "autodoc.db")
    listed = engine.workspace_list()
    engine.close()
    assert listed == [] and old.is_dir()  # the index forgot it; the folder is untouched


def test_status_counts_have_thousands_separators_and_the_singular_for_one() -> None:
    """Before: "1 files with problems"."""
    with child_nvim("--clean", "-n") as nvim:
        nvim.exec_lua("vim.opt.runtimepath:prepend(...)", str(PROJECT))
        problem = {"path": "a.md", "kind": "warning", "reason": "malformed frontmatter"}
        text = nvim.exec_lua("return require('autodoc.status').text(...)", "kb", {
            "documents": 1234, "chunks": 31110, "semantic": "ready", "problems": [problem], "folder": "ok"})
        assert text == "kb: 1,234 documents, 31,110 sections, semantic ready, 1 file with problems"
        text = nvim.exec_lua("return require('autodoc.status').text(...)", "kb", {
            "documents": 1, "chunks": 1, "semantic": "off", "problems": [problem, problem], "folder": "ok"})
        assert text == "kb: 1 document, 1 section, semantic off, 1 file with problems"  # two of one file: one
        text = nvim.exec_lua("return require('autodoc.status').text(...)", "kb", {
            "documents": 1, "chunks": 1, "semantic": "off", "problems": [problem, {**problem, "path": "b.md"}],
            "folder": "ok"})
        assert text == "kb: 1 document, 1 section, semantic off, 2 files with problems"
        embedder = {"embedded": 812, "total": 12496, "repeated_chunks": 3, "progress": {}}
        text = nvim.exec_lua("return require('autodoc.status').text(...)", "kb", {
            "documents": 648, "chunks": 12499, "semantic": "partial", "embedder": embedder, "folder": "ok"})
        assert text == ("kb: 648 documents, 12,499 sections, semantic partial · 812/12,496 embedded "
                        "(3 sections repeating another section, sharing its vector)")
