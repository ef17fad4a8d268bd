"""The rate and the time left of a vector fill come from the database's embedded count, whoever embeds: an
editor that handed the writer lease to another process sees that one's work, not its own filler's (frozen)
pace. Two real processes on one SQLite file, the toy TEI server."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from autodoc_core.index.fill_rate import FillWindow
from autodoc_core.service.engine import Engine
from tests.conftest import PROJECT, wait_until, write
from tests.lease_file import lease_record
from tests.model_servers import Behaviour, model_server


def test_the_rate_is_the_count_over_the_window() -> None:
    window = FillWindow(window=30)
    assert window.observe("m", 0, 600, now=100).eta_seconds is None  # one sample: no rate yet
    for second in range(1, 61):  # 10 texts a second for a minute
        pace = window.observe("m", 10 * second, 600, now=100 + second)
    assert pace.rate == 10 and pace.eta_seconds == 0
    window.observe("m", 0, 600, now=200)  # fewer than before (documents deleted): counted afresh
    pace = window.observe("m", 40, 600, now=202)
    assert pace.rate == 20 and pace.eta_seconds == 28
    for second in range(3, 40):  # the fill stops: after the window, no rate and no time left
        pace = window.observe("m", 40, 600, now=200 + second)
    assert pace.rate == 0 and pace.eta_seconds is None
    assert window.observe("other", 5, 600, now=240).eta_seconds is None  # another model starts over


def pace_of(engine: Engine) -> dict:
    status = engine.workspace_status("kb")
    return {**(status["embedder"].get("progress") or {}), "embedded": status["embedder"]["embedded"],
            "lease": status["writer_lease"]}


def test_an_editor_that_handed_the_fill_over_follows_the_other_ones_pace(tmp_path: Path, kb: Path) -> None:
    """The editor fills 5 batches, its 6th is held at the server while another process asks for the writer
    lease; released, the editor hands the lease over after that batch and the other process embeds the rest.
    The editor, which no longer embeds, must show the other one's pace: its own figures stopped at the hand-over."""
    for i in range(60):
        write(kb, f"n{i:02}.md", f"# Note {i}\n\n" + "".join(f"## Part {j}\n\nbread {i} flour {j}.\n\n"
                                                           for j in range(6)))
    db = tmp_path / "a.db"
    with model_server("tei", Behaviour(hold_after=5, delay=0.1)) as server, Engine(db) as editor:
        editor.workspace_add("kb", str(kb))
        editor.workspace_configure("kb", {"embedder": {"provider": "tei", "url": server.url, "batch_size": 8}})
        editor.workspace_index("kb")
        editor.start_background()
        assert server.behaviour.holding.wait(timeout=60)
        other = subprocess.Popen([sys.executable, "-m", "tests.workers", "fill", str(db), "kb"], cwd=PROJECT,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            wait_until(lambda: lease_record(db).get("wanted"), what="the other process waiting for the lease")
            server.behaviour.release.set()
            first = wait_until(lambda: (pace := pace_of(editor))["lease"] and pace["lease"]["pid"] == other.pid
                               and pace["embedded"] > 48 and pace["eta_seconds"] and pace,
                               what="the other process embedding, and a time left in the editor")
            assert first["rate"] > 0 and not first["lease"]["this_process"]
            wait_until(lambda: (pace := pace_of(editor))["embedded"] > first["embedded"]
                       and pace["rate"] > 0 and pace["eta_seconds"] < first["eta_seconds"],
                       what="the time left falling while the other process embeds")
        finally:
            other.kill()
            other.wait(timeout=30)
