--- Where the built-in picker's other lists come from: documents (:AutodocOpen) and folders
--- (:AutodocWorkspaceAdd). A search's hits come from its session (autodoc.session).
local markdown_file = require('autodoc.markdown_file')
local rpc = require('autodoc.rpc')
local walk_rules = require('autodoc.walk_rules')

local M = {}

--- :AutodocOpen: documents by title, alias or path, as hits spanning the whole file.
---@param workspace string
---@param query string
---@param limit integer
---@param callback fun(err: table|nil, answer: autodoc.Answer|nil)
function M.documents(workspace, query, limit, callback)
  rpc.request('doc.list', { workspace, query, { limit = limit } }, function(err, documents)
    if err then
      callback(err)
      return
    end
    local hits = {}
    for _, doc in ipairs(documents) do
      local aliases = #doc.aliases > 0 and ' (' .. table.concat(doc.aliases, ', ') .. ')' or ''
      table.insert(hits, { path = doc.path, line_start = 1, line_end = math.max(1, doc.line_count),
        breadcrumb = doc.title .. aliases, relevance = 1, via = { 'title' }, workspace = workspace,
        title = doc.title, aliases = doc.aliases })
    end
    callback(nil, { hits = hits, semantic = 'off', rank = { state = 'off' }, query = { terms = {} } })
  end, 'documents:' .. workspace) -- a lane a workspace: :AutodocOpen asks several at once
end

--- How a document matches `query`, as doc.list orders them: 0 its title or an alias is the query, 1 begins
--- with it, 2 holds it elsewhere.
---@param hit autodoc.Hit a document's
---@param query string
---@return integer
local function match_class(hit, query)
  local wanted = vim.trim(query):lower()
  local best = 2
  for _, name in ipairs(vim.list_extend({ hit.title or '' }, hit.aliases or {})) do
    name = name:lower()
    best = math.min(best, name == wanted and 0 or vim.startswith(name, wanted) and 1 or 2)
  end
  return best
end

--- :AutodocOpen over several workspaces (:help autodoc-scope-editor): each one's doc.list, merged in the
--- engine's order (exact title or alias first, then prefixes, then the rest), workspace by workspace within
--- each, as an answer that names its workspaces and their roots (the rows' labels, the files).
---@param names string[]
---@param roots table<string, string> name -> root
---@param query string
---@param limit integer
---@param callback fun(err: table|nil, answer: autodoc.Answer|nil)
function M.documents_in(names, roots, query, limit, callback)
  local lists, left, failed = {}, #names, false
  local function merge()
    local hits = {}
    for order, name in ipairs(names) do
      for rank, hit in ipairs(lists[name]) do
        hit.order = { match_class(hit, query), order, rank }
        table.insert(hits, hit)
      end
    end
    table.sort(hits, function(a, b)
      for i = 1, 3 do
        if a.order[i] ~= b.order[i] then
          return a.order[i] < b.order[i]
        end
      end
      return false
    end)
    local workspaces = {}
    for _, name in ipairs(names) do
      workspaces[name] = { root = roots[name] }
    end
    callback(nil, { hits = vim.list_slice(hits, 1, limit), semantic = 'off', rank = { state = 'off' },
      query = { terms = {} }, scope = { workspaces = names }, workspaces = workspaces })
  end
  for _, name in ipairs(names) do
    M.documents(name, query, limit, function(err, answer)
      if failed then
        return
      end
      if err then
        failed = true
        return callback(err)
      end
      lists[name], left = answer.hits, left - 1
      if left == 0 then
        merge()
      end
    end)
  end
end

--- Entries a folder's walk looks at, at most, for the list (per folder) and for the preview: the walk
--- runs on the editor's thread at every keystroke, and a folder like $HOME holds millions.
M.LIST_WALK = 2000
M.PREVIEW_WALK = 20000
--- Entries all the listed folders' walks look at together per keystroke: /usr/share/ completes to hundreds
--- of folders, and walking each would hold the editor for a second; folders past it show no count.
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
      table.insert(hits, { path = path, line_start = 1, line_end = 1, breadcrumb = count .. ' Markdown files',
        relevance = 1, via = { 'folder' }, folder = true })
    end
  end
  return { hits = hits, semantic = 'off', rank = { state = 'off' }, query = { terms = {} } }
end

return M
