"""Neovim quits when a script says so right after start-up: `nvim --headless -u init.lua +UpdateRemotePlugins
+qa` (what people run after installing a plugin with a remote plugin) and a plugin manager's scripted sync
(`nvim --headless "+Lazy! sync" +qa`), while setup() is still choosing the plugin's Python host.

Once `:qa` has begun, Neovim stops its children and runs scheduled callbacks while it waits for them to end; a
host started by such a callback was never stopped, and Neovim waited for it forever (normal mode, v:exiting 0).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import PROJECT
from tests.nvim import child_nvim, lua_string, nvim_binary, wait_for

RUNS = 10
DEADLINE = 60  # seconds: a run ends in under one, even on a loaded machine; this only bounds a hang


def user_init(tmp_path: Path, kb: Path, extra: str = "") -> Path:
    """A user's init.lua: the plugin, g:python3_host_prog, setup() with one workspace, then `extra`."""
    init = tmp_path / "init.lua"
    init.write_text(f"""
        vim.opt.runtimepath:prepend({lua_string(PROJECT)})
        vim.g.python3_host_prog = {lua_string(sys.executable)}
        require('autodoc').setup({{ workspaces = {{ {{ name = 'kb', path = {lua_string(kb)} }} }} }})
        {extra}
    """)
    return init


def user_env(home: Path, **extra: str) -> dict[str, str]:
    """This process's environment without its XDG_* and AUTODOC_* variables, XDG folders in `home`, `extra` over."""
    env = {name: value for name, value in os.environ.items()
           if not name.startswith(("XDG_", "AUTODOC_")) or name == "AUTODOC_ONNX_CACHE"}
    env.update({f"XDG_{folder.upper()}_HOME": str(home / folder) for folder in ("config", "data", "state", "cache")})
    return {**env, **extra}


def run_and_quit(home: Path, init: Path, *commands: str, what: str, env: dict[str, str] | None = None,
                 output: list[str] | None = None) -> Path:
    """`nvim --headless -u init *commands` with its own XDG folders (`env`: user_env's, else this one); fails
    with `what` if it does not exit. Returns its data folder; what Neovim printed goes into `output`."""
    env = env or user_env(home)
    argv = [nvim_binary(), "--headless", "-u", str(init), *commands]
    try:
        done = subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=DEADLINE)
    except subprocess.TimeoutExpired as hung:
        output = hung.stderr.decode(errors="replace") if isinstance(hung.stderr, bytes) else hung.stderr
        raise AssertionError(f"{what}: Neovim hung (did not exit within {DEADLINE} s); "
                             f"its output: {output!r}") from None
    assert done.returncode == 0, f"{what}: exit code {done.returncode}: {done.stderr}"
    if output is not None:
        output.append(done.stdout + done.stderr)
    return home / "data"


def test_update_remote_plugins_then_quit_never_hangs(tmp_path: Path, notes: Path) -> None:
    init = user_init(tmp_path, notes)
    for run in range(1, RUNS + 1):
        data = run_and_quit(tmp_path / f"run{run}", init, "+UpdateRemotePlugins", "+qa",
                            what=f"run {run} of {RUNS} of +UpdateRemotePlugins +qa")
        manifest = (data / "nvim" / "rplugin.vim").read_text()
        assert "remote#host#RegisterPlugin" not in manifest and "AutodocRequest" not in manifest, manifest


def test_update_remote_plugins_leaves_autodoc_to_its_own_host(tmp_path: Path, notes: Path) -> None:
    """The `python3` on PATH has no pynvim (a fresh virtualenv): Neovim's python3 host cannot start. It used to
    be asked to load rplugin/python3/autodoc, and :UpdateRemotePlugins printed E475 and E5108. No Python but
    AutoDoc's own host loads the plugin, and AutoDoc searches after it as before."""
    bare = tmp_path / "bare-venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True, timeout=DEADLINE)
    assert subprocess.run([bare / "bin" / "python3", "-c", "import pynvim"], capture_output=True).returncode != 0
    init = tmp_path / "init.lua"
    init.write_text(f"""
        vim.opt.runtimepath:prepend({lua_string(PROJECT)})
        vim.g.autodoc_python = {lua_string(sys.executable)}
        require('autodoc').setup({{ db = {lua_string(tmp_path / "autodoc.db")},
          workspaces = {{ {{ name = 'kb', path = {lua_string(notes)} }} }} }})
    """)
    home = tmp_path / "home"
    env = user_env(home, PATH=f"{bare / 'bin'}{os.pathsep}{os.environ['PATH']}")
    env.pop("VIRTUAL_ENV", None)
    printed: list[str] = []
    data = run_and_quit(home, init, "+UpdateRemotePlugins", "+qa", what="+UpdateRemotePlugins +qa", env=env,
                        output=printed)
    assert "E475" not in printed[0] and "E5108" not in printed[0] and "generated rplugin manifest" in printed[0], \
        printed[0]
    assert "autodoc" not in (data / "nvim" / "rplugin.vim").read_text().replace('" autodoc plugins', "")
    with child_nvim("-u", str(init), env=env, isolated=True) as nvim:
        assert nvim.exec_lua("return vim.fn.exepath('python3')") == str(bare / "bin" / "python3")
        nvim.exec_lua("""_G.found = nil
          require('autodoc').index('kb', function()
            require('autodoc.rpc').request('search.query', { 'kb', 'bread' }, function(err, answer)
              _G.found = err and { error = err.message } or vim.tbl_map(function(hit) return hit.path end, answer.hits)
            end)
          end)""")
        found = wait_for(lambda: nvim.exec_lua("return _G.found"), timeout=DEADLINE)
        assert found == ["notes/cooking.md"], found


def test_quitting_while_a_job_still_ends_never_hangs(tmp_path: Path, notes: Path) -> None:
    """A plugin manager's sync leaves a child that takes its time to end after `:qa` (here: one that ignores
    SIGTERM, so Neovim waits until it kills it): the host's interpreter check ends during that wait."""
    slow_job = "vim.fn.jobstart({ 'sh', '-c', 'trap \"\" TERM; while :; do sleep 0.1; done' })"
    init = user_init(tmp_path, notes, slow_job)
    for run in (1, 2):
        run_and_quit(tmp_path / f"run{run}", init, "+qa", what=f"run {run} of +qa with a job still ending")
