"""The README points into the help and the benchmark files, and every one of its pointers leads somewhere
(issue 51.12: the README became short by moving its details to `:help`, so a broken pointer loses a fact)."""

from __future__ import annotations

import re

from tests.conftest import PROJECT

README = PROJECT / "README.md"
HELP_TOPIC = re.compile(r":help\s+([^\s`]+)")
REPO_PATH = re.compile(r"`((?:doc|tests|scripts|lua|plugin)/[^`\s]*[a-z])`")
# A measured figure: a rate or duration, or a score such as 0.845.
FIGURE = re.compile(r"\b0\.\d{3}\b|\b\d[\d,]*(?:\.\d+)?(?:-\d+(?:\.\d+)?)? ?(?:ms|s|searches/s)\b")
BENCHMARK_FILE = re.compile(r"doc/benchmarks/[\w.-]+\.md")
# Written on other branches while this README was: each must leave this list once it exists (all have).
PENDING: set[str] = set()


def readme_prose() -> list[str]:
    """The README's paragraphs (and table rows, list items), code blocks left out."""
    prose = re.sub(r"```.*?```", "", README.read_text(encoding="utf-8"), flags=re.S)
    return [p for p in re.split(r"\n\s*\n", prose) if p.strip()]


def help_tags() -> set[str]:
    return set(re.findall(r"\*([^*\s]+)\*", (PROJECT / "doc" / "autodoc.txt").read_text(encoding="utf-8")))


def test_every_help_topic_the_readme_names_is_a_tag_of_the_help() -> None:
    named = {topic for paragraph in readme_prose() for topic in HELP_TOPIC.findall(paragraph)}
    assert len(named) > 10  # the parse found them
    tags = help_tags() | {"autodoc"}
    assert named - tags - PENDING == set()
    assert PENDING & tags == set(), "a pending tag exists now: take it off PENDING"


def test_every_file_the_readme_names_exists() -> None:
    named = {path for paragraph in readme_prose() for path in REPO_PATH.findall(paragraph)}
    assert "doc/benchmarks/README.md" in named
    missing = {path for path in named if not (PROJECT / path).exists()}
    assert missing - PENDING == set()
    assert {p for p in PENDING if "/" in p and (PROJECT / p).exists()} == set(), \
        "a pending file exists now: take it off PENDING"


def test_every_figure_in_the_readme_names_the_benchmark_file_it_comes_from() -> None:
    """A paragraph that quotes a measured figure names a file in doc/benchmarks/ (written by `make bench`)."""
    unsourced = [p.strip()[:80] for p in readme_prose() if FIGURE.search(p) and not BENCHMARK_FILE.search(p)]
    assert unsourced == []
    named = {name for p in readme_prose() for name in BENCHMARK_FILE.findall(p)}
    assert named and all((PROJECT / name).exists() for name in named), named


def test_every_benchmark_file_is_listed_in_the_benchmarks_readme() -> None:
    listed = (PROJECT / "doc" / "benchmarks" / "README.md").read_text(encoding="utf-8")
    files = sorted(p.name for p in (PROJECT / "doc" / "benchmarks").glob("*.md") if p.name != "README.md")
    assert [name for name in files if f"`{name}`" not in listed] == []


def test_the_readme_set_up_commands_are_make_targets() -> None:
    makefile = (PROJECT / "Makefile").read_text(encoding="utf-8")
    for target in ("run", "test", "install", "bench"):
        assert re.search(rf"^{target}:", makefile, re.M), target
    assert "make run" in README.read_text(encoding="utf-8") and "make test" in README.read_text(encoding="utf-8")


def test_the_readme_stays_short() -> None:
    """A newcomer's page: what it is, two commands, a set-up, the keys and commands; the rest is in `:help`."""
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 280 and len(text.split()) <= 2800  # 546 and 6,000 before issue 51.12
    assert all(len(p.split()) < 200 for p in readme_prose()), "a paragraph over 200 words belongs in :help"


def test_the_help_has_the_sections_the_readme_moved_there() -> None:
    """Set-up details, the test suite, the layout and the benchmarks left the README for these sections."""
    assert {"autodoc-setup", "autodoc-tests", "autodoc-layout", "autodoc-benchmarks"} <= help_tags()
