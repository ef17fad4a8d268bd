-- Generated from autodoc_core/retrieve/options.py (lua_stage_rules): do not edit. Regenerate with
-- python -c 'from autodoc_core.retrieve.options import lua_stage_rules; print(lua_stage_rules(), end="")' > lua/autodoc/stage_rules.lua
return {
  names = { 'lexical', 'semantic', 'rerank' }, -- the stages a search can ask for, in order
  finders = { 'lexical', 'semantic' }, -- at least one stays on; the first is turned on when none is
}
