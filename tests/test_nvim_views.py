"""One test table for the five views of a search session (the built-in picker, telescope, mini.pick, snacks,
fzf-lua; the pickers are the pinned copies in ../shared/nvim-plugins): each view is driven by its keys and
read from the screen, and each must behave the same, since the session (autodoc.session) owns the search."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import write
from tests.nvim import lua_string, neovim, outstanding, requests_sent, wait_for
from tests.nvim.pickers import RECORD_RESULTS, VIEWS, open_view, picker_state, screen, shows, view_init, wait_indexed

ROW = re.compile(r":\d+-\d+  .*  \d\.\d\d  \[([a-z+]+|[A-Z+]+)\]")  # span, breadcrumb, relevance, stages


def two_workspaces(tmp_path: Path) -> str:
    kb, other = tmp_path / "kb", tmp_path / "other"
    write(kb, "notes/cooking.md", "# Cooking\n\n## Bread\n\nFlour, water, salt and yeast make bread.\n")
    write(kb, "notes/yeast.md", "# Yeast\n\n## Proofing\n\nYeast proofs in warm water.\n")
    write(other, "bakery/loaves.md", "# Loaves\n\n## Sourdough bread\n\nA sourdough bread rises slowly.\n")
    workspaces = f"{{ {{ name = 'kb', path = {lua_string(kb)} }}, {{ name = 'other', path = {lua_string(other)} }} }}"
    return f"require('autodoc').setup({{ db = {lua_string(tmp_path / 'a.db')}, workspaces = {workspaces} }})"


def semantic_state(nvim, workspace: str) -> str | None:
    """The workspace's semantic state as workspace.status says it (None until it answers)."""
    nvim.exec_lua("""_G.semantic_of = nil
        require('autodoc.rpc').request('workspace.status', { ... }, function(err, result)
          _G.semantic_of = err and 'error' or result.semantic
        end)""", workspace)
    return wait_for(lambda: nvim.exec_lua("return _G.semantic_of"), timeout=60)


def clear_prompt(nvim) -> None:
    """Empty the prompt the same way in every view (<C-u> scrolls telescope's preview)."""
    nvim.input("<BS>" * len(picker_state(nvim)["prompt"]))


def indexed_both(nvim) -> None:
    wait_for(lambda: nvim.exec_lua("return _G.indexed") >= 2)


@pytest.mark.parametrize("view", VIEWS)
def test_every_workspace_then_each_then_the_prompt_s(tmp_path: Path, view: str) -> None:
    """Issue 49: the picker searches every workspace by default, each row labelled with its workspace; <M-w> goes
    round every workspace, then each; `@a @b` names two (it searched a for `@b ...`), and a name that is no
    workspace is said with those there are."""
    with neovim(tmp_path, view_init(tmp_path, view, two_workspaces(tmp_path))) as nvim:
        indexed_both(nvim)
        open_view(nvim, view)
        nvim.input("bread")
        rows = wait_for(lambda: shows(nvim, "AutoDoc · all: kb, other")
                        and shows(nvim, "kb    notes/cooking.md:3-5", "other bakery/loaves.md:3-5"))
        assert all(ROW.search(row) for row in rows), rows  # span, relevance and stages beside the label
        assert picker_state(nvim)["scope"] == ["kb", "other"] and picker_state(nvim).get("workspace") is None
        nvim.input("<M-w>")  # each workspace, by name: one workspace's rows have no label
        wait_for(lambda: shows(nvim, "AutoDoc · kb") and not shows(nvim, "bakery/loaves.md:")
                 and (row := shows(nvim, "notes/cooking.md:3-5")) and "kb    notes" not in row[0])
        assert picker_state(nvim)["workspace"] == "kb"
        nvim.input("<M-w>")
        wait_for(lambda: shows(nvim, "bakery/loaves.md:3-5", "AutoDoc · other") and not shows(nvim, "cooking.md:"))
        nvim.input("<M-w>")  # and round to every workspace again
        wait_for(lambda: shows(nvim, "AutoDoc · all: kb, other", "kb    notes/cooking.md:3-5"))
        clear_prompt(nvim)
        nvim.input("@other @kb bread")  # the prompt names two workspaces
        wait_for(lambda: shows(nvim, "AutoDoc · other + kb", "kb    notes/cooking.md:3-5",
                               "other bakery/loaves.md:3-5"))
        assert picker_state(nvim)["query"] == "bread"
        nvim.input("<M-w>")  # refused while the prompt names them: said on screen
        assert wait_for(lambda: shows(nvim, "the prompt names its workspace"))
        clear_prompt(nvim)
        nvim.input("@kb @nope bread")
        assert wait_for(lambda: shows(nvim, "no workspace 'nope' (there are @kb @other; @* is every one)"))


def test_m_w_refused_for_a_prompt_s_workspace_is_said_whole_at_80_columns(tmp_path: Path) -> None:
    """The walk: `autodoc: the prompt names …kspace (@name): edit it to search another`, cut in its middle."""
    with neovim(tmp_path, view_init(tmp_path, "builtin", two_workspaces(tmp_path), columns=80)) as nvim:
        indexed_both(nvim)
        open_view(nvim, "builtin")
        nvim.input("@kb bread")
        wait_for(lambda: shows(nvim, "AutoDoc · kb", "notes/cooking.md:3-5"))
        nvim.input("<M-w>")
        said = wait_for(lambda: picker_state(nvim)["notice"])
        assert wait_for(lambda: shows(nvim, said)), (said, screen(nvim))


@pytest.mark.parametrize("view", VIEWS)
def test_a_hit_of_another_workspace_previews_and_opens_its_own_file(tmp_path: Path, view: str) -> None:
    """A search of every workspace: the hit's file is its workspace's root joined with its path, not the first
    workspace's."""
    with neovim(tmp_path, view_init(tmp_path, view, two_workspaces(tmp_path))) as nvim:
        indexed_both(nvim)
        open_view(nvim, view)
        nvim.input("sourdough")
        wait_for(lambda: shows(nvim, "other bakery/loaves.md:3-5") or shows(nvim, "bakery/loaves.md:3-5"))
        assert picker_state(nvim)["scope"] == ["kb", "other"]
        if view in ("builtin", "telescope", "snacks"):  # the views whose preview shows from the start
            assert wait_for(lambda: shows(nvim, "A sourdough bread rises slowly."))
        nvim.input("<CR>")
        wait_for(lambda: nvim.exec_lua("return vim.api.nvim_buf_get_name(0)") == str(
            (tmp_path / "other" / "bakery" / "loaves.md").resolve()))
        assert nvim.current.window.cursor[0] == 3


@pytest.mark.parametrize("view", VIEWS)
def test_the_command_takes_workspaces_and_a_query(tmp_path: Path, view: str) -> None:
    """`:AutodocPick {source} @other @kb bread` searches both for bread, as `:AutodocSearch @other @kb bread` does
    (`@kb @rfcs crash` searched rfcs alone from the command line)."""
    with neovim(tmp_path, view_init(tmp_path, view, two_workspaces(tmp_path))) as nvim:
        indexed_both(nvim)
        command = "AutodocSearch" if view == "builtin" else f"AutodocPick {view}"
        nvim.input(f":{command} @other @kb bread<CR>")
        wait_for(lambda: shows(nvim, "other bakery/loaves.md:3-5", "kb    notes/cooking.md:3-5",
                               "AutoDoc · other + kb"))
        state = picker_state(nvim)
        assert (state["scope"], state["query"]) == (["other", "kb"], "bread"), state


@pytest.mark.parametrize("view", VIEWS)
def test_stage_toggles_show_their_state_and_a_refused_key_says_why(tmp_path: Path, notes: Path, view: str) -> None:
    setup = f"require('autodoc').setup({{ db = {lua_string(tmp_path / 'a.db')}, workspaces = {{ {{ name = 'kb', " \
            f"path = {lua_string(notes)} }} }} }})"
    with neovim(tmp_path, view_init(tmp_path, view, setup)) as nvim:
        wait_indexed(nvim)
        open_view(nvim, view)
        nvim.input("bread")
        wait_for(lambda: shows(nvim, "notes/cooking.md:3-5", "[x] Lexical"))
        nvim.input("<M-l>")  # Lexical off: Semantic alone finds the hits
        wait_for(lambda: shows(nvim, "[ ] Lexical"))
        assert picker_state(nvim)["stages"]["lexical"] is False
        nvim.input("<M-l>")
        wait_for(lambda: shows(nvim, "[x] Lexical") and picker_state(nvim)["stages"]["lexical"])
        wait_for(lambda: picker_state(nvim)["available"].get("rerank") is False)  # no ranker configured
        nvim.input("<M-r>")
        assert wait_for(lambda: shows(nvim, "no ranker is configured: Rerank stays off"))


LONG_HEADING = ("# Operations handbook for the storage cluster, its many replicas, their backups, the people on call "
                "and the dashboards they watch through the night\n\n"
                "## Recovering a lost lease after a crash of the primary while replicas keep serving reads\n\n"
                "The lease recovery lock is taken again after a crash, once the lease expires.\n")


@pytest.mark.parametrize("columns", [80, 200])
@pytest.mark.parametrize("view", VIEWS)
def test_rows_fit_the_width_and_keep_span_relevance_and_stages(
        tmp_path: Path, kb: Path, view: str, columns: int) -> None:
    write(kb, "ops/lease.md", LONG_HEADING)
    write(kb, "adr/0001.md", "---\ntype: adr\nstatus: superseded\nsuperseded_by: adr/0002.md\n---\n"
                             "# ADR 1 Storage engine\n\nUse JSON files for the storage engine.\n")
    write(kb, "adr/0002.md", "---\ntype: adr\nstatus: accepted\n---\n# ADR 2 Storage engine\n\n"
                             "Use SQLite for the storage engine.\n")
    setup = f"require('autodoc').setup({{ db = {lua_string(tmp_path / 'a.db')}, workspaces = {{ {{ name = 'kb', " \
            f"path = {lua_string(kb)} }} }} }})"
    with neovim(tmp_path, view_init(tmp_path, view, setup, columns=columns)) as nvim:
        wait_indexed(nvim)
        open_view(nvim, view)
        nvim.input("lease recovery lock")
        row = wait_for(lambda: [line for line in screen(nvim) if "ops/lease.md:3-5" in line])[0]
        assert ROW.search(row), row  # the span, the relevance and the stages all show
        assert row.rstrip().endswith("]"), row  # nothing cut at the right edge
        assert re.search(r"…[^…]*reads  \d", row), row  # the breadcrumb lost its middle, kept its end
        clear_prompt(nvim)
        nvim.input("JSON storage engine files")  # the engine demotes the superseded ADR below its successor
        old = wait_for(lambda: [line for line in screen(nvim) if "adr/0001.md:" in line])[0]
        assert re.search(r":\d+-\d+  (.*  )?\d\.\d\d  \[([a-z+]+|[A-Z+]+)\]  \(superseded\)$", old.rstrip()), old


@pytest.mark.parametrize("view", VIEWS)
def test_related_mode_lists_the_related_sections_asked_afresh(tmp_path: Path, view: str) -> None:
    kb = tmp_path / "kb"
    write(kb, "adr/0002.md", "# ADR 0002 Keep the index in SQLite\n\n## Decision\n\nWe keep every workspace in one "
                             "embedded gecko relational store.\n")
    write(kb, "design/storage.md", "# Storage design\n\n## Store\n\nThe gecko store follows "
                                   "[the ADR](../adr/0002.md): one relational store.\n")
    setup = f"require('autodoc').setup({{ db = {lua_string(tmp_path / 'a.db')}, workspaces = {{ {{ name = 'kb', " \
            f"path = {lua_string(kb)} }} }} }})"
    with neovim(tmp_path, view_init(tmp_path, view, setup)) as nvim:
        wait_indexed(nvim)
        nvim.command(f"edit {kb / 'design/storage.md'}")
        nvim.current.window.cursor = (5, 0)
        open_view(nvim, view, related=True)
        wait_for(lambda: shows(nvim, "adr/0002.md:3-5", "AutoDoc related · kb"))
        asked = requests_sent(nvim)["search.related"]
        nvim.input("<M-l>")  # another stage set: asked again, never a kept answer
        wait_for(lambda: requests_sent(nvim)["search.related"] > asked and shows(nvim, "[ ] Lexical"))
        nvim.input("<M-l>")
        wait_for(lambda: requests_sent(nvim)["search.related"] > asked + 1 and shows(nvim, "[x] Lexical"))
        assert shows(nvim, "adr/0002.md:3-5")


@pytest.mark.parametrize("view", VIEWS)
def test_an_answer_to_an_older_prompt_is_never_drawn(tmp_path: Path, notes: Path, view: str) -> None:
    """The full search for "bread" is held at the model server while "yeast" is typed and answered; once it is
    released and every request has answered, no list for "bread" was drawn after the first for "yeast"."""
    from tests.model_servers import Behaviour, model_server
    from tests.nvim import embed_with_held_server

    setup = f"require('autodoc').setup({{ db = {lua_string(tmp_path / 'a.db')}, workspaces = {{ {{ name = 'kb', " \
            f"path = {lua_string(notes)} }} }} }})"
    with neovim(tmp_path, view_init(tmp_path, view, setup) + RECORD_RESULTS) as nvim, \
            model_server("tei", Behaviour(hold_texts={"bread"})) as server:
        wait_indexed(nvim)
        embed_with_held_server(nvim, server)
        open_view(nvim, view)
        nvim.input("bread")
        assert server.behaviour.holding.wait(timeout=60)
        wait_for(lambda: shows(nvim, "notes/cooking.md:3-5  Cooking › Bread"))  # its lexical list
        clear_prompt(nvim)
        nvim.input("yeast")
        wait_for(lambda: ["yeast", "final"] in nvim.exec_lua("return _G.results"), timeout=60)
        server.behaviour.release.set()
        wait_for(lambda: outstanding(nvim) == 0, timeout=60)
        drawn = nvim.exec_lua("return _G.results")
        after = drawn[drawn.index(["yeast", "final"]):]
        assert all(prompt == "yeast" for prompt, _ in after), drawn
        assert picker_state(nvim)["prompt"] == "yeast"


@pytest.mark.parametrize("view", VIEWS)
def test_semantic_stays_on_while_one_workspace_of_several_has_no_model(tmp_path: Path, view: str) -> None:
    """Every workspace is searched by default: one indexed by words alone (no embedding model) made the merged
    answer's semantic state "off", the session took that for "no workspace can", and the next keystroke dropped
    the semantic stage for all of them (<M-s> was refused: "no embedding model")."""
    from autodoc_core.service.engine import Engine

    setup = two_workspaces(tmp_path)
    with Engine(tmp_path / "a.db") as engine:  # as a user who turned the model off for one workspace
        engine.workspace_add("other", str(tmp_path / "other"))
        engine.workspace_configure("other", {"embedder": {"provider": "none"}})
    with neovim(tmp_path, view_init(tmp_path, view, setup)) as nvim:
        indexed_both(nvim)
        wait_for(lambda: semantic_state(nvim, "kb") == "ready", timeout=120, what="kb's vectors")
        open_view(nvim, view)
        nvim.input("bread")
        wait_for(lambda: (picker_state(nvim) or {}).get("level") == "final" and shows(nvim, "notes/cooking.md"),
                 timeout=60)
        nvim.input("s")
        wait_for(lambda: picker_state(nvim)["prompt"] == "breads" and picker_state(nvim)["level"] == "final",
                 timeout=60)
        state = picker_state(nvim)
        assert state["available"].get("semantic") is not False and "semantic" in state["requested"], state
        assert "semantic" in state["performed"], state


@pytest.mark.parametrize("view", VIEWS)
def test_a_query_of_punctuation_only_says_it_has_no_words(tmp_path: Path, notes: Path, view: str) -> None:
    setup = f"require('autodoc').setup({{ db = {lua_string(tmp_path / 'a.db')}, workspaces = {{ {{ name = 'kb', " \
            f"path = {lua_string(notes)} }} }} }})"
    with neovim(tmp_path, view_init(tmp_path, view, setup)) as nvim:
        wait_indexed(nvim)
        open_view(nvim, view)
        nvim.input("!!!???")
        assert wait_for(lambda: shows(nvim, "the query has no words to search for"))
        nvim.input("<M-s>")  # with or without Semantic asked
        wait_for(lambda: picker_state(nvim)["stages"]["semantic"] is False or shows(nvim, "Semantic stays off"))
        assert wait_for(lambda: shows(nvim, "the query has no words to search for"))


@pytest.mark.parametrize("view", VIEWS)
def test_a_workspace_whose_folder_is_gone_says_so_in_the_title(tmp_path: Path, view: str) -> None:
    import shutil

    setup = two_workspaces(tmp_path)
    with neovim(tmp_path, view_init(tmp_path, view, setup)) as nvim:
        indexed_both(nvim)
        shutil.rmtree(tmp_path / "other")
        open_view(nvim, view)
        nvim.input("bread")  # every workspace: the one whose folder is gone is named, its hits still listed
        problem = wait_for(lambda: picker_state(nvim).get("root_problem"))
        assert problem.startswith("other: folder gone · ") and problem.endswith("still searched"), problem
        wait_for(lambda: shows(nvim, "kb    notes/cooking.md:3-5", "other bakery/loaves.md:3-5",
                               "AutoDoc · all: kb, other · other: fo"))
        nvim.input("<M-w>")
        wait_for(lambda: shows(nvim, "notes/cooking.md:3-5", "AutoDoc · kb"))
        assert picker_state(nvim).get("root_problem") is None
        nvim.input("<M-w>")
        problem = wait_for(lambda: picker_state(nvim).get("root_problem"))
        assert problem.startswith("folder gone · ") and problem.endswith("still searched"), problem  # fits a title
        assert wait_for(lambda: shows(nvim, f"AutoDoc · other · {problem[:10]}"))  # a narrow title cuts the rest


def test_a_folder_gone_while_the_picker_is_open_is_said_by_the_list(tmp_path: Path) -> None:
    """The walk: a workspace's folder moved away while the picker was open, and a search of every workspace said
    nothing of it (the title's folder check is made when the scope is chosen); its hits opened nothing. The
    answer of several workspaces names it with the query's problems, and the list's title says it."""
    import shutil

    with neovim(tmp_path, view_init(tmp_path, "builtin", two_workspaces(tmp_path))) as nvim:
        indexed_both(nvim)
        open_view(nvim, "builtin")
        nvim.input("bread")
        wait_for(lambda: shows(nvim, "other bakery/loaves.md:3-5"))
        shutil.rmtree(tmp_path / "other")
        nvim.input(" loaves")
        assert wait_for(lambda: shows(nvim, "other: folder gone, its hits come from its index"))
        assert picker_state(nvim).get("root_problem") is None  # the title's own check came before
        # its hit's preview is the index's copy of the file, at its lines (it said "cannot read ...")
        preview = "return vim.api.nvim_buf_get_lines(require('autodoc.picker').state.preview_buf, 0, -1, false)"
        wait_for(lambda: picker_state(nvim)["hits"][0]["path"] == "bakery/loaves.md")
        lines = wait_for(lambda: (got := nvim.exec_lua(preview)) and "A sourdough bread rises slowly." in got and got)
        assert lines[4] == "A sourdough bread rises slowly.", lines


@pytest.mark.parametrize("view", VIEWS)
def test_pick_hands_the_chosen_hits_to_on_choose(tmp_path: Path, notes: Path, view: str) -> None:
    """require('autodoc').pick({ view, on_choose }): the public way for another plugin (a chat's slash command)
    to let the user choose hits; the chosen hit comes back in place of a jump."""
    from tests.nvim.pickers import VIEW_READY

    setup = f"require('autodoc').setup({{ db = {lua_string(tmp_path / 'a.db')}, workspaces = {{ {{ name = 'kb', " \
            f"path = {lua_string(notes)} }} }} }})"
    with neovim(tmp_path, view_init(tmp_path, view, setup)) as nvim:
        wait_indexed(nvim)
        before = nvim.exec_lua("return vim.api.nvim_buf_get_name(0)")
        nvim.input(f":lua require('autodoc').pick({{ view = '{view}', on_choose = function(hits, s) "
                   "_G.chosen = vim.tbl_map(function(h) return s.root .. '/' .. h.path .. ':' .. h.line_start end, "
                   "hits) end })<CR>")
        wait_for(lambda: nvim.exec_lua(VIEW_READY[view]))
        nvim.input("bread")
        wait_for(lambda: shows(nvim, "notes/cooking.md:3-5") and picker_state(nvim)["level"] == "final")
        nvim.input("<CR>")
        chosen = wait_for(lambda: nvim.exec_lua("return _G.chosen"))
        assert chosen == [f"{notes}/notes/cooking.md:3"]
        assert nvim.exec_lua("return vim.api.nvim_buf_get_name(0)") == before  # no jump


@pytest.mark.parametrize("view", VIEWS)
def test_an_open_list_is_asked_again_when_the_index_changes(tmp_path: Path, notes: Path, view: str) -> None:
    """A file saved while a view is open (or the first index landing after the view opened) shows up in the
    open list without a keystroke, in every view: the session asks its prompt again on AutodocIndexed."""
    setup = f"require('autodoc').setup({{ db = {lua_string(tmp_path / 'a.db')}, workspaces = {{ {{ name = 'kb', " \
            f"path = {lua_string(notes)} }} }} }})"
    with neovim(tmp_path, view_init(tmp_path, view, setup)) as nvim:
        wait_indexed(nvim)
        open_view(nvim, view)
        nvim.input("sourdough")
        wait_for(lambda: picker_state(nvim).get("prompt") == "sourdough" and picker_state(nvim)["level"] == "final")
        assert not shows(nvim, "notes/starter.md")
        asked = picker_state(nvim)["tick"]
        write(notes, "notes/starter.md", "# Starter\n\n## Feeding\n\nA sourdough starter eats flour daily.\n")
        nvim.exec_lua("require('autodoc').index('kb')")
        wait_for(lambda: shows(nvim, "notes/starter.md:3-5"), what="the new file's section in the open list")
        assert picker_state(nvim)["tick"] > asked  # asked again, not typed again
