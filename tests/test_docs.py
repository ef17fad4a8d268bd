"""The reference cannot drift from the code: every JSON-RPC method has its section in the vimdoc,
and every method section names a method that exists."""

from __future__ import annotations

import re

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
