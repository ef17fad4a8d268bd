"""End to end: Neovim in a real terminal (tmux, through tests/nvim/terminal.py), real keystrokes including Alt
keys, and the screen read back with capture-pane, as a person would see it."""

from __future__ import annotations

import contextlib
import re
import shutil
import sys
from pathlib import Path

import pytest

from tests.conftest import PROJECT, write
from tests.nvim import wait_for
from tests.nvim.pickers import OPEN, with_plugins
from tests.nvim.terminal import Terminal, terminal

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


def test_a_person_searches_toggles_and_jumps(tmp_path: Path, kb: Path) -> None:
    write(kb, "adr/0002.md", "# ADR 0002 Keep the index in SQLite\n\n## Decision\n\n"
                             "We keep every workspace in one embedded relational store.\n")
    write(kb, "notes/cooking.md", "# Cooking\n\n## Bread\n\nFlour, water, salt and yeast make bread.\n")
    env = {
        "AUTODOC_ROOT": str(PROJECT), "AUTODOC_PYTHON": sys.executable, "AUTODOC_TEST_KB": str(kb),
        "AUTODOC_DB": str(tmp_path / "autodoc.db"), "XDG_STATE_HOME": str(tmp_path / "state"),
        "XDG_DATA_HOME": str(tmp_path / "data"), "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "TERM": "xterm-256color",
    }
    with terminal(PROJECT / "tests" / "nvim" / "setup_first_init.lua", env, 140, 40) as term:
        term.wait_for_screen("~")  # Neovim draws its empty buffer: it reads keys from here on
        term.keys("\\/")  # the user's mapping: <leader>/
        term.wait_for_screen("AutoDoc · kb")
        term.keys("relational store", literal=True)
        shown = term.wait_for_screen("adr/0002.md:3-5")
        assert "[x] Lexical" in shown and "› Decision  " in shown  # 140 columns: the breadcrumb cut in the middle
        # The vectors are in: Semantic alone finds the hit. Before they were, the Semantic-only search failed
        # ("no document is fully embedded yet") and left the list empty; the checkbox used to be redrawn at the
        # toggle, before the next answer, so an Enter typed on "[x] Lexical" met that empty list and did nothing.
        term.wait_for_screen("[lexical+semantic]")
        term.keys("M-s")  # Alt-s: semantic off
        term.wait_for_screen("[ ] Semantic", "[lexical]")
        term.keys("M-s")
        term.wait_for_screen("[x] Semantic", "[lexical+semantic]")
        term.keys("M-l")  # Alt-l: lexical off, semantic alone finds it
        term.wait_for_screen("[ ] Lexical", "adr/0002.md:3-5", "[semantic]")
        term.keys("M-l")
        term.wait_for_screen("[x] Lexical", "adr/0002.md:3-5", "[lexical")  # the list of this stage set
        term.keys("Enter")  # once: the list holds the hit
        shown = term.wait_for_screen("kb/adr/0002.md")  # its name in the status line
        assert "We keep every workspace in one embedded relational store." in shown
        assert "3,1" in shown  # the cursor on the hit's first line
        assert "AutoDoc · kb" not in shown  # the picker closed


def cells(line: str) -> list[tuple[str, tuple]]:
    """A line of `capture-pane -e` as (character, attributes) cells: the SGR state each character is drawn in."""
    cells_out, state, index = [], {}, 0
    while index < len(line):
        if line.startswith("\x1b[", index):
            end = line.index("m", index)
            codes = [int(code) if code else 0 for code in line[index + 2:end].split(";")]
            while codes:
                code = codes.pop(0)
                if code == 0:
                    state = {}
                elif code in (38, 48):  # 38;5;n or 38;2;r;g;b
                    size = 1 if codes[0] == 5 else 3
                    state["fg" if code == 38 else "bg"] = tuple(codes[:size + 1])
                    del codes[:size + 1]
                elif 30 <= code <= 37 or 90 <= code <= 97:
                    state["fg"] = code
                elif 40 <= code <= 47 or 100 <= code <= 107:
                    state["bg"] = code
                elif code in (39, 49):
                    state.pop("fg" if code == 39 else "bg", None)
                elif code in (22, 23, 24, 25, 27, 28, 29):
                    state.pop(code - 20, None)
                else:
                    state[code] = True  # 1 bold, 3 italic, 4 underline, 7 reverse, ...
            index = end + 1
        else:
            cells_out.append((line[index], tuple(sorted(state.items(), key=str))))
            index += 1
    return cells_out


def coloured_screen(term: Terminal) -> str:
    return term.tmux("capture-pane", "-e", "-p", "-t", term.name)


def look_of(term: Terminal, text: str) -> set[tuple]:
    """The attributes the characters of `text` are drawn in, on the screen row that shows it."""
    for line in coloured_screen(term).splitlines():
        drawn = cells(line)
        plain = "".join(char for char, _ in drawn)
        if text in plain:
            start = plain.index(text)
            return {attrs for _, attrs in drawn[start:start + len(text)]}
    raise AssertionError(f"{text!r} is not on the screen:\n{term.screen()}")


def two_notes(kb: Path) -> None:
    """Two notes that both answer 'relational store', one with a long breadcrumb."""
    write(kb, "adr/0002.md", "# ADR 0002 Keep the index in SQLite\n\n## Decision\n\n"
                             "### Why one embedded file beats a database server for a plugin in every editor\n\n"
                             "We keep every workspace in one embedded relational store.\n")
    write(kb, "notes/cooking.md", "# Cooking\n\n## Bread\n\nFlour, water, salt and yeast make a relational bread.\n")


def start_editor(tmp_path: Path, kb: Path, columns: int, termguicolors: bool, init_lua: str = "",
                 rfcs: Path | None = None) -> contextlib.AbstractContextManager[Terminal]:
    """A new user's Neovim (tests/nvim/setup_first_init.lua, then `init_lua`) in a terminal of its own;
    `rfcs`: a second workspace."""
    init = tmp_path / "init.lua"
    init.write_text(f"vim.o.termguicolors = {str(termguicolors).lower()}\n"
                    f"dofile({str(PROJECT / 'tests' / 'nvim' / 'setup_first_init.lua')!r})\n" + init_lua)
    env = {
        "AUTODOC_ROOT": str(PROJECT), "AUTODOC_PYTHON": sys.executable, "AUTODOC_TEST_KB": str(kb),
        "AUTODOC_DB": str(tmp_path / "autodoc.db"), "XDG_STATE_HOME": str(tmp_path / "state"),
        "XDG_DATA_HOME": str(tmp_path / "data"), "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "TERM": "xterm-256color", **({"AUTODOC_TEST_RFCS": str(rfcs)} if rfcs else {}),
    }
    return terminal(init, env, columns, 40)


def selection_moves(term: Terminal, rows: list[str], down: str, top_selected: bool = True) -> None:
    """The two rows look different (one is selected), and after `down` they trade looks: the selection moved.
    `top_selected`: the upper row is the selected one (a list growing upwards, telescope's, starts at the
    bottom)."""
    first, second = ("adr/0002.md", "notes/cookin") if "adr/" in rows[0] else ("notes/cookin", "adr/0002.md")
    top, bottom = look_of(term, first), look_of(term, second)
    assert top != bottom, (top, bottom)  # the selected row looks different
    if top_selected:
        assert top != {()}, top
    term.keys(down)
    wait_for(lambda: look_of(term, second) == top, what="the selection on the other row")
    assert look_of(term, first) == bottom  # the selection moved


@pytest.mark.parametrize(("columns", "termguicolors"), [(80, False), (200, True)])
def test_the_selection_shows_and_rows_keep_their_span_relevance_and_stages(
        tmp_path: Path, kb: Path, columns: int, termguicolors: bool) -> None:
    """With 'notermguicolors' (Apple's Terminal, tmux without RGB) the selection linked to CursorLine, which has
    gui colours only: no row looked selected. At 200 columns rows were cut at the list's 90 cells, losing the
    relevance and the stages; a refused toggle said nothing on screen."""
    two_notes(kb)
    with start_editor(tmp_path, kb, columns, termguicolors) as term:
        term.wait_for_screen("~")
        term.keys("\\/")
        term.wait_for_screen("AutoDoc · kb")
        term.keys("relational store", literal=True)
        shown = term.wait_for_screen("[lexical+semantic]")  # the full answer, both notes embedded
        rows = [line for line in shown.splitlines() if "adr/0002.md:" in line or "notes/cooking.md:" in line]
        assert len(rows) == 2, shown
        for row in rows:  # every row keeps its span, relevance and stages, in 80 columns and in 200
            assert re.search(r"\.md:\d+-\d+ .*\d\.\d\d  \[(lexical\+)?semantic\]", row), row
        selection_moves(term, rows, "Down")
        term.keys("M-s")  # semantic off, then lexical off: refused, and said on screen
        term.wait_for_screen("[ ] Semantic")
        term.keys("M-l")
        term.wait_for_screen("keep Lexical or Semantic on")
        term.keys("s", literal=True)  # the next keystroke clears it
        wait_for(lambda: "relational stores" in (now := term.screen()) and "keep Lexical or Semantic" not in now,
                 what="the prompt 'relational stores' without the refusal")


def test_at_200_columns_the_list_takes_the_room_an_80_column_preview_leaves(tmp_path: Path, kb: Path) -> None:
    """Issue 51 (walk): at 200 columns the list was half the picker, 90 cells, and cut a breadcrumb the screen
    had room for. The preview keeps 80 cells, a comfortable read, and the list takes the rest: the breadcrumb
    whole, beside the span, relevance and stages."""
    crumb = "Runbook › After a crash › Taking the lease back"  # 47 cells: whole in 98, cut in 90
    write(kb, "notes/runbook.md", "# Runbook\n\n## After a crash\n\n### Taking the lease back\n\n"
                                  "Flush the journal, then restart the writer.\n")
    with start_editor(tmp_path, kb, 200, True) as term:
        term.wait_for_screen("~")
        term.keys("\\/")
        term.wait_for_screen("AutoDoc · kb")
        term.keys("flush journal", literal=True)
        shown = term.wait_for_screen("notes/runbook.md:", "[lexical+semantic]")  # the full answer
        assert re.search(rf"notes/runbook\.md:\d+-\d+  {re.escape(crumb)}  \d\.\d\d  \[lexical\+semantic\]",
                         shown), shown
        widths = term.nvim.exec_lua("local s = require('autodoc.picker').state; "
                                    "return { vim.api.nvim_win_get_width(s.list_win), "
                                    "vim.api.nvim_win_get_width(s.preview_win) }")
        assert widths == [98, 80], widths


@pytest.mark.parametrize("source", ["telescope", "mini_pick", "snacks", "fzf_lua"])
def test_each_picker_source_shows_its_selection_without_termguicolors(tmp_path: Path, kb: Path, source: str) -> None:
    """mini.pick drew its current row in MiniPickMatchCurrent, a link to CursorLine (gui colours only): at 80
    columns without 'termguicolors' no row looked selected."""
    two_notes(kb)
    *plugins, setup = OPEN[source]
    with start_editor(tmp_path, kb, 80, False, with_plugins(*plugins) + setup) as term:
        # Indexed and embedded before the picker opens: mini.pick holds the editor in its own key loop.
        wait_for(lambda: re.search(r"kb: (\d+)/\1 embedded", term.screen()), timeout=120,
                 what="kb's fill finished, said on the screen")
        view = source.replace("_", "-").replace("mini-", "mini.")
        term.keys(f":AutodocPick {view} relational store", literal=True)
        term.keys("Enter")
        both = r"\d\.\d\d  \[(lexical\+semantic|L\+S)\]"  # relevance and stages (in letters when narrow)

        def both_notes_by_both_stages() -> str | None:
            screen = term.screen()
            found = "adr/0002.md:" in screen and "notes/cooking.md:" in screen and re.search(both, screen)
            return screen if found else None

        shown = wait_for(both_notes_by_both_stages, timeout=120, what="both notes, found by both stages")
        rows = [line for line in shown.splitlines() if "adr/0002.md:" in line or "notes/cooking.md:" in line]
        assert all(re.search(both, row) for row in rows), shown
        selection_moves(term, rows, "C-n", top_selected=source != "telescope")


def row_looks(term: Terminal, marker: str, label_cells: int) -> tuple[set[tuple], set[tuple]]:
    """The looks of the first `label_cells` characters of the screen row holding `marker` (where it starts), and
    of the rest of `marker`."""
    for line in coloured_screen(term).splitlines():
        drawn = cells(line)
        plain = "".join(char for char, _ in drawn)
        if marker in plain:
            start = plain.index(marker)
            looks = [attrs for _, attrs in drawn[start:start + len(marker)]]
            return set(looks[:label_cells]), set(looks[label_cells + 1:])
    raise AssertionError(f"{marker!r} is not on the screen:\n{term.screen()}")


def test_a_search_of_every_workspace_labels_each_row_at_80_columns(tmp_path: Path, kb: Path) -> None:
    """Issue 49: two workspaces searched at once, each row names its workspace in a label drawn apart from the
    row, in the built-in picker, mini.pick and fzf-lua (whose rows are a terminal's); issue 51.5: at 80 columns a
    long file name and the span stay whole, the stage badges shorten to letters instead (mini.pick showed
    `2025-…calls.md`)."""
    two_notes(kb)
    rfcs = tmp_path / "rfcs"
    long_name = "2025-weekly-storage-replication-calls.md"
    write(rfcs, f"text/{long_name}", "# Weekly calls\n\n## Storage\n\nWhy we keep one embedded relational store.\n")
    pickers = with_plugins("mini.pick", "fzf-lua") + OPEN["mini_pick"][-1] + OPEN["fzf_lua"][-1]
    with start_editor(tmp_path, kb, 80, False, pickers, rfcs=rfcs) as term:
        term.wait_for_screen("~")
        term.keys("\\/")
        term.wait_for_screen("AutoDoc · all: kb, rfcs")
        term.keys("relational store", literal=True)
        for picker in ("builtin", "mini.pick", "fzf-lua"):
            if picker == "fzf-lua" and shutil.which("fzf") is None:
                break
            shown = term.wait_for_screen("kb   adr/0002.md:", "rfcs ", "2025-we", "calls.md:3-5",
                                         "[L+S]")  # the full answer: both stages
            rows = [line for line in shown.splitlines() if ".md:" in line and ("kb   " in line or "rfcs " in line)]
            assert len(rows) == 3, shown
            for row in rows:  # the span and the relevance whole, then the badges, whole or in letters
                assert re.search(r"\.md:\d+-\d+ .*\d\.\d\d(  \[([a-z+]+|[A-Z+]+)\])?", row), row
            if picker == "mini.pick":  # 48 cells: the badges and then the folders go before the name loses its middle
                assert re.search(r"rfcs 2025-weekly-…[a-z-]*calls\.md:3-5  \d\.\d\d *│", shown), shown
                assert re.search(r"kb   notes/cooking\.md:3-5  (.*  )?\d\.\d\d  \[L\+S\]", shown), shown
            else:  # the long name whole, its badges in letters
                assert re.search(rf"rfcs text/{long_name}:3-5  \d\.\d\d  \[L\+S\]", shown), shown
            assert ": kb, rfcs" in shown, picker  # what is searched (mini.pick cuts its footer at its start)
            # A row not selected (the selection's own colours cover the whole selected row): its label is drawn in
            # AutodocWorkspace, apart from the rest.
            label, rest = row_looks(term, "kb   notes/cooking", 4)  # "kb" padded to "rfcs"
            assert len(label) == 1 and label.isdisjoint(rest), (picker, label, rest)
            term.keys("Escape")
            wait_for(lambda: "calls.md:3-5" not in term.screen(), what=f"{picker} closed")
            if picker != "fzf-lua":  # indexed and embedded: mini.pick holds the editor in its own key loop
                view = {"builtin": "mini.pick", "mini.pick": "fzf-lua"}[picker]
                term.keys(f":AutodocPick {view} relational store", literal=True)
                term.keys("Enter")
