"""Neovim in a real terminal: a tmux pane of a given size on a tmux server of its own (no ~/.tmux.conf), keys
sent as a person types them, and the screen read back with capture-pane, as a person sees it. Neovim also
listens on a socket, so a test can ask it what it knows (``Terminal.nvim``) without typing."""

from __future__ import annotations

import contextlib
import itertools
import os
import shlex
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pynvim

from tests.nvim import nvim_binary, wait_for

_numbers = itertools.count()


class Terminal:
    def __init__(self, name: str) -> None:
        self.name = name  # the tmux server's socket name and the session's
        self.socket = Path(f"/tmp/{name}.sock")  # Neovim's: short, a socket path has at most 107 bytes
        self._nvim: pynvim.Nvim | None = None

    def tmux(self, *args: str) -> str:
        return subprocess.run(["tmux", "-L", self.name, "-f", "/dev/null", *args], capture_output=True, text=True,
                              check=True).stdout

    def start(self, init: Path, env: dict[str, str], columns: int, rows: int) -> None:
        command = ["env", *(f"{key}={value}" for key, value in env.items()),
                   nvim_binary(), "--listen", str(self.socket), "-u", str(init)]
        self.tmux("new-session", "-d", "-s", self.name, "-x", str(columns), "-y", str(rows), shlex.join(command))

    @property
    def nvim(self) -> pynvim.Nvim:
        """The Neovim in the pane, over its socket (requests, not keys: the screen's messages stay)."""
        if self._nvim is None:
            wait_for(self.socket.exists, timeout=60, what=f"Neovim listening on {self.socket}")
            self._nvim = pynvim.attach("socket", path=str(self.socket))
        return self._nvim

    def keys(self, *keys: str, literal: bool = False) -> None:
        """Type `keys` (tmux key names such as Enter or Escape; `literal`: the text as it is)."""
        self.tmux("send-keys", "-t", self.name, *(["-l"] if literal else []), *keys)

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", self.name)

    def bottom(self, rows: int) -> str:
        """The last `rows` rows of the screen that are not blank: where Neovim shows its messages."""
        return "\n".join([line for line in self.screen().splitlines() if line.strip()][-rows:])

    def wait_for_screen(self, *texts: str, timeout: float = 120.0) -> str:
        """The screen once it shows every one of `texts` at the same time."""
        def shown() -> str | None:
            now = self.screen()
            return now if all(text in now for text in texts) else None

        try:
            return wait_for(shown, timeout, what=f"{' and '.join(map(repr, texts))} on the screen")
        except AssertionError as failure:
            raise AssertionError(f"{failure}; the screen was:\n{self.screen()}") from None

    def close(self) -> None:
        if self._nvim is not None:
            # Quit the Neovim server itself: killing the terminal ends its TUI client, and a server holding a
            # float or a prompt outlived it (one left running per run of test_nvim_screen's status test).
            with contextlib.suppress(Exception):
                self._nvim.command("qall!")
            with contextlib.suppress(OSError, EOFError):
                self._nvim.close()
        subprocess.run(["tmux", "-L", self.name, "kill-server"], capture_output=True)
        self.socket.unlink(missing_ok=True)


@contextlib.contextmanager
def terminal(init: Path, env: dict[str, str], columns: int = 80, rows: int = 24) -> Iterator[Terminal]:
    """Neovim on `init` in a `columns` x `rows` terminal, with `env` over this process's environment."""
    term = Terminal(f"autodoc-{os.getpid()}-{next(_numbers)}")
    term.start(init, env, columns, rows)
    try:
        yield term
    finally:
        term.close()
