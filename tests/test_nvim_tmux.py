"""End to end: Neovim in a real terminal (tmux), real keystrokes including Alt keys, and the screen
read back with capture-pane, as a person would see it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import PROJECT, write
from tests.test_nvim_plugin import nvim_binary

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


SOCKET = f"autodoc-test-{os.getpid()}"  # a tmux server of its own, without the user's ~/.tmux.conf


def tmux(*args: str) -> str:
    return subprocess.run(["tmux", "-L", SOCKET, "-f", "/dev/null", *args], capture_output=True, text=True,
                          check=True).stdout


def screen(session: str) -> str:
    return tmux("capture-pane", "-p", "-t", session)


def wait_for_screen(session: str, text: str, timeout: float = 120.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        shown = screen(session)
        if text in shown:
            return shown
        time.sleep(0.1)
    raise AssertionError(f"{text!r} never appeared; the screen was:\n{screen(session)}")


def press_enter_until_the_file_opens(session: str, name: str, tries: int = 5) -> str:
    """Enter, then wait for the file (or for the picker to go). A <CR> typed right after a stage toggle
    was once lost on an idle machine (not yet explained); it is typed again only while the picker is
    still open, so a late first <CR> can never land in the opened file."""
    for _ in range(tries):
        tmux("send-keys", "-t", session, "Enter")
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            shown = screen(session)
            if name in shown:
                return shown
            if "AutoDoc · kb" not in shown:
                break
            time.sleep(0.1)
        if "AutoDoc · kb" not in screen(session):
            return wait_for_screen(session, name)
    raise AssertionError(f"{name!r} never opened; the screen was:\n{screen(session)}")


def test_a_person_searches_toggles_and_jumps(tmp_path: Path, kb: Path) -> None:
    write(kb, "adr/0002.md", "# ADR 0002 Keep the index in SQLite\n\n## Decision\n\n"
                             "We keep every workspace in one embedded relational store.\n")
    write(kb, "notes/cooking.md", "# Cooking\n\n## Bread\n\nFlour, water, salt and yeast make bread.\n")
    session = f"autodoc-test-{os.getpid()}"
    env = {
        "AUTODOC_ROOT": str(PROJECT), "AUTODOC_PYTHON": sys.executable, "AUTODOC_TEST_KB": str(kb),
        "AUTODOC_DB": str(tmp_path / "autodoc.db"), "XDG_STATE_HOME": str(tmp_path / "state"),
        "XDG_DATA_HOME": str(tmp_path / "data"), "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "TERM": "xterm-256color",
    }
    command = " ".join(f"{k}={v}" for k, v in env.items()) + \
        f" {nvim_binary()} -u {PROJECT / 'tests' / 'nvim' / 'setup_first_init.lua'}"
    tmux("new-session", "-d", "-s", session, "-x", "140", "-y", "40", command)
    try:
        wait_for_screen(session, "~")  # Neovim draws its empty buffer: it reads keys from here on
        tmux("send-keys", "-t", session, "\\/")  # the user's mapping: <leader>/
        wait_for_screen(session, "AutoDoc · kb")
        tmux("send-keys", "-t", session, "-l", "relational store")
        shown = wait_for_screen(session, "adr/0002.md:3-5")
        assert "[x] Lexical" in shown and "Keep the index in SQLite › Decision" in shown
        tmux("send-keys", "-t", session, "M-s")  # Alt-s: semantic off
        wait_for_screen(session, "[ ] Semantic")
        tmux("send-keys", "-t", session, "M-s")
        wait_for_screen(session, "[x] Semantic")
        tmux("send-keys", "-t", session, "M-l")  # Alt-l: lexical off, semantic alone finds it
        wait_for_screen(session, "[ ] Lexical")
        tmux("send-keys", "-t", session, "M-l")
        wait_for_screen(session, "[x] Lexical")
        shown = press_enter_until_the_file_opens(session, "kb/adr/0002.md")  # its name in the status line
        assert "We keep every workspace in one embedded relational store." in shown
        assert "3,1" in shown  # the cursor on the hit's first line
        assert "AutoDoc · kb" not in shown  # the picker closed
    finally:
        subprocess.run(["tmux", "-L", SOCKET, "kill-server"], capture_output=True)
