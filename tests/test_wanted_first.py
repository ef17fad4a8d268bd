"""While a workspace fills, the documents a search's hits are in, and those an editor has open
(``embedding.focus``), are embedded before the rest: seen in the database at the batch after the search,
never through timing."""

from __future__ import annotations

from pathlib import Path

import pytest

from autodoc_core.errors import AutodocError
from autodoc_core.index.checkpoints import Hold
from autodoc_core.service.engine import Engine
from tests.conftest import write

TOPICS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet"]
COMPLETE_SQL = """
SELECT d.path FROM documents d WHERE d.ws_id = ? AND NOT EXISTS (
  SELECT 1 FROM chunks c WHERE c.doc_id = d.id AND NOT EXISTS (
    SELECT 1 FROM embeddings e WHERE e.ws_id = c.ws_id AND e.text_hash = c.text_hash))"""


@pytest.fixture
def workspace(engine: Engine, kb: Path) -> Engine:
    """100 documents (300 sections): a fill batch of 64 texts reaches the last topic's only at its fifth batch."""
    for number in range(100):
        topic = TOPICS[number // 10]
        write(kb, f"{number:03d}-{topic}.md", f"# {topic} {number}\n\n## One\n\nThe {topic} part one.\n\n"
                                             f"## Two\n\nThe {topic} part two of {number}.\n")
    engine.workspace_add("kb", str(kb))
    engine.workspace_index("kb")
    return engine


def complete_documents(engine: Engine) -> set[str]:
    with engine.store.snapshot() as conn:
        ws_id = conn.execute("SELECT id FROM workspaces WHERE name = 'kb'").fetchone()[0]
        return {row[0] for row in conn.execute(COMPLETE_SQL, (ws_id,))}


def held_after_first_batch(engine: Engine, then) -> set[str]:
    """Hold the fill after its first batch, do ``then``, and return the complete documents after the next one."""
    with Hold("embed.batch", 1) as first:
        engine.start_background()
        assert first.arrived.wait(120)
        with Hold("embed.batch", 2) as second:
            then()
            first.release.set()
            assert second.arrived.wait(120)
            return complete_documents(engine)


def test_a_searchs_hit_documents_are_embedded_next(workspace: Engine) -> None:
    wanted: list[str] = []

    def search() -> None:
        answer = workspace.search("kb", "juliet", {"stages": ["lexical"]})
        wanted.extend(hit.path for hit in answer.hits)

    complete = held_after_first_batch(workspace, search)
    assert wanted and all("juliet" in path for path in wanted)
    assert set(wanted) <= complete
    assert not any("india" in path for path in complete)  # document order would have reached these first


def test_open_buffers_are_embedded_next(workspace: Engine) -> None:
    opened = ["095-juliet.md", "042-echo.md"]
    complete = held_after_first_batch(workspace, lambda: workspace.embedding_focus("kb", opened))
    assert set(opened) <= complete
    assert "090-juliet.md" not in complete


def test_focus_refuses_what_is_not_a_list_of_paths(workspace: Engine) -> None:
    for bad in ("095-juliet.md", [1, 2]):
        with pytest.raises(AutodocError, match="'paths' must be a list"):
            workspace.embedding_focus("kb", bad)


def test_focus_keeps_the_most_recent_documents_past_its_limit(workspace: Engine) -> None:
    """The limit is the engine's alone (index.wanted.KEPT): an editor sends every open buffer, the most recent
    first, and the oldest past the limit are dropped instead of the request refused."""
    from autodoc_core.index.wanted import KEPT

    opened = [f"open-{n}.md" for n in range(KEPT + 50)]
    assert workspace.embedding_focus("kb", opened) == {"wanted": KEPT}
