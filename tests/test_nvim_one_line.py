"""Progress and closing messages fit one screen row (issue 51): at 80 columns an index run's end, two rows long,
raised the hit-enter prompt at the first start, after :AutodocWorkspaceAdd, :w and :AutodocIndex; and so did a
few errors. Each is looked at as a person sees it, in a real terminal (tmux, tests/nvim/terminal.py)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from tests.conftest import write
from tests.nvim import wait_for
from tests.nvim.terminal import Terminal
from tests.nvim.walk import messages, mode, start_editor

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")

BROKEN = "---\ntitle: Broken\ntags: [unclosed\nmore: : here\n---\n# Broken\n\ntext\n"


def many_notes(root: Path) -> Path:
    """Nine files: seven notes, one whose front matter is broken YAML, one binary file under a Markdown name
    (the indexer skips it): the walk's folder, whose end said `3 with problems` on a second row."""
    for number in range(7):
        write(root, f"note-{number}.md", f"# Note {number}\n\n## Body\n\nA note about relational store {number}.\n")
    write(root, "broken.md", BROKEN)
    (root / "picture.md").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)))
    return root


def no_prompt(term: Terminal) -> str:
    screen = term.screen()
    assert "Press ENTER" not in screen and mode(term) != "r", screen
    return screen


def said(term: Terminal, pattern: str, times: int = 1) -> str:
    """:messages once `pattern` is in it `times` times; failing at once on a hit-enter prompt (during which
    Neovim answers no request: asking for :messages would hang)."""
    def seen() -> str | None:
        no_prompt(term)
        history = messages(term)
        return history if len(re.findall(pattern, history)) >= times else None

    try:
        return wait_for(seen, timeout=120, what=f"{pattern!r} in :messages")
    except AssertionError as failure:
        raise AssertionError(f"{failure}; :messages held:\n{messages(term)}") from None


def test_the_first_index_run_ends_in_one_row(tmp_path: Path, kb: Path) -> None:
    """`autodoc: 100% kb: 9 files scanned, 8 added, 1 skipped, 3 with problems (:Auto` / `docStatus lists
    them) (0.3 s)` / `Press ENTER or type command to continue`: now one row, the whole text in :messages."""
    many_notes(kb)
    rfcs = many_notes(tmp_path / "rfcs")
    with start_editor(tmp_path, kb, 80, rfcs) as term:
        history = said(term, r"(kb|rfcs): 8 added, 1 skipped, 2 problems \(:AutodocStatus\)", times=2)
        said(term, r"(kb|rfcs): (\d+)/\2 embedded", times=2)
        no_prompt(term)
        assert "scanned" not in history, history  # the counts of what changed outrank the files read


def typed(term: Terminal, command: str) -> None:
    term.keys(command, literal=True)
    term.keys("Enter")


def test_index_runs_a_person_starts_end_in_one_row(tmp_path: Path, kb: Path) -> None:
    """:AutodocIndex, :w on a note whose front matter breaks, :AutodocWorkspaceAdd: each ended on two rows."""
    many_notes(kb)
    rfcs = many_notes(tmp_path / "rfcs")
    with start_editor(tmp_path, kb, 80, rfcs) as term:
        said(term, r"(kb|rfcs): (\d+)/\2 embedded", times=2)
        typed(term, ":AutodocIndex kb")
        said(term, r"kb: 1 skipped, 2 problems \(:AutodocStatus\)")  # the binary file, skipped each run
        typed(term, f":edit {kb / 'note-1.md'}")
        term.wait_for_screen("# Note 1")
        typed(term, ":call setline(1, ['---', 'title: x', 'tags: [open', '---', '# Note 1'])")
        typed(term, ":w")
        said(term, r"kb: 1 changed, 3 problems \(:AutodocStatus\)")
        notes = many_notes(tmp_path / "notes")
        typed(term, f":AutodocWorkspaceAdd notes {notes}")
        said(term, r"notes: 8 added, 1 skipped, 2 problems")
        no_prompt(term)


@pytest.mark.parametrize(("command", "shown"), [
    (":AutodocWorkspaceRemove kb", "is in setup({ workspaces })"),
    (":AutodocPick nosuch foo", ":AutodocPick takes one of"),
])
def test_an_error_stays_on_screen_without_the_prompt(tmp_path: Path, kb: Path, command: str, shown: str) -> None:
    """Removing a workspace setup() configures, a picker that is none: two rows, and the hit-enter prompt."""
    many_notes(kb)
    rfcs = many_notes(tmp_path / "rfcs")
    with start_editor(tmp_path, kb, 80, rfcs) as term:
        said(term, r"(kb|rfcs): (\d+)/\2 embedded", times=2)
        typed(term, command)
        term.wait_for_screen(shown.split(" ")[0])
        said(term, re.escape(shown))
        screen = no_prompt(term)
        assert re.sub(r"[│\s]+", " ", shown) in re.sub(r"[│\s]+", " ", screen), screen  # on screen, in a float
        term.keys("j")  # the next key: the float goes
        wait_for(lambda: shown.split(" ")[-1] not in "".join(term.screen().splitlines()[:-1]), timeout=60,
                 what="the kept message gone after a key")


def test_a_hit_whose_folder_is_gone_says_so_in_one_kept_message(tmp_path: Path, kb: Path) -> None:
    """Enter on a hit whose workspace folder was moved away: said in the float over the picker, which stays open,
    with no hit-enter prompt."""
    many_notes(kb)
    rfcs = many_notes(tmp_path / "rfcs")
    with start_editor(tmp_path, kb, 80, rfcs) as term:
        said(term, r"(kb|rfcs): (\d+)/\2 embedded", times=2)
        typed(term, ":AutodocSearch @kb relational store")
        term.wait_for_screen("note-1.md:3-5")
        kb.rename(tmp_path / "moved")
        term.keys("Enter")
        # the float breaks its lines between words: read its rows as one text
        def float_says() -> str | None:
            rows = [line.strip("│ ") for line in term.screen().splitlines() if line.startswith("│")]
            return term.screen() if f"{kb} is not there (a drive not mounted?)" in " ".join(rows) else None

        screen = wait_for(float_says, 120, what="the float saying the root is not there")
        assert "Press ENTER" not in screen and mode(term) == "i" and "AutoDoc · kb" in screen, screen
