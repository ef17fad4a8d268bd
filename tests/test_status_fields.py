"""What ``workspace.status`` says about the counts it gives: chunks against the texts to embed (sections that
repeat another's text share its vector), and one pace for a fill, from the workspace's window, in the fill's own
answer as in status. A real SQLite file, the toy TEI server."""

from __future__ import annotations

from pathlib import Path

from autodoc_core.service.engine import Engine
from tests.conftest import write
from tests.model_servers import model_server

SAME = "## To do\n\nNothing yet: write this part once the design settles.\n\n"


def test_status_says_how_many_chunks_share_a_text(tmp_path: Path, kb: Path) -> None:
    """12,499 chunks against 12,496 to embed on the RFCs: the three were sections repeating another's text."""
    write(kb, "a.md", "# Plan\n\n## Goal\n\nShip the index.\n\n" + SAME + "## Risks\n\nNone known.\n\n" + SAME)
    write(kb, "b.md", "# Plan\n\n" + SAME)  # same title, so the same heading path and body: one more repeat
    write(kb, "c.md", "# Other\n\n" + SAME)  # another title: another text
    with model_server("tei") as server, Engine(tmp_path / "a.db") as engine:
        engine.workspace_add("kb", str(kb))
        engine.workspace_configure("kb", {"embedder": {"provider": "tei", "url": server.url, "batch_size": 4}})
        engine.workspace_index("kb")
        status = engine.workspace_status("kb")
        embedder = status["embedder"]
        assert embedder["repeated_chunks"] == 2
        assert status["chunks"] == embedder["total"] + embedder["repeated_chunks"]
        filled = engine.workspace_index("kb", {"wait": "semantic"})["embedding"]
        after = engine.workspace_status("kb")["embedder"]
    assert filled["embedded"] == filled["total"] == embedder["total"] == after["embedded"]
    assert set(filled) == set(after["progress"])  # one record for the fill's answer and status
    assert filled["rate"] > 0 and after["progress"]["rate"] > 0 and after["progress"]["eta_seconds"] == 0
