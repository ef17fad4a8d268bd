--- The folders list of :AutodocWorkspaceAdd (autodoc.session.strategies.folders), and the walk its rows and the
--- preview count Markdown files with.
local markdown_file = require('autodoc.markdown_file')
local walk_rules = require('autodoc.walk_rules')

local M = {}

--- Entries a folder's walk looks at, at most, for the list (per folder) and for the preview: the walk
--- runs on the editor's thread at every keystroke, and a folder like $HOME holds millions.
M.LIST_WALK = 2000
M.PREVIEW_WALK = 20000
--- Entries all the listed folders' walks look at together per keystroke: a prompt may complete to hundreds of
--- folders (a system folder's children), and walking each would hold the editor; folders past it show no count.
M.LIST_WALK_TOTAL = 5000

local SKIPPED_FOLDERS = {}
for _, name in ipairs(walk_rules.skipped_folders) do
  SKIPPED_FOLDERS[name] = true
end

--- The Markdown files under `path` (relative to it), hidden folders and those the indexer never walks
--- skipped as it does (autodoc.walk_rules; `.MD` is Markdown too), looking at no more than `budget` entries;
--- `complete` is false when the walk stopped early.
---@param path string
---@param budget integer
---@return string[] files, boolean complete, integer seen the entries looked at
function M.markdown_files(path, budget)
  local files, seen = {}, 0
  local skip = function(dir)
    local base = vim.fs.basename(dir)
    return not vim.startswith(base, '.') and not SKIPPED_FOLDERS[base]
  end
  for name, kind in vim.fs.dir(path, { depth = 32, skip = skip }) do
    seen = seen + 1
    if seen > budget then
      return files, false, seen - 1
    end
    local lower = vim.fs.basename(name):lower()
    if kind == 'file' and not vim.startswith(lower, '.') and markdown_file.is_markdown(lower) then
      table.insert(files, name)
    end
  end
  return files, true, seen
end

--- :AutodocWorkspaceAdd: folders completed from what is typed, the typed one first.
---@param query string
---@return autodoc.Answer
function M.folders(query)
  local hits = {}
  local candidates = vim.fn.getcompletion(query ~= '' and query or './', 'dir')
  if query ~= '' and vim.fn.isdirectory(vim.fn.expand(query)) == 1 then
    table.insert(candidates, 1, query)
  end
  local listed, left = {}, M.LIST_WALK_TOTAL
  for _, dir in ipairs(candidates) do
    local path = vim.fn.fnamemodify(vim.fn.expand(dir), ':p'):gsub('/$', '')
    if not listed[path] then -- the typed folder is also among its own completions
      listed[path] = true
      local count = '…'
      if left > 0 then
        local files, complete, seen = M.markdown_files(path, math.min(M.LIST_WALK, left))
        left = left - seen
        count = complete and tostring(#files) or (#files .. '+')
      end
      local noun = count == '1' and ' Markdown file' or ' Markdown files'
      table.insert(hits, { path = path, line_start = 1, line_end = 1, breadcrumb = count .. noun,
        relevance = 1, via = { 'folder' }, folder = true })
    end
  end
  return { hits = hits, semantic = 'off', rank = { state = 'off' }, query = { terms = {} }, counted = 'folder' }
end

return M
