"""Chinese, Japanese and Korean text in the lexical stage (issue 33), on real indexed files."""

from __future__ import annotations

from pathlib import Path

import pytest

from autodoc_core.index.indexer import Indexer, IndexProgress
from autodoc_core.parse.cjk import index_text, query_text
from autodoc_core.store.chunks import fts_table
from tests.conftest import paths, search, write

LEXICAL = {"stages": ["lexical"]}


@pytest.fixture
def notes(engine, kb: Path, indexed):
    write(kb, "zh/storage.md", """
        ---
        title: 数据库选型
        tags: [数据库]
        ---
        # 数据库选型

        我们选择 SQLite，因为嵌入式数据库不需要单独的服务进程。每个事务都写入预写日志。
        """)
    write(kb, "zh/raft.md", "# 共识\n\nRaft 协议通过选主来保证只有一个节点接受写入。\n")
    write(kb, "ja/oncall.md", """
        # 運用

        オンコール担当者は毎朝バックアップの結果を確認します。Vec の所有権は関数に移動します。
        """)
    write(kb, "ko/backup.md", "# 백업\n\n데이터베이스를 매일 밤 백업하고 복구 절차를 분기마다 연습합니다.\n")
    write(kb, "en/wide.md", "# Codes\n\nThe ABC123 form is printed on every label.\n")
    write(kb, "en/plain.md", "# Plain\n\nEmbedded databases need no server process. Raft elects a leader.\n")
    indexed()
    return engine


@pytest.mark.parametrize(("query", "expected"), [
    ("事务", "zh/storage.md"),  # two characters, inside a clause
    ("嵌入式", "zh/storage.md"),  # three: the phrase of its bigrams
    ("オンコール", "ja/oncall.md"),  # Katakana with the prolonged-sound mark
    ("バックアップ", "ja/oncall.md"),
    ("確認", "ja/oncall.md"),  # Han between kana
    ("데이터베이스", "ko/backup.md"),  # Hangul, a particle attached (데이터베이스를)
    ("복구", "ko/backup.md"),
])
def test_a_body_word_in_each_script_is_found_by_its_words(notes, query: str, expected: str) -> None:
    answer = search(notes, query, **LEXICAL)
    assert paths(answer) == [expected]
    assert answer["hits"][0]["via"] == ["lexical"]


def test_a_word_that_is_not_in_the_text_is_not_found(notes) -> None:
    # Both bigrams (数据, 事务) stand in zh/storage.md, but never as 数据事务: the phrase must hold.
    assert paths(search(notes, '"数据事务"', **LEXICAL)) == []


def test_mixed_queries_match_both_scripts(notes) -> None:
    assert paths(search(notes, "Vec 所有権", **LEXICAL)) == ["ja/oncall.md"]
    assert paths(search(notes, "Raft 选主", **LEXICAL))[0] == "zh/raft.md"  # en/plain.md has Raft alone


def test_a_quoted_cjk_phrase_and_a_prefix(notes) -> None:
    assert paths(search(notes, '"毎朝バックアップ"', **LEXICAL)) == ["ja/oncall.md"]
    assert paths(search(notes, "预写*", **LEXICAL)) == ["zh/storage.md"]


def test_a_one_character_query_matches_where_the_character_stands(notes) -> None:
    # 库 ends its run in 数据库 and 嵌入式数据库, 朝 stands inside 毎朝バックアップ, 밤 is a run of its own.
    assert paths(search(notes, "库", **LEXICAL)) == ["zh/storage.md"]
    assert paths(search(notes, "朝", **LEXICAL)) == ["ja/oncall.md"]
    assert paths(search(notes, "밤", **LEXICAL)) == ["ko/backup.md"]


def test_a_cjk_tag_is_a_facet_and_a_word(notes) -> None:
    listed = search(notes, "tag:数据库")
    assert paths(listed) == ["zh/storage.md"]
    assert listed["stages"]["performed"] == ["facet"]
    assert paths(search(notes, "事务 tag:数据库", **LEXICAL)) == ["zh/storage.md"]
    assert paths(search(notes, "事务 -tag:数据库", **LEXICAL)) == []


def test_full_width_forms_match_their_ascii_twins(notes, kb: Path, indexed) -> None:
    assert paths(search(notes, "ＡＢＣ１２３", **LEXICAL)) == ["en/wide.md"]
    write(kb, "en/typed-wide.md", "# Ｗｉｄｅ\n\nＳＱＬｉｔｅ ｶﾀｶﾅ\n")
    indexed()
    assert set(paths(search(notes, "sqlite", **LEXICAL))) == {"en/typed-wide.md", "zh/storage.md"}
    assert paths(search(notes, "カタカナ", **LEXICAL)) == ["en/typed-wide.md"]  # half-width katakana folded


def test_a_long_cjk_run_typed_without_spaces_finds_its_words(notes) -> None:
    # Not a substring of any note: its bigrams (单独, 服务, 进程, ...) are searched as words instead.
    answer = search(notes, "单独服务进程在哪里", **LEXICAL)
    assert paths(answer)[0] == "zh/storage.md"
    assert answer["query"]["strategy"] == "or"


def test_latin_text_is_given_to_the_index_unchanged() -> None:
    text = "The write-ahead log (WAL) — naïve café, ﬁle ², İstanbul: 3.14 x_y"
    assert index_text(text) is text
    assert query_text("naïve café") == ("naïve café", False)


def test_cjk_runs_become_bigrams_and_their_last_character() -> None:
    assert index_text("用数据库。") .split() == ["用数", "数据", "据库", "库", "。"]
    assert query_text("数据库") == (" 数据 据库 ", False)
    assert query_text("库") == (" 库 ", True)
    assert index_text("か\u3099") .split() == ["が"]  # a decomposed voiced kana is one letter


def test_one_cjk_word_found_whole_lists_only_the_notes_that_hold_it(engine, kb: Path, indexed) -> None:
    write(kb, "whole.md", "# 一\n\nプラグインにアタッチして使います。\n")
    write(kb, "parts.md", "# 二\n\nアタリとマッチは別の言葉です。\n")  # アタ and ッチ, never アタッチ
    indexed()
    answer = search(engine, "アタッチ", **LEXICAL)
    assert paths(answer) == ["whole.md"]
    assert answer["query"]["strategy"] == "and"


def test_a_mostly_cjk_query_says_the_default_model_is_english_only(notes, kb: Path) -> None:
    notes.workspace_index("kb", {"wait": "semantic"})  # the default local model, all its vectors made
    hybrid = search(notes, "事务")
    assert hybrid["stages"]["performed"] == ["lexical"]
    assert "English-only" in hybrid["stages"]["skipped"]["semantic"]
    assert "multilingual" in hybrid["stages"]["skipped"]["semantic"]
    assert paths(hybrid) == ["zh/storage.md"]  # no unrelated nearest sections beside the word match
    by_meaning = search(notes, "嵌入式", stages=["semantic"])  # asked for: given, and said
    assert by_meaning["stages"]["performed"] == ["semantic"]
    assert any("English-only" in problem for problem in by_meaning["query"]["problems"])
    mixed = search(notes, "Raft leader election 选主")  # mostly English: meaning search still helps
    assert "semantic" in mixed["stages"]["performed"]
    assert not any("English-only" in problem for problem in mixed["query"]["problems"])


def _as_indexed_before_bigrams(engine, ws_id: int) -> None:
    """The index as PARSER_VERSION 6 left it: the word index held each text as it is, not its CJK bigrams."""
    table = fts_table(ws_id)
    with engine.store.exclusive(), engine.store.write() as conn:
        conn.execute("UPDATE documents SET chunked_with = 'p6' || substr(chunked_with, 3) WHERE ws_id = ?", (ws_id,))
        for chunk_id, breadcrumb, body in conn.execute("SELECT id, breadcrumb, body FROM chunks WHERE ws_id = ?",
                                                       (ws_id,)).fetchall():
            conn.execute(f"DELETE FROM {table} WHERE rowid = ?", (chunk_id,))
            conn.execute(f"INSERT INTO {table}(rowid, head, body) VALUES (?, ?, ?)", (chunk_id, breadcrumb, body))


def test_an_index_of_before_is_rewritten_once_keeping_every_section(notes) -> None:
    ws = notes._workspace("kb")
    with notes.store.snapshot() as conn:
        chunks_before = conn.execute("SELECT id, text_hash FROM chunks WHERE ws_id = ? ORDER BY id",
                                     (ws.id,)).fetchall()
    _as_indexed_before_bigrams(notes, ws.id)
    assert paths(search(notes, "事务", **LEXICAL)) == []  # what users saw before
    progress = IndexProgress()
    report = Indexer(notes.store, ws, progress).run()
    assert (report.changed, report.chunks_written, report.chunks_kept) == (6, 0, len(chunks_before))
    assert (progress.to_write, progress.written) == (6, 6)  # workspace.status shows this run's progress
    with notes.store.snapshot() as conn:
        assert conn.execute("SELECT id, text_hash FROM chunks WHERE ws_id = ? ORDER BY id",
                            (ws.id,)).fetchall() == chunks_before  # the same rows: their vectors stay
    assert paths(search(notes, "事务", **LEXICAL)) == ["zh/storage.md"]
    again = notes.workspace_index("kb")
    assert (again["changed"], again["unchanged"]) == (0, 6)  # once


def test_an_identifier_in_cjk_text_is_found_by_the_symbol_backstop(engine, kb: Path, indexed) -> None:
    write(kb, "zh/vec.md", "# 向量\n\n使用`Vec::with_capacity`预先分配内存，之后再调用`push`。\n")
    write(kb, "zh/other.md", "# 其他\n\n这里没有标识符，只有中文说明。\n")
    indexed()
    answer = search(engine, "Vec::with_capacity", **LEXICAL)
    assert paths(answer)[0] == "zh/vec.md"


def test_the_snippet_of_a_long_cjk_section_shows_the_word_it_matched(engine, kb: Path, indexed) -> None:
    clause = "这一段只是为了让正文足够长而写的说明文字。"
    write(kb, "zh/long.md", "# 日志\n\n" + clause * 20 + "每个事务都写入预写日志。" + clause * 5 + "\n")
    indexed()
    hit = search(engine, "事务", **LEXICAL)["hits"][0]
    assert hit["path"] == "zh/long.md"
    assert "事务" in hit["snippet"] and hit["snippet"].startswith("…")
