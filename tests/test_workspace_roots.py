"""A workspace's folder (issue 39): moving a workspace to another folder (what setup() asks), and a folder that
vanished said in status and in the list instead of reading as healthy."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from autodoc_core.errors import AutodocError
from autodoc_core.service.engine import Engine
from tests.conftest import call, paths, search, write
from tests.model_servers import model_server


def two_folders(tmp_path: Path) -> tuple[Path, Path]:
    old, new = tmp_path / "old", tmp_path / "new"
    write(old, "shared.md", "# Shared\n\nThe okapi lives in the forest.\n")
    write(old, "only-old.md", "# Old\n\nThe narwhal note, only in the old folder.\n")
    write(new, "shared.md", "# Shared\n\nThe okapi lives in the forest.\n")
    write(new, "only-new.md", "# New\n\nThe axolotl note, only in the new folder.\n")
    return old, new


def test_adding_a_name_at_another_folder_is_refused_and_says_how_to_move(engine: Engine, tmp_path: Path) -> None:
    old, new = two_folders(tmp_path)
    engine.workspace_add("kb", str(old))
    with pytest.raises(AutodocError) as caught:
        engine.workspace_add("kb", str(new))
    reason = caught.value.reason
    assert caught.value.code == -32602
    assert f"already exists with root {old}" in reason and '{"move": true}' in reason
    assert f"autodoc --db {engine.store.path} --call workspace.add '[\"kb\", \"{new}\", {{\"move\": true}}]'" in reason
    assert engine.workspace_list()[0]["root"] == str(old)  # nothing changed
    with pytest.raises(AutodocError) as caught:
        engine.workspace_add("kb", str(new), {"mvoe": True})
    assert "unknown workspace.add option mvoe" in caught.value.reason


def test_moving_a_workspace_answers_from_the_new_folder_only(engine: Engine, tmp_path: Path) -> None:
    old, new = two_folders(tmp_path)
    engine.workspace_add("kb", str(old))
    engine.workspace_index("kb")
    engine.workspace_configure("kb", {"section_tokens": 256})
    assert paths(search(engine, "narwhal")) == ["only-old.md"]

    moved = engine.workspace_add("kb", str(new), {"move": True})
    assert (moved["root"], moved["moved_from"], moved["documents_forgotten"]) == (str(new), str(old), 2)
    # At once, before any index run: the old folder's documents no longer answer.
    assert paths(search(engine, "narwhal")) == []
    assert engine.workspace_status("kb")["documents"] == 0
    report = engine.workspace_index("kb")
    assert report["added"] == 2 and report["deleted"] == 0
    assert paths(search(engine, "axolotl")) == ["only-new.md"]
    assert paths(search(engine, "narwhal")) == []
    assert engine.workspace_status("kb")["settings"]["section_tokens"] == 256  # settings stay
    # Followers of the change log are told the old documents went.
    deleted = [c["path"] for c in engine.changes_since("kb")["changes"] if c["op"] == "deleted"]
    assert sorted(deleted) == ["only-old.md", "shared.md"]
    again = engine.workspace_add("kb", str(new), {"move": True})  # already there: nothing to do
    assert "moved_from" not in again


def test_a_move_keeps_the_vectors_of_unchanged_sections(tmp_path: Path) -> None:
    """Vectors are keyed by chunk text: after the move only the new folder's new text is embedded."""
    old, new = two_folders(tmp_path)
    with model_server("tei") as server, Engine(tmp_path / "a.db") as engine:
        engine.workspace_add("kb", str(old))
        engine.workspace_configure("kb", {"embedder": {"provider": "tei", "url": server.url}})
        engine.workspace_index("kb", {"wait": "semantic"})
        before = len(embedded_texts(server))
        engine.workspace_add("kb", str(new), {"move": True})
        report = engine.workspace_index("kb", {"wait": "semantic"})
        assert report["semantic"] == "ready"
        after = embedded_texts(server)[before:]
        assert any("axolotl" in text for text in after)
        assert not any("okapi" in text for text in after)  # shared.md's section kept its vector


def embedded_texts(server) -> list[str]:
    return [t for r in server.behaviour.requests if r["path"] == "/embed" for t in r["body"]["inputs"]]


def test_the_cli_refuses_without_move_and_moves_with_it(tmp_path: Path) -> None:
    old, new = two_folders(tmp_path)
    db = tmp_path / "a.db"
    assert call(db, "workspace.add", ["kb", str(old)])[0] == 0
    code, answer = call(db, "workspace.add", ["kb", str(new)])
    assert code != 0 and '{"move": true}' in answer["error"]["data"]["reason"]
    code, answer = call(db, "workspace.add", ["kb", str(new), {"move": True}])
    assert code == 0 and answer["moved_from"] == str(old) and answer["root"] == str(new)


# -- a folder that vanished --------------------------------------------------------------


def test_a_vanished_folder_is_said_in_status_and_list_and_its_index_is_kept(engine: Engine, kb: Path,
                                                                            tmp_path: Path, indexed) -> None:
    write(kb, "a.md", "# A\n\nokapi\n")
    write(kb, "b.md", "# B\n\nokapi too\n")
    indexed()
    assert engine.workspace_status("kb")["root_problem"] is None
    assert engine.workspace_list()[0]["root_problem"] is None
    kb.rename(tmp_path / "elsewhere")
    problem = engine.workspace_status("kb")["root_problem"]
    assert problem.startswith(f"the folder {kb} no longer exists; its 2 indexed documents are kept")
    assert "workspace.remove" in problem and '{"move": true}' in problem
    assert engine.workspace_list()[0]["root_problem"] == problem
    with pytest.raises(AutodocError):  # a scan meanwhile leaves the index as it was
        engine.workspace_index("kb")
    assert sorted(paths(search(engine, "okapi"))) == ["a.md", "b.md"]
    kb.mkdir()  # a mount point with its drive not mounted
    assert "is empty (a drive not mounted?)" in engine.workspace_status("kb")["root_problem"]
    kb.rmdir()
    (tmp_path / "elsewhere").rename(kb)  # back
    assert engine.workspace_status("kb")["root_problem"] is None


def test_an_empty_folder_with_nothing_indexed_is_no_problem(engine: Engine, kb: Path) -> None:
    engine.workspace_add("kb", str(kb))
    assert engine.workspace_add("kb", str(kb))["root_problem"] is None
    assert json.loads(json.dumps(engine.workspace_list()))[0]["root_problem"] is None
