--- Which files are Markdown, as the indexer decides it: autodoc.walk_rules' suffixes (generated from the
--- indexer's), compared lower-cased, so `NOTES.MD` is Markdown everywhere the editor asks.
local walk_rules = require('autodoc.walk_rules')

local M = {}

---@param name string a file name or path
---@return boolean
function M.is_markdown(name)
  local lower = name:lower()
  for _, suffix in ipairs(walk_rules.markdown_suffixes) do
    if vim.endswith(lower, suffix) then
      return true
    end
  end
  return false
end

return M
