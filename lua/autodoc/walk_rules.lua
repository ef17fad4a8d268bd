-- Generated from autodoc_core/parse/walk.py (lua_rules): do not edit. Regenerate with
-- python -c 'from autodoc_core.parse.walk import lua_rules; print(lua_rules(), end="")' > lua/autodoc/walk_rules.lua
return {
  skipped_folders = { '__pycache__', 'node_modules' }, -- besides hidden ones (a leading dot)
  markdown_suffixes = { '.markdown', '.md' }, -- compared lower-cased
}
