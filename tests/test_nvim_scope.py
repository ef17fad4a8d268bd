"""Which workspaces a search covers, read in the editor (lua/autodoc/session/scope.lua): the prompt's and the
commands' `@name` words, `<M-w>`'s round, what the engine is sent, and a row of a search over several
workspaces, fitted to its width (:help autodoc-scope). A child Neovim with two workspaces it is told of; the
searches themselves are in tests/test_nvim_every_workspace.py."""

from __future__ import annotations

import re

import pynvim
import pytest

from tests.conftest import PROJECT
from tests.nvim import neovim, rtp

KNOWN = "local s = require('autodoc.state'); s.workspaces.kb = '/notes/kb'; s.workspaces.rfcs = '/notes/rfcs'\n"
SCOPE = "require('autodoc.session.scope')"


@pytest.fixture(scope="module")
def nvim(tmp_path_factory: pytest.TempPathFactory) -> pynvim.Nvim:
    tmp_path = tmp_path_factory.mktemp("scope")
    with neovim(tmp_path, rtp(PROJECT) + KNOWN) as instance:
        yield instance


def parse(nvim: pynvim.Nvim, prompt: str, default: object = None) -> list:
    return nvim.exec_lua(f"local prompt, default = ...; return {{ {SCOPE}.parse(prompt, default, {SCOPE}.names()) }}",
                         prompt, default)


@pytest.mark.parametrize(("prompt", "scope", "query"), [
    ("@kb @rfcs crash", ["kb", "rfcs"], "crash"),
    ("@kb,rfcs crash", ["kb", "rfcs"], "crash"),
    ("@rfcs @kb @rfcs crash safety", ["rfcs", "kb"], "crash safety"),  # in order, each once
    ("@* crash", "*", "crash"),
    ("@kb,* crash", "*", "crash"),
    ("@kb ", ["kb"], ""),
    ("@kb", ["kb"], ""),
])
def test_at_words_name_the_workspaces(nvim: pynvim.Nvim, prompt: str, scope: object, query: str) -> None:
    found = parse(nvim, prompt, "*")
    assert found[:2] == [scope, query] and found[3] is True, found
    assert len(found) == 4 or found[2] is None


def test_a_prompt_without_at_words_keeps_the_session_s_scope(nvim: pynvim.Nvim) -> None:
    assert parse(nvim, "crash @kb", ["kb"])[:2] == [["kb"], "crash @kb"]
    assert parse(nvim, "crash", "*")[:2] == ["*", "crash"]


@pytest.mark.parametrize(("prompt", "unknown"), [
    ("@kb @nope crash", "no workspace 'nope'"),
    ("@nope,kb crash", "no workspace 'nope'"),
    ("@ crash", "'@' names no workspace"),
    ("@rfc @kb crash", "no workspace 'rfc': did you mean @rfcs?"),  # a typo is named as one
    ("@KB crash", "no workspace 'KB': did you mean @kb?"),
    ("@rfsc crash", "no workspace 'rfsc': did you mean @rfcs?"),  # two letters swapped (the walk: `@kesp`)
])
def test_a_name_that_is_no_workspace_is_said_with_the_names_there_are(
        nvim: pynvim.Nvim, prompt: str, unknown: str) -> None:
    """`@kb @rfcs crash` searched kb for `@rfcs crash`: no `@name` is dropped without a word."""
    found = parse(nvim, prompt, "*")
    assert found[2] == f"autodoc: {unknown} (there are @kb @rfcs; @* is every one)", found
    assert found[3] is True


def test_a_name_being_typed_lists_the_names_to_pick_from(nvim: pynvim.Nvim) -> None:
    """Those the typed part begins (a walk: `@myn` listed every workspace), else every one."""
    assert parse(nvim, "@kb @rf", "*")[2] == "workspaces: @rfcs @*"
    assert parse(nvim, "@kb,r", "*")[2] == "workspaces: @rfcs @*"
    assert parse(nvim, "@x", "*")[2] == "workspaces: @kb @rfcs @*"


def test_m_w_goes_round_every_workspace_then_each(nvim: pynvim.Nvim) -> None:
    round_trip = nvim.exec_lua(f"""
        local scope, names, seen = '*', {SCOPE}.names(), {{}}
        for _ = 1, 4 do scope = {SCOPE}.next(scope, names); table.insert(seen, scope) end
        return seen""")
    assert round_trip == [["kb"], ["rfcs"], "*", ["kb"]]
    assert nvim.exec_lua(f"return {SCOPE}.next({{ 'kb', 'rfcs' }}, {SCOPE}.names())") == "*"


def test_the_engine_is_sent_a_name_a_list_or_every_workspace(nvim: pynvim.Nvim) -> None:
    wire = nvim.exec_lua(f"return {{ {SCOPE}.wire({{ 'kb' }}), {SCOPE}.wire({{ 'kb', 'rfcs' }}), {SCOPE}.wire('*') }}")
    assert wire == ["kb", ["kb", "rfcs"], "*"]
    source = "{ workspace = 'kb', root = '/notes/kb', path = 'a.md', line = 3 }"
    related = nvim.exec_lua(f"""local source = {source}; return {{
        {SCOPE}.related_params({{ 'kb' }}, source, {{ limit = 5 }}),
        {SCOPE}.related_params({{ 'rfcs' }}, source, {{ limit = 5 }}),
        {SCOPE}.related_params('*', source, {{ limit = 5 }}) }}""")
    assert related[0] == ["kb", "a.md", {"limit": 5, "line": 3}]  # the section's own workspace, as before
    assert related[1] == [["rfcs"], "a.md", {"limit": 5, "line": 3, "workspace": "kb"}]
    assert related[2] == ["*", "a.md", {"limit": 5, "line": 3, "workspace": "kb"}]


def test_commands_take_the_scope_as_typed_and_resolve_it_against_the_workspaces(nvim: pynvim.Nvim) -> None:
    resolve = f"local value = ...; return {{ {SCOPE}.resolve(value, {SCOPE}.names()) }}"
    assert nvim.exec_lua(resolve, "@kb @rfcs") == [["kb", "rfcs"]]
    assert nvim.exec_lua(resolve, ["rfcs", "kb", "rfcs"]) == [["rfcs", "kb"]]
    assert nvim.exec_lua(resolve, "*") == ["*"]
    assert nvim.exec_lua(resolve, "@decorator")[1] == \
        "autodoc: no workspace 'decorator' (there are @kb @rfcs; @* is every one)"
    completions = "return vim.fn.getcompletion(..., 'cmdline')"
    assert nvim.exec_lua(completions, "AutodocSearch @") == ["@kb", "@rfcs", "@*"]
    assert nvim.exec_lua(completions, "AutodocSearch @kb,r") == ["@kb,rfcs"]


def test_the_title_says_what_is_searched(nvim: pynvim.Nvim) -> None:
    describe = f"return {SCOPE}.describe(...)"
    assert nvim.exec_lua(describe, "*") == "all: kb, rfcs"
    assert nvim.exec_lua(describe, ["rfcs"]) == "rfcs"
    assert nvim.exec_lua(describe, ["kb", "rfcs"]) == "kb + rfcs"


HIT = {"path": "notes/cooking/2025-weekly-calls.md", "line_start": 22, "line_end": 26,
       "breadcrumb": "Weekly calls › Bread › Rye", "relevance": 0.73, "via": ["semantic", "lexical", "link"],
       "workspace": "handbook"}
ANSWER = {"hits": [HIT], "scope": {"asked": "*", "workspaces": ["kb", "handbook"]},
          "workspaces": {"handbook": {"root": "/srv/handbook"}, "kb": {"root": "/notes/kb"}}}


def row(nvim: pynvim.Nvim, width: int | None) -> str:
    return nvim.exec_lua("local answer, width = ...; local s = require('autodoc.session.scope'); "
                         "local label = s.label(answer.hits[1], s.label_cells(answer)); "
                         "return require('autodoc.session.text').row(answer.hits[1], width, label)", ANSWER, width)


@pytest.mark.parametrize("width", [120, 94, 88, 70, 52, 44, 38])
def test_rows_keep_the_file_name_and_span_before_the_badges(nvim: pynvim.Nvim, width: int) -> None:
    """Issue 51.5: `adr…es.md:22-26  0.73  [semantic+lexical+link]`: the badges gave way last. Now they shorten to
    letters, then go, before the file name is cut; the label, the span and the relevance always show. A new
    user's walk: a row with room to spare dropped its breadcrumb for the badges' words (at 88): the badges take
    letters while that keeps a breadcrumb."""
    text = row(nvim, width)
    assert nvim.funcs.strdisplaywidth(text) <= width, text
    assert text.startswith("handbook "), text  # the workspace label
    assert re.search(r"\.md:22-26  (.*  )?0\.73", text), text  # the span and the relevance, never cut
    badges = {120: "[semantic+lexical+link]", 94: "[S+L+K]", 88: "[S+L+K]", 70: "[S+L+K]", 52: "[S+L+K]", 44: "",
              38: ""}[width]
    assert text.endswith("0.73" + (badges and "  " + badges)), text
    assert ("Rye  0.73" in text) == (width in (120, 94, 88)), text  # the breadcrumb, when 8 cells of it fit
    # The second walk: at 94 the words left the breadcrumb 12 cells (`Weekly…Rye`); in letters it is whole.
    assert ("Weekly calls › Bread › Rye" in text) == (width in (120, 94)), text
    if width >= 44:
        assert "2025-weekly-calls.md:22-26" in text, text  # the file name whole while the badges can give way


def test_badges_never_stay_while_the_file_name_is_cut(nvim: pynvim.Nvim) -> None:
    """A walk at 80 columns: `kb  adr/0001-i…-as-json-files.md:22-26  0.77  [S+L+K]  (superseded)`: with room for
    the file name but not for `…/` before it, the name lost its middle and the badges stayed."""
    hit = {"path": "adr/0001-index-as-json-files.md", "line_start": 22, "line_end": 26, "breadcrumb": "",
           "relevance": 0.77, "via": ["semantic", "lexical", "link"], "superseded": True, "workspace": "kb"}
    for width in range(40, 90):
        text = nvim.exec_lua("local hit, width = ...; return require('autodoc.session.text').row(hit, width, 'kb')",
                             hit, width)
        assert nvim.funcs.strdisplaywidth(text) <= width, (width, text)
        if "[" in text:
            assert "0001-index-as-json-files.md:22-26" in text, (width, text)


def test_a_hit_s_file_is_its_workspace_s_root_and_its_path(nvim: pynvim.Nvim) -> None:
    file = "local answer, hit = ...; return require('autodoc.session.scope').file(hit, answer, '/fallback')"
    assert nvim.exec_lua(file, ANSWER, HIT) == "/srv/handbook/notes/cooking/2025-weekly-calls.md"
    assert nvim.exec_lua(file, {"hits": []}, {**HIT, "workspace": "rfcs"}) == \
        "/notes/rfcs/notes/cooking/2025-weekly-calls.md"  # the editor's roots, when the answer says none
    one = {**ANSWER, "scope": {"asked": "kb", "workspaces": ["kb"]}}
    assert nvim.exec_lua("local s = require('autodoc.session.scope'); return s.label_cells(...)", one) == 0


def test_a_wide_list_has_room_for_a_longer_workspace_label(nvim: pynvim.Nvim) -> None:
    """A new user's walk: at 200 columns every row read `autodoc…` for the bundled `autodoc-kb`."""
    answer = {**ANSWER, "scope": {"asked": "*", "workspaces": ["autodoc-kb", "rfcs"]}}
    hit = {**HIT, "workspace": "autodoc-kb"}
    label = ("local s = require('autodoc.session.scope'); local answer, hit, width = ...; "
             "return s.label(hit, s.label_cells(answer, width))")
    assert nvim.exec_lua(label, answer, hit, 40) == "autodoc…"  # a narrow list keeps 8 cells
    assert nvim.exec_lua(label, answer, hit, 100) == "autodoc-kb"
    very_long = {**answer, "scope": {"asked": "*", "workspaces": ["a-very-long-workspace-name", "rfcs"]}}
    assert len(nvim.exec_lua(label, very_long, {**HIT, "workspace": "a-very-long-workspace-name"}, 400)) == 16



def test_labels_cut_alike_lose_their_middle_instead(nvim: pynvim.Nvim) -> None:
    """A new user's walk: at 80 columns `autodoc-kb` and `autodoc-notes` both read `autodoc…`, so two `retry.md`
    rows told nothing of where each was. Labels a cut at the end would make alike lose their middle; others
    keep losing their end."""
    label = ("local s = require('autodoc.session.scope'); local answer, hit, width = ...; "
             "return s.label(hit, s.label_cells(answer, width), s.labelled(answer))")
    alike = {**ANSWER, "scope": {"asked": "*", "workspaces": ["autodoc-kb", "autodoc-notes"]}}
    kb = nvim.exec_lua(label, alike, {**HIT, "workspace": "autodoc-kb"}, 40)
    notes = nvim.exec_lua(label, alike, {**HIT, "workspace": "autodoc-notes"}, 40)
    assert (kb, notes) == ("au…oc-kb", "au…notes")  # 8 cells, as a narrow list's labels
    apart = {**ANSWER, "scope": {"asked": "*", "workspaces": ["autodoc-notes", "rfcs"]}}
    assert nvim.exec_lua(label, apart, {**HIT, "workspace": "autodoc-notes"}, 40) == "autodoc…"

def test_setup_refuses_a_scope_it_does_not_know(nvim: pynvim.Nvim) -> None:
    problems = nvim.exec_lua("return select(2, require('autodoc.config').check({ scope = 'everything' }))")
    assert problems == ["'scope' must be 'all' (every workspace) or 'current', got \"everything\""]
    assert nvim.exec_lua("return require('autodoc.config').defaults.scope") == "all"


def test_one_list_shows_its_badges_one_way(nvim: pynvim.Nvim) -> None:
    """A new user's walk: one list mixed `[lexical+semantic]` and `[L+S]` (a long path needed letters, a short one
    kept the words). When one row needs letters, every row of the list has them, in the built-in picker and the
    sources alike (Session:row)."""
    short = {**HIT, "path": "a.md", "breadcrumb": "A"}
    answer = {**ANSWER, "hits": [short, HIT]}
    rows = nvim.exec_lua("return (require('autodoc.picker.render').rows(...))", answer, 88)
    assert rows[0].endswith("[S+L+K]") and rows[1].endswith("[S+L+K]"), rows
    wide = nvim.exec_lua("return (require('autodoc.picker.render').rows(...))", answer, 140)
    assert wide[0].endswith("[semantic+lexical+link]") and wide[1].endswith("[semantic+lexical+link]"), wide
    sourced = nvim.exec_lua("""local answer, width = ...
        local session = require('autodoc.session').new({ source = 'fzf-lua', background = true })
        session.answer = answer
        return { session:row(answer.hits[1], width), session:row(answer.hits[2], width) }""", answer, 88)
    assert sourced == rows, sourced
