"""setup() checks its options: each bad or unknown field is named and left out, the rest applies."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pynvim
import pytest

from tests.conftest import PROJECT
from tests.nvim import child_nvim


@pytest.fixture
def bare_nvim(tmp_path: Path) -> Iterator[pynvim.Nvim]:
    with child_nvim("--clean", "-n") as instance:
        instance.exec_lua("vim.opt.runtimepath:prepend(...)", str(PROJECT))
        yield instance


def setup_error(nvim: pynvim.Nvim, options: str) -> str | None:
    problems = nvim.exec_lua(f"local _, problems = require('autodoc.config').resolve({options}); return problems")
    return "autodoc: setup: " + "; ".join(problems) if problems else None


@pytest.mark.parametrize(("options", "message"), [
    ("{ limit = 'x' }", "autodoc: setup: 'limit' must be a positive integer, got \"x\""),
    ("{ limit = 0 }", "autodoc: setup: 'limit' must be a positive integer, got 0"),
    ("{ debounce_ms = 1.5 }", "autodoc: setup: 'debounce_ms' must be a non-negative integer, got 1.5"),
    ("{ index_on_save = 'yes' }", "autodoc: setup: 'index_on_save' must be a boolean, got \"yes\""),
    ("{ workspaces = { name = 'kb' } }",
     "autodoc: setup: 'workspaces' must be a list of { name = 'kb', path = '~/kb' }, got { name = \"kb\" }"),
    ("{ workspaces = { { name = 'kb', path = '/tmp' }, { 'x', '/tmp' } } }",
     "autodoc: setup: workspaces[2] must be { name = 'kb', path = '~/kb' }, got { \"x\", \"/tmp\" }"),
    ("{ keys = { open = 3 } }", "autodoc: setup: 'keys.open' must be a key or a list of keys, got 3"),
])
def test_a_bad_option_is_named(bare_nvim, options: str, message: str) -> None:
    assert setup_error(bare_nvim, options) == message


def test_unknown_options_are_reported_not_merged(bare_nvim) -> None:
    error = setup_error(bare_nvim, "{ limt = 5 }")
    assert error.startswith("autodoc: setup: unknown option 'limt' (known: ")
    assert "limit" in error
    assert setup_error(bare_nvim, "{ keys = { opn = '<CR>' } }").startswith("autodoc: setup: unknown key 'keys.opn'")


def test_good_options_override_the_defaults(bare_nvim) -> None:
    config = bare_nvim.exec_lua("return require('autodoc.config').resolve({ limit = 5, keys = { open = '<C-o>' }, "
                                "db = '/tmp/x.db' })")
    assert config["limit"] == 5 and config["db"] == "/tmp/x.db"
    assert config["keys"]["open"] == "<C-o>" and config["keys"]["close"] == ["<Esc>", "q"]
    assert setup_error(bare_nvim, "nil") is None


def test_a_bad_option_is_said_and_the_rest_of_init_lua_runs(tmp_path: Path) -> None:
    """A typo in setup() raised: the rest of the user's init.lua did not run (options set after it, other
    plugins), and the good options, workspaces included, were not applied either."""
    init = tmp_path / "init.lua"
    init.write_text(f"""
        vim.opt.runtimepath:prepend({str(PROJECT)!r})
        require('autodoc').setup({{ debounce = 50, limit = 7, workspaces = {{ {{ name = 'kb', path = '/tmp' }}, 3 }} }})
        vim.g.after_setup = 1
    """)
    places = {"XDG_CONFIG_HOME": "c", "XDG_DATA_HOME": "d", "XDG_STATE_HOME": "s", "AUTODOC_DB": "a.db"}
    with child_nvim("-n", "-u", str(init), env={name: str(tmp_path / value) for name, value in places.items()}) as nvim:
        assert nvim.vars["after_setup"] == 1
        config = nvim.exec_lua("return require('autodoc').config")
        assert config["limit"] == 7 and [ws["name"] for ws in config["workspaces"]] == ["kb"]
        messages = nvim.exec_lua("return vim.api.nvim_exec2('messages', { output = true }).output")
        assert "autodoc: setup: unknown option 'debounce' (known: " in messages
        assert "workspaces[2] must be { name = 'kb', path = '~/kb' }, got 3" in messages
        assert "(left out; the other options apply)" in messages

