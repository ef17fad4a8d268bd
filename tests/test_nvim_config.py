"""setup() checks its options: one clear error naming the bad or unknown field (no Python host needed)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import pynvim
import pytest

from tests.conftest import PROJECT
from tests.test_nvim_plugin import nvim_binary


@pytest.fixture
def bare_nvim(tmp_path: Path) -> Iterator[pynvim.Nvim]:
    instance = pynvim.attach("child", argv=[nvim_binary(), "--embed", "--headless", "--clean", "-n"])
    instance.exec_lua("vim.opt.runtimepath:prepend(...)", str(PROJECT))
    try:
        yield instance
    finally:
        with contextlib.suppress(EOFError, OSError):
            instance.command("qall!")
        instance.close()


def setup_error(nvim: pynvim.Nvim, options: str) -> str | None:
    return nvim.exec_lua(f"""
        local ok, err = pcall(require('autodoc.config').resolve, {options})
        return (not ok) and err or nil""")


@pytest.mark.parametrize(("options", "message"), [
    ("{ limit = 'x' }", "autodoc: setup: 'limit' must be a positive integer, got \"x\""),
    ("{ limit = 0 }", "autodoc: setup: 'limit' must be a positive integer, got 0"),
    ("{ debounce_ms = 1.5 }", "autodoc: setup: 'debounce_ms' must be a non-negative integer, got 1.5"),
    ("{ index_on_save = 'yes' }", "autodoc: setup: 'index_on_save' must be a boolean, got \"yes\""),
    ("{ workspaces = { { name = 'kb' } } }",
     "autodoc: setup: 'workspaces' must be a list of { name = 'kb', path = '~/kb' }, got { { name = \"kb\" } }"),
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
