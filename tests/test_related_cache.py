"""What makes search.related cheaper answers the same: its distinctive words remembered per index generation
(and made anew after any edit), the lexical search on FTS5's fast path with abstracts dropped afterwards,
snippets found without compiling a pattern, and the vector index's eligible count kept until it changes."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from autodoc_core.rank.hits import first_word_at
from autodoc_core.retrieve.semantic import VectorIndex, sign_bits, to_words
from autodoc_core.service.engine import Engine
from tests.conftest import paths, write
from tests.related_corpus import lexical_workspace, notes, related


def test_a_document_s_words_are_remembered_until_an_edit(engine: Engine, kb: Path) -> None:
    notes(kb)
    write(kb, "zoo.md", "# Zoo\n\n## Pool\n\nThe gecko swims past the gecko enclosure.\n")
    write(kb, "ocean.md", "# Ocean\n\nA walrus dives under the ice; the walrus surfaces.\n")
    lexical_workspace(engine, kb)
    first = related(engine, "zoo.md")
    assert "gecko" in first["query"]["terms"] and "walrus" not in first["query"]["terms"]
    hits_before = engine.caches.words_remembered
    assert related(engine, "zoo.md")["query"]["terms"] == first["query"]["terms"]
    assert engine.caches.words_remembered == hits_before + 1  # the second ask read them from the memo
    write(kb, "zoo.md", "# Zoo\n\n## Pool\n\nThe gecko swims past the gecko enclosure.\n\n"
                        "## Ice\n\nA walrus naps; the walrus snores.\n")  # the same document, a section more
    engine.workspace_index("kb")
    after = related(engine, "zoo.md")
    assert engine.caches.words_remembered == hits_before + 1  # the edit moved the generation: made anew
    assert "walrus" in after["query"]["terms"] and "ocean.md" in paths(after)


def test_a_workspace_made_again_in_the_same_place_does_not_get_the_old_words(engine: Engine, tmp_path: Path) -> None:
    # Removed and added again, a workspace takes the same id, and its documents the same section ids and
    # generations: only what the memo is keyed by beyond those tells the two apart.
    for name, word in (("one", "gecko"), ("two", "walrus")):
        root = tmp_path / name
        write(root, "a.md", f"# A\n\n## Part\n\nThe {word} naps in the {word} house.\n")
        write(root, "b.md", f"# B\n\nA {word} again.\n")
        write(root, "c.md", "# C\n\nNothing alike.\n")
        engine.workspace_add(name, str(root))
        engine.workspace_configure(name, {"embedder": "none"})
        engine.workspace_index(name)
        answer = engine.search_related(name, "a.md", {"line": 5}).to_wire()
        assert answer["query"]["terms"] == [word] and paths(answer) == ["b.md"]
        engine.workspace_remove(name)


def test_two_engines_on_two_databases_remember_apart(tmp_path: Path) -> None:
    # Each engine owns what its searches remember: a memo shared between them would count both engines'
    # workspaces and both engines' second asks.
    engines = [Engine(tmp_path / f"{word}.db") for word in ("gecko", "walrus")]
    try:
        for engine, word in zip(engines, ("gecko", "walrus"), strict=True):
            root = tmp_path / word
            write(root, "a.md", f"# A\n\n## Part\n\nThe {word} naps in the {word} house.\n")
            write(root, "b.md", f"# B\n\nA {word} again.\n")
            lexical_workspace(engine, root)
            for _ in range(2):
                assert engine.search_related("kb", "a.md", {"line": 5}).to_wire()["query"]["terms"] == [word]
        for engine in engines:
            assert engine.caches.words_remembered == 1  # its own second ask, not the other engine's
            assert len(engine.caches.average_tokens) == 1  # its own workspace only
    finally:
        for engine in engines:
            engine.close()


def test_a_document_and_its_sections_are_remembered_apart(engine: Engine, kb: Path) -> None:
    notes(kb)
    lexical_workspace(engine, kb)
    section = related(engine, "storage.md", line=13)
    whole = related(engine, "storage.md")
    assert related(engine, "storage.md")["query"]["terms"] == whole["query"]["terms"]
    assert related(engine, "storage.md", line=13)["query"]["terms"] == section["query"]["terms"]
    assert section["query"]["terms"] != whole["query"]["terms"]


def hit_keys(answer: dict) -> list[tuple[str, str, list[str]]]:
    return [(hit["path"], hit["breadcrumb"], hit["via"]) for hit in answer["hits"]]


def test_abstracts_are_left_out_as_the_filtered_search_leaves_them_out(engine: Engine, kb: Path) -> None:
    # With abstracts left out (not the default): forty match the words better than any section, more than
    # the fast path's slack, so it falls back to the filtered search; ten it drops itself. A facet every
    # document has forces the filtered search (a join per match): both answers must be the same.
    for number in range(40):
        filler = " ".join(f"filler{number}x{n}" for n in range(number % 7))
        write(kb, f"doc{number:02d}.md",
              f"---\nstatus: accepted\nabstract: gecko quorum replicas {filler}\n---\n# Doc {number}\n\n"
              f"## Body\n\nThe gecko service {filler} runs quorum replicas here and there, case {number}.\n")
    write(kb, "source.md", "---\nstatus: accepted\n---\n# Source\n\n## Votes\n\nHow do gecko quorum replicas vote?\n")
    lexical_workspace(engine, kb)
    engine.workspace_configure("kb", {"abstract_chunk": False})
    assert any(hit["kind"] == "abstract" for hit in related(engine, "source.md", line=7,
                                                            retrieval={"abstract_chunk": True})["hits"])
    for limit in (10, 60):
        fast = related(engine, "source.md", line=7, limit=limit)
        filtered = related(engine, "source.md", line=7, limit=limit, facets={"status": "accepted"})
        assert hit_keys(fast) == hit_keys(filtered) and len(fast["hits"]) == min(limit, 40)  # 40 sections
        assert all(hit["kind"] == "section" for hit in fast["hits"])
    for number in range(10, 40):
        write(kb, f"doc{number:02d}.md", f"---\nstatus: accepted\n---\n# Doc {number}\n\nNothing here {number}.\n")
    engine.workspace_index("kb")
    fast = related(engine, "source.md", line=7, limit=30)
    filtered = related(engine, "source.md", line=7, limit=30, facets={"status": "accepted"})
    assert hit_keys(fast) == hit_keys(filtered) and all(hit["kind"] == "section" for hit in fast["hits"])


def regex_first_word_at(body: str, stems: list[str]) -> int:
    found = re.search("|".join(re.escape(s) for s in stems), body, re.IGNORECASE) if stems else None
    return found.start() if found else -1


ASCII_TEXT = st.text(alphabet="abcKSksz \n-_.", max_size=80)


@given(ASCII_TEXT, st.lists(st.text(alphabet="abcKSksz", min_size=1, max_size=4), max_size=5))
def test_a_snippet_finds_the_first_word_as_the_case_blind_pattern_did(body: str, stems: list[str]) -> None:
    assert first_word_at(body, stems) == regex_first_word_at(body, stems)


def test_outside_ascii_the_case_blind_pattern_still_decides() -> None:
    # Unicode case-blind matching is more than lower(): a long s is an s, the Kelvin sign a k.
    for body, stems in [("Die İstanbul Straße", ["istanbul", "strasse"]), ("The ſtate of Kelvin", ["state", "k"]),
                        ("ΣΊΣΥΦΟΣ rolls", ["σίσυφ"]), ("the state body", ["ſtate"])]:
        assert first_word_at(body, stems) == regex_first_word_at(body, stems)


def test_the_index_counts_its_eligible_vectors_again_when_they_change() -> None:
    rng = np.random.default_rng(5)
    vectors = rng.standard_normal((600, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    index = VectorIndex(0, "synthetic")
    index.vectors, index.codes = vectors, np.ascontiguousarray(to_words(sign_bits(vectors)).T)
    index.chunk_ids = np.arange(600, dtype=np.int64)
    index.doc_ids = index.chunk_ids // 10
    index.eligible = np.ones(600, dtype=bool)
    assert len(index) == 600 and 3 in index.search(vectors[3], None).chunk_ids
    index.eligible = index.doc_ids != 0  # a document's vectors no longer complete (a refresh replaces the array)
    assert len(index) == 590
    assert not set(index.search(vectors[3], None).chunk_ids) & set(range(10))
    index.eligible = np.zeros(600, dtype=bool)
    assert len(index) == 0
