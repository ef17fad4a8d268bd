"""A new user's Neovim in a real terminal (tests/nvim/terminal.py), on workspaces kb and rfcs, as the issue 51 walk
tests start it; and what they ask it without typing."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

from tests.conftest import PROJECT
from tests.nvim.terminal import Terminal, terminal


def start_editor(tmp_path: Path, kb: Path, columns: int, rfcs: Path,
                 init_lua: str = "") -> contextlib.AbstractContextManager[Terminal]:
    """Neovim on tests/nvim/setup_first_init.lua (then `init_lua`) with workspaces kb and rfcs, `columns` x 40."""
    init = tmp_path / "init.lua"
    init.write_text(f"dofile({str(PROJECT / 'tests' / 'nvim' / 'setup_first_init.lua')!r})\n" + init_lua)
    env = {
        "AUTODOC_ROOT": str(PROJECT), "AUTODOC_PYTHON": sys.executable, "AUTODOC_TEST_KB": str(kb),
        "AUTODOC_TEST_RFCS": str(rfcs), "AUTODOC_DB": str(tmp_path / "autodoc.db"),
        "XDG_STATE_HOME": str(tmp_path / "state"), "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"), "TERM": "xterm-256color",
    }
    return terminal(init, env, columns, 40)


def messages(term: Terminal) -> str:
    return term.nvim.exec_lua("return vim.fn.execute('messages')")


def mode(term: Terminal) -> str:
    """Neovim's mode: 'r' while the hit-enter prompt waits (nvim_get_mode answers even then)."""
    return term.nvim.api.get_mode()["mode"]
