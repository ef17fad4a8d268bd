"""The engine's search answers are typed records; their JSON shape is made in one place (SearchAnswer.to_wire)."""

from __future__ import annotations

import json
from pathlib import Path

from autodoc_core.rank.hits import Hit
from autodoc_core.search.answer import SearchAnswer
from autodoc_core.search.stages import Stage
from autodoc_core.search.stream import SearchStream
from autodoc_core.surface import rpc
from tests.conftest import write


def _without_timing(answer: dict) -> dict:
    return {key: value for key, value in answer.items() if key != "timing"}


def test_search_returns_a_typed_answer_whose_wire_form_is_what_json_rpc_sends(engine, kb: Path) -> None:
    write(kb, "a.md", "# Gecko\n\nThe gecko climbs walls.\n")
    write(kb, "b.md", "# Heron\n\nThe heron waits by the water.\n")
    engine.workspace_add("kb", str(kb))
    engine.workspace_configure("kb", {"embedder": "none"})
    engine.workspace_index("kb")
    answer = engine.search_query("kb", "gecko walls", {"stages": ["lexical"]})
    assert isinstance(answer, SearchAnswer)
    assert [type(hit) for hit in answer.hits] == [Hit] and answer.hits[0].path == "a.md"
    assert answer.performed == [Stage.LEXICAL] and answer.report.query_info.strategy is not None
    sent = rpc.call(engine, "search.query", ["kb", "gecko walls", {"stages": ["lexical"]}])
    assert _without_timing(sent) == _without_timing(answer.to_wire())
    assert json.loads(json.dumps(sent)) == sent  # plain JSON: the Stage members went out as strings
    assert sent["stages"] == {"requested": ["lexical"], "performed": ["lexical"], "skipped": {}}


def test_a_partial_answer_is_a_snapshot_the_rest_of_the_search_does_not_change(engine, kb: Path) -> None:
    write(kb, "a.md", "# Gecko\n\nThe gecko climbs walls.\n")
    engine.workspace_add("kb", str(kb))
    engine.workspace_index("kb", {"wait": "semantic"})
    partials: list[dict] = []
    final = engine.search("kb", "gecko", None, SearchStream(on_partial=partials.append))
    [partial] = partials
    assert partial["partial"] is True and partial["stages"]["pending"] == ["semantic"]
    assert partial["stages"]["performed"] == ["lexical"]  # the semantic stage ran after it was handed over
    assert final.performed == [Stage.LEXICAL, Stage.SEMANTIC] and final.pending is None
    assert "partial" not in final.to_wire() and "pending" not in final.to_wire()["stages"]
