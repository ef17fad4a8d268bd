"""A long fill hands over to a workspace asked for: a note saved in a small workspace while a large one fills is
embedded after the large one's batch under way, not after its thousands of sections (a new user's walk: the saved
note was out of the search by meaning for more than 7 minutes while the Rust RFCs filled)."""

from __future__ import annotations

from pathlib import Path

from autodoc_core.service.engine import Engine
from tests.conftest import write
from tests.model_servers import Behaviour, model_server
from tests.waiting import wait_until

SMALL_MARK = "sourdough"


def batches(behaviour: Behaviour) -> list[list[str]]:
    with behaviour.lock:
        bodies = [r["body"] for r in behaviour.requests]
    texts = [b.get("inputs") for b in bodies if isinstance(b, dict)]
    return [t for t in texts if isinstance(t, list) and len(t) > 1]


def test_a_workspace_asked_for_is_filled_before_the_rest_of_a_long_fill(tmp_path: Path) -> None:
    big, small, db = tmp_path / "big", tmp_path / "small", tmp_path / "a.db"
    for i in range(40):
        write(big, f"n{i:02}.md", f"# Note {i}\n\n" + "".join(f"## Part {j}\n\nbread {i} flour {j}.\n\n"
                                                           for j in range(4)))
    write(small, "starter.md", f"# Starter\n\nFeed the {SMALL_MARK} starter.\n\n## Keep\n\nIn the fridge.\n")
    with model_server("tei", Behaviour(hold_after=2)) as server, Engine(db) as engine:
        for name, root in (("big", big), ("small", small)):
            engine.workspace_add(name, str(root))
            engine.workspace_configure(name, {"embedder": {"provider": "tei", "url": server.url, "batch_size": 4}})
        engine.workspace_index("small", {"wait": "semantic"})  # the server's first batch
        engine.workspace_index("big")
        engine.start_background()
        assert server.behaviour.holding.wait(timeout=60)  # big's second batch is held; 38 more to go
        write(small, "starter.md", f"# Starter\n\nFeed the {SMALL_MARK} starter daily.\n\n## Keep\n\nCold.\n")
        engine.workspace_index("small")
        server.behaviour.release.set()
        wait_until(lambda: engine.workspace_status("small")["semantic"] == "ready", timeout=60,
                   what="the small workspace's changed note embedded")
        held_at = 2  # the first batch was small's, the second big's (answered), the third the held one
        after = batches(server.behaviour)[held_at + 1:]
        assert after and any(SMALL_MARK in text for text in after[0]), \
            "the batch after the held one is the small workspace's"
        wait_until(lambda: engine.workspace_status("big")["semantic"] == "ready", timeout=120,
                   what="the large workspace's fill resumed and completed")
