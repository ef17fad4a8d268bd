"""The `autodoc` command line, run as real processes: every form the docs and tests use, options refused where
they mean nothing, and the commands a person types (search, related, status)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import PROJECT, autodoc, call, write


def text_of(done: subprocess.CompletedProcess) -> tuple[str, str]:
    return done.stdout.decode(), done.stderr.decode()


@pytest.mark.parametrize("misplaced", [["--allow-index"], ["--scan-seconds", "5"], ["--http", "127.0.0.1:0"],
                                       ["--stdio"]])
def test_an_option_given_where_it_means_nothing_is_refused(tmp_path: Path, misplaced: list[str]) -> None:
    """`--call` ran and ignored `--allow-index`, `--scan-seconds` and `--stdio` (one parser for every form):
    each subcommand now has its own options, and one given to another is an error naming it."""
    db = tmp_path / "a.db"
    done = autodoc(db, "--call", "workspace.list", "[]", *misplaced)
    out, err = text_of(done)
    assert done.returncode == 2 and out == "" and misplaced[0] in err, (out, err)
    assert "Traceback" not in err


def test_serve_and_mcp_refuse_each_others_options(tmp_path: Path) -> None:
    db = tmp_path / "a.db"
    served = autodoc(db, "serve", "--stdio", "--allow-index", stdin=b"")
    assert served.returncode == 2 and "--allow-index" in served.stderr.decode()
    served = autodoc(db, "serve", stdin=b"")
    assert served.returncode == 2 and "--stdio" in served.stderr.decode()
    mcp = autodoc(db, "mcp", "--stdio", stdin=b"")
    assert mcp.returncode == 2 and "--stdio" in mcp.stderr.decode()
    extra = autodoc(db, "--call", "workspace.list", "[]", "mcp")
    assert extra.returncode == 2 and "unrecognized arguments: mcp" in extra.stderr.decode()


def test_every_documented_form_still_works(tmp_path: Path, kb: Path) -> None:
    """The forms of the Makefile, the README and the tests: --db before or after the command, --call with and
    without params, serve --stdio."""
    db = tmp_path / "a.db"
    write(kb, "a.md", "# Alpha\n\nthe gecko note\n")
    assert call(db, "workspace.add", ["kb", str(kb)])[0] == 0
    listed = subprocess.run([sys.executable, "-m", "autodoc_core", "--call", "workspace.list", "--db", str(db)],
                            capture_output=True, cwd=PROJECT, timeout=60)
    assert listed.returncode == 0 and json.loads(listed.stdout)[0]["name"] == "kb"
    request = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "workspace.list", "params": []}).encode() + b"\n"
    for args in (["--db", str(db), "serve", "--stdio"], ["serve", "--stdio", "--db", str(db)]):
        served = subprocess.run([sys.executable, "-m", "autodoc_core", *args], input=request,
                                capture_output=True, cwd=PROJECT, timeout=60)
        assert served.returncode == 0 and json.loads(served.stdout)["result"][0]["name"] == "kb", args
    helped = subprocess.run([sys.executable, "-m", "autodoc_core", "mcp", "--help"], capture_output=True,
                            cwd=PROJECT, timeout=60, text=True)
    assert helped.returncode == 0 and "--allow-index" in helped.stdout and "--http" in helped.stdout
    assert "--call" not in helped.stdout


@pytest.fixture
def two_workspaces(tmp_path: Path, kb: Path) -> Path:
    db = tmp_path / "a.db"
    write(kb, "adr/0002.md", "# ADR 0002 Keep the index in SQLite\n\n## Decision\n\n"
                             "We keep every workspace in one embedded relational store.\n")
    write(kb, "notes/cooking.md", "# Cooking\n\n## Bread\n\nFlour, water, salt and yeast make bread.\n\n"
                                  "See [the store](../adr/0002.md).\n")
    rfcs = write(tmp_path / "rfcs", "0001-store.md", "# RFC 1 A relational store\n\n## Motivation\n\n"
                                                     "An embedded relational store for the index.\n").parent
    for name, root in (("kb", kb), ("rfcs", rfcs)):
        assert call(db, "workspace.add", [name, str(root)])[0] == 0
        assert call(db, "workspace.index", [name, {"wait": "lexical"}])[0] == 0
    return db


def test_search_prints_one_hit_a_line(two_workspaces: Path, kb: Path) -> None:
    """`autodoc search kb QUERY`: `path:line  breadcrumb  relevance` rows, nothing else on stdout; the path opens
    from here (a new user's walk: one workspace's rows gave paths inside its folder, which opened nothing from the
    shell's folder, while a search of several gave openable ones)."""
    done = autodoc(two_workspaces, "search", "kb", "relational", "store", "--limit", "5")
    out, err = text_of(done)
    assert done.returncode == 0, err
    rows = out.splitlines()
    place, crumb, relevance = [column.strip() for column in rows[0].split("  ") if column.strip()]
    assert place == f"{kb / 'adr' / '0002.md'}:3" and "Decision" in crumb and 0 < float(relevance) <= 1
    inside = subprocess.run([sys.executable, "-m", "autodoc_core", "--db", str(two_workspaces), "search", "@kb",
                             "relational", "store"], capture_output=True, text=True, cwd=kb / "adr", timeout=60)
    assert inside.stdout.splitlines()[0].startswith("0002.md:3 "), inside.stdout  # below here: relative
    answer = json.loads(autodoc(two_workspaces, "search", "kb", "relational store", "--json").stdout)
    assert answer["hits"][0]["path"] == "adr/0002.md" and answer["query"]["terms"] == ["relational", "store"]


def test_search_without_a_workspace_searches_every_one_and_names_it_on_each_row(two_workspaces: Path) -> None:
    done = autodoc(two_workspaces, "search", "relational", "store")
    out, err = text_of(done)
    assert done.returncode == 0, err
    workspaces = {row.split()[0] for row in out.splitlines()}
    assert workspaces == {"kb", "rfcs"}, out
    only = autodoc(two_workspaces, "search", "-w", "rfcs", "-w", "kb", "kb", "bread")
    out, _ = text_of(only)
    assert out.splitlines()[0].split()[0] == "kb", out


def test_search_of_several_workspaces_names_files_the_shell_opens(two_workspaces: Path, kb: Path) -> None:
    """Each row's path was relative to its workspace's folder: with several workspaces, nothing says where that
    is. Now it is the file from the current folder (relative below it, else absolute)."""
    for cwd in (kb.parent, PROJECT):
        done = subprocess.run([sys.executable, "-m", "autodoc_core", "--db", str(two_workspaces), "search",
                               "relational", "store"], capture_output=True, text=True, cwd=cwd, timeout=60)
        assert done.returncode == 0, done.stderr
        rows = [row.split() for row in done.stdout.splitlines()]
        assert {row[0] for row in rows} == {"kb", "rfcs"}, done.stdout
        for row in rows:
            path = Path(row[1].rsplit(":", 1)[0])
            assert path.is_absolute() == (cwd == PROJECT) and (cwd / path).is_file(), (cwd, row)


def test_search_names_its_query_alike_in_its_usage_and_its_error() -> None:
    """The usage said `QUERY...` and the error `required: WORDS`; the --db help read "$AUTODOC_DB, the same"."""
    done = subprocess.run([sys.executable, "-m", "autodoc_core", "search"], capture_output=True, text=True,
                          cwd=PROJECT, timeout=60)
    assert done.returncode == 2 and "QUERY..." in done.stderr and "required: QUERY" in done.stderr, done.stderr
    helped = subprocess.run([sys.executable, "-m", "autodoc_core", "--help"], capture_output=True, text=True,
                            cwd=PROJECT, timeout=60).stdout
    assert "search [@WORKSPACE...] QUERY..." in helped and "the same" not in helped, helped


def test_search_says_what_it_found_nothing_in_and_refuses_an_unknown_workspace(two_workspaces: Path) -> None:
    done = autodoc(two_workspaces, "search", "kb", "zebra")
    out, err = text_of(done)
    assert done.returncode == 0 and out == "" and "no hits for 'zebra' in kb" in err
    unknown = autodoc(two_workspaces, "search", "-w", "nosuch", "bread")
    out, err = text_of(unknown)
    assert unknown.returncode == 1 and out == "" and "nosuch" in err and "Traceback" not in err


def test_search_takes_at_names_as_the_editor_s_prompt_does(two_workspaces: Path) -> None:
    """A new user typed `autodoc search @kb lease` and every workspace was searched for '@kb lease': leading
    @name words choose the workspaces, and one that is no workspace is refused with the names there are."""
    one = json.loads(autodoc(two_workspaces, "search", "@rfcs", "relational", "store", "--json").stdout)
    assert one["scope"]["workspaces"] == ["rfcs"] and one["query"]["terms"] == ["relational", "store"]
    both = json.loads(autodoc(two_workspaces, "search", "@kb,rfcs relational store", "--json").stdout)
    assert both["scope"]["workspaces"] == ["kb", "rfcs"]
    every = json.loads(autodoc(two_workspaces, "search", "@*", "@kb", "bread", "--json").stdout)
    assert every["scope"]["asked"] == "*" and every["query"]["terms"] == ["bread"]
    unknown = autodoc(two_workspaces, "search", "@nosuch", "bread")
    out, err = text_of(unknown)
    assert unknown.returncode == 1 and out == "" and "nosuch" in err and "kb" in err and "rfcs" in err, err


def test_related_takes_a_file_and_a_line(two_workspaces: Path, kb: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "autodoc_core", "--db", str(two_workspaces), "related",
                           "notes/cooking.md:5", "-w", "kb"], capture_output=True, text=True, cwd=kb, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0].startswith("adr/0002.md:"), done.stdout
    absolute = autodoc(two_workspaces, "related", f"{kb / 'notes' / 'cooking.md'}:5")
    out, err = text_of(absolute)
    assert absolute.returncode == 0 and "adr/0002.md:" in out, err


def test_status_names_each_workspace_and_its_state(two_workspaces: Path) -> None:
    done = autodoc(two_workspaces, "status")
    out, err = text_of(done)
    assert done.returncode == 0, err
    assert "- kb: " in out and "- rfcs: " in out and "2 documents" in out
    one = json.loads(autodoc(two_workspaces, "status", "rfcs", "--json").stdout)
    assert [status["name"] for status in one] == ["rfcs"] and one[0]["documents"] == 1


@pytest.mark.parametrize("options", [["--json"], ["--limit", "2"], ["-n", "2", "--json"]])
def test_search_takes_its_options_anywhere(two_workspaces: Path, options: list[str]) -> None:
    """`autodoc search @kb --json relational` said `unrecognized arguments: relational` (exit 2): argparse ended
    the query at the first option. Words after an option are the query's too, in the order given."""
    done = autodoc(two_workspaces, "search", "@kb", *options, "relational", "store")
    out, err = text_of(done)
    assert done.returncode == 0, err
    if "--json" in options:
        answer = json.loads(out)
        assert answer["scope"]["workspaces"] == ["kb"] and answer["query"]["terms"] == ["relational", "store"]
    else:
        assert "/adr/0002.md:" in out.splitlines()[0] and len(out.splitlines()) <= 2, out
    between = autodoc(two_workspaces, "search", "@kb", "relational", "--limit", "1", "store", "--json")
    assert json.loads(between.stdout)["query"]["terms"] == ["relational", "store"], between.stderr
    status = autodoc(two_workspaces, "status", "--json", "rfcs")
    assert [one["name"] for one in json.loads(status.stdout)] == ["rfcs"], status.stderr
    wrong = autodoc(two_workspaces, "search", "@kb", "--nosuch", "store")
    assert wrong.returncode == 2 and "unrecognized arguments: --nosuch" in wrong.stderr.decode()


def test_search_says_when_no_section_has_the_words(tmp_path: Path, kb: Path) -> None:
    """`autodoc search @kb kangaroo` printed hits by meaning and nothing else; the picker says `no section has
    these words: by meaning only`, and so does the shell now, on stderr (stdout keeps the rows alone)."""
    db = tmp_path / "a.db"
    write(kb, "storage.md", "# Storage\n\n## Decision\n\nWe keep the index in an embedded relational database.\n")
    write(kb, "cooking.md", "# Cooking\n\n## Bread\n\nFlour, water, salt and yeast make bread.\n")
    assert call(db, "workspace.add", ["kb", str(kb)])[0] == 0
    assert call(db, "workspace.index", ["kb", {"wait": "semantic"}])[0] == 0
    done = autodoc(db, "search", "@kb", "kangaroo")
    out, err = text_of(done)
    assert done.returncode == 0 and out.splitlines(), (out, err)
    assert "no section has these words: by meaning only" in err and "no section" not in out, err
    worded = autodoc(db, "search", "@kb", "relational", "database")
    assert "no section has these words" not in worded.stderr.decode()


def related_in(cwd: Path, db: Path, *args: str) -> tuple[int, str, str]:
    done = subprocess.run([sys.executable, "-m", "autodoc_core", "--db", str(db), "related", *args],
                          capture_output=True, text=True, cwd=cwd, timeout=60)
    return done.returncode, done.stdout, done.stderr


def test_related_errors_speak_of_the_command_line(two_workspaces: Path, kb: Path) -> None:
    """`autodoc related nosuch.md` and `…md:abc` said `needs the source's workspace … name it (opts.workspace)`,
    and a file skipped as binary `is not indexed yet (index it (workspace.index [...]))`: now no such file, LINE
    must be a number, the indexer's own reason, and -w where a workspace must be chosen."""
    (kb / "diagram.md").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)))
    assert call(two_workspaces, "workspace.index", ["kb", {"wait": "lexical"}])[0] == 0
    status, out, err = related_in(kb, two_workspaces, "nosuch.md")
    assert status == 1 and out == "" and err.startswith("autodoc related: no such file: nosuch.md"), err
    status, out, err = related_in(kb, two_workspaces, "adr/0002.md:abc")
    assert status == 2 and "LINE must be a number, got 'abc'" in err, err
    status, out, err = related_in(kb, two_workspaces, "diagram.md")
    assert status == 1 and "diagram.md is not indexed: binary content (NUL bytes)" in err, err
    write(two_workspaces.parent / "rfcs", "adr/0002.md", "# Also here\n\nA second copy of the store note.\n")
    assert call(two_workspaces, "workspace.index", ["rfcs", {"wait": "lexical"}])[0] == 0
    status, out, err = related_in(PROJECT, two_workspaces, "adr/0002.md")
    assert status == 1 and "in several workspaces (kb, rfcs)" in err and "-w NAME" in err, err
    for said in (err, related_in(kb, two_workspaces, "nosuch.md")[2], related_in(kb, two_workspaces, "diagram.md")[2]):
        assert "opts." not in said and "workspace.index [" not in said and "Traceback" not in said, said


def test_status_lists_the_file_problems_it_counts(two_workspaces: Path, kb: Path) -> None:
    """`autodoc status` printed `2 file problems` with no way to list them from the shell: it says how, and
    `--problems` lists each as `path:line  kind: reason`, at the line the reason names."""
    write(kb, "broken.md", "---\ntitle: x\ntags: [unclosed\nmore: : here\n---\n# Broken\n\ntext\n")
    (kb / "diagram.md").write_bytes(b"\x89PNG\x00\x00 not text")
    assert call(two_workspaces, "workspace.index", ["kb", {"wait": "lexical"}])[0] == 0
    out, err = text_of(autodoc(two_workspaces, "status", "kb"))
    assert "2 file problems" in out and "autodoc status --problems lists the 2 file problems" in err, (out, err)
    done = autodoc(two_workspaces, "status", "--problems", "kb")
    out, err = text_of(done)
    rows = [row for row in out.splitlines() if not row.startswith(("- ", "  "))]
    assert done.returncode == 0 and len(rows) == 2, out
    broken, diagram = sorted(rows)
    line = int(broken.split()[0].rsplit(":", 1)[1])
    assert broken.startswith("broken.md:") and line > 1 and f"line {line}" in broken, broken
    assert diagram.startswith("diagram.md:1  skipped: binary content"), diagram
    both = text_of(autodoc(two_workspaces, "status", "--problems"))[0]
    assert "kb  broken.md:" in both, both  # several workspaces: each row names its own


def test_search_takes_an_excluded_word_or_facet_as_a_word_of_its_query(two_workspaces: Path) -> None:
    """`autodoc search type:adr -status:superseded` (the README's example) said `unrecognized arguments:
    -status:superseded`, and `autodoc search -status:accepted` that QUERY was missing: a dashed word that names
    none of search's options is a word of the query."""
    done = autodoc(two_workspaces, "search", "@kb", "relational", "-status:superseded", "--json")
    assert done.returncode == 0, done.stderr
    query = json.loads(done.stdout)["query"]
    assert query["terms"] == ["relational"] and "'-status:superseded' was left out" in query["problems"][0], query
    alone = autodoc(two_workspaces, "search", "@kb", "-status:superseded", "-n", "1")
    assert alone.returncode != 2 and "-status:superseded" in alone.stderr.decode(), alone.stderr


def test_search_of_an_empty_default_database_points_to_make_run_s(tmp_path: Path, kb: Path) -> None:
    """The walk: workspaces added in the editor `make run` opened, then `autodoc search` from the project's
    folder read the default database (empty) and said only "no workspace to search yet"."""
    run_db = tmp_path / ".run" / "autodoc.db"
    run_db.parent.mkdir()
    call(run_db, "workspace.add", ["kb", str(kb)])
    env = {"PATH": str(Path(sys.executable).parent), "AUTODOC_DB": str(tmp_path / "default" / "autodoc.db"),
           "HOME": str(tmp_path)}
    (tmp_path / "default").mkdir()
    done = subprocess.run([sys.executable, "-m", "autodoc_core", "search", "relational store"], capture_output=True,
                          text=True, cwd=tmp_path, env=env, timeout=60)
    assert done.returncode == 1 and done.stderr.startswith("autodoc search: no workspace to search yet"), done.stderr
    assert "(the editor of make run keeps its index in .run/autodoc.db: add --db .run/autodoc.db)" in done.stderr
    elsewhere = subprocess.run([sys.executable, "-m", "autodoc_core", "search", "relational store"],
                               capture_output=True, text=True, cwd=tmp_path / "default", env=env, timeout=60)
    assert elsewhere.returncode == 1 and "make run" not in elsewhere.stderr, elsewhere.stderr  # none here
