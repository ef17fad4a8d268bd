--- Which workspaces a search covers (:help autodoc-scope): every one (`'*'`) or a list of names. The one reading
--- of `@name`, `@a @b`, `@a,b` and `@*` (the prompt's and the commands'), the order `<M-w>` cycles in, what the
--- engine is sent, which file a hit is, and the short workspace label a row of a search over several shows.
local autodoc = require('autodoc')
local rpc = require('autodoc.rpc')

local M = {}

---@alias autodoc.Scope '*'|string[] every workspace, or these (in order, each once)

M.ALL = '*'
--- A row's workspace label is at most this many cells (a longer name loses its end).
M.LABEL_CELLS = 8
M.LABEL_CELLS_WIDE = 16

--- Workspace names in order.
---@return string[]
function M.names()
  local names = vim.tbl_keys(autodoc.workspaces)
  table.sort(names)
  return names
end

---@param names string[]
---@return string e.g. '@kb @rfcs'
local function known(names)
  return table.concat(vim.tbl_map(function(n) return '@' .. n end, names), ' ')
end

--- The words `@a`, `@a,b`, `@*` as a scope; the first name that is no workspace, when one is not.
---@param words string[]
---@param names string[]
---@return autodoc.Scope|nil, string|nil unknown
local function read_words(words, names)
  local picked, seen, all = {}, {}, false
  for _, word in ipairs(words) do
    local parts = vim.split(word:sub(2), ',', { plain = true })
    for _, name in ipairs(parts) do
      if name == '*' then
        all = true
      elseif not vim.tbl_contains(names, name) then
        return nil, name
      elseif not seen[name] then
        seen[name] = true
        table.insert(picked, name)
      end
    end
  end
  return all and M.ALL or picked
end

--- The edits (a character added, dropped or changed, or two side by side swapped: `@kesp`) that turn `a` into `b`,
--- case aside.
---@param a string
---@param b string
---@return integer
local function edits(a, b)
  a, b = a:lower(), b:lower()
  local rows = {} ---@type integer[][] rows[i][j]: the edits from a's first i characters to b's first j
  for i = 0, #a do
    rows[i] = { [0] = i }
    for j = 1, #b do
      if i == 0 then
        rows[i][j] = j
      else
        local same = a:sub(i, i) == b:sub(j, j)
        local here = math.min(rows[i - 1][j] + 1, rows[i][j - 1] + 1, rows[i - 1][j - 1] + (same and 0 or 1))
        if i > 1 and j > 1 and a:sub(i, i) == b:sub(j - 1, j - 1) and a:sub(i - 1, i - 1) == b:sub(j, j) then
          here = math.min(here, rows[i - 2][j - 2] + 1)
        end
        rows[i][j] = here
      end
    end
  end
  return rows[#a][#b]
end

--- The workspace a misspelt name most likely meant: one edit away for a short name, one in four characters for a
--- longer one (`@nots`: notes); nil when none is that close.
---@param name string
---@param names string[]
---@return string|nil
local function meant(name, names)
  local best, fewest = nil, math.max(1, math.floor(#name / 4)) + 1
  for _, candidate in ipairs(names) do
    local count = edits(name, candidate)
    if count < fewest then
      best, fewest = candidate, count
    end
  end
  return best
end

--- What an unknown name (or a lone `@`) says: the name, the one it likely meant and the workspaces there are.
---@param name string
---@param names string[]
---@return string
function M.unknown(name, names)
  if #names == 0 then
    return require('autodoc.session.text').NO_WORKSPACE
  end
  local what = name == '' and "'@' names no workspace" or string.format("no workspace '%s'", name)
  local guess = name ~= '' and meant(name, names)
  return string.format('autodoc: %s%s (there are %s; @* is every one)', what,
    guess and string.format(': did you mean @%s?', guess) or '', known(names))
end

--- `prompt` as its scope and its query: leading `@name` words (`@a @b`, `@a,b`, `@*`) name the workspaces; a
--- prompt with none keeps `default`. A name that is no workspace is never dropped: it is the problem said in
--- place of hits (while the last word is still being typed, the problem lists the names to pick from: those it
--- begins, else all).
---@param prompt string
---@param default autodoc.Scope|nil
---@param names string[]
---@return autodoc.Scope|nil scope, string query, string|nil problem, boolean named the prompt names its scope
function M.parse(prompt, default, names)
  local words, rest, typing = {}, prompt, false
  while true do
    local word, after = rest:match('^(@%S*)(.*)$')
    if not word then
      break
    end
    table.insert(words, word)
    typing = after == ''
    rest = after:gsub('^%s+', '')
  end
  if #words == 0 then
    return default, prompt, nil, false
  end
  local scope, unknown = read_words(words, names)
  if unknown and typing and unknown == words[#words]:match('[^,@]*$') then
    local matching = vim.tbl_filter(function(name) return vim.startswith(name, unknown) end, names)
    return default, '', 'workspaces: ' .. known(#matching > 0 and matching or names) .. ' @*', true
  end
  if unknown then
    return default, rest, M.unknown(unknown, names), true
  end
  if scope ~= M.ALL and #scope == 0 then
    return default, rest, M.unknown('', names), true
  end
  return scope, vim.trim(rest), nil, true
end

--- `value` (a name, a list of names, `'*'`, or `'@a @b'` as typed) as a scope; nil and the problem when it
--- names a workspace that is not there.
---@param value string|string[]|nil
---@param names string[]
---@return autodoc.Scope|nil, string|nil problem
function M.resolve(value, names)
  if value == nil or value == M.ALL then
    return value
  end
  if type(value) == 'string' and value:match('^@') then
    local scope, _, problem = M.parse(value .. ' ', nil, names)
    return scope, problem
  end
  local list = type(value) == 'table' and value or { value }
  local scope, unknown = read_words(vim.tbl_map(function(name) return '@' .. name end, list), names)
  return scope, unknown and M.unknown(unknown, names) or nil
end

--- The workspace of `file` (the deepest root that holds it; nil for a file in none).
---@param file string
---@return string|nil
function M.holding(file)
  if file == '' then
    return nil
  end
  file = vim.uv.fs_realpath(file) or vim.fs.normalize(file)
  local best, best_root
  for name, root in pairs(autodoc.workspaces) do
    if vim.startswith(file, root .. '/') and (not best_root or #root > #best_root) then
      best, best_root = name, root
    end
  end
  return best
end

--- The scope a search starts with (setup({ scope })): 'all' is every workspace; 'current' is the workspace of
--- `file` (the buffer the search was opened from), else the first configured.
---@param file string
---@return autodoc.Scope|nil
function M.default(file)
  if autodoc.config.scope ~= 'current' then
    return M.ALL
  end
  local name = M.holding(file) or require('autodoc.session.workspace').default()
  return name and { name } or nil
end

--- The names `scope` searches, in order.
---@param scope autodoc.Scope|nil
---@return string[]
function M.searched(scope)
  if scope == M.ALL then
    return M.names()
  end
  return scope or {}
end

--- The engine's first parameter for `scope`: `'*'`, the one name, or the list. Every workspace, when there is
--- one, is asked as that one: a single workspace's search stays the one it always was.
---@param scope autodoc.Scope
---@return string|string[]
function M.wire(scope)
  local names = M.searched(scope)
  if #names == 1 then
    return names[1]
  end
  return scope
end

--- The scope after `scope` in `<M-w>`'s round: every workspace, then each one by name, then every one again.
---@param scope autodoc.Scope|nil
---@param names string[]
---@return autodoc.Scope
function M.next(scope, names)
  if scope == M.ALL then
    return { names[1] }
  end
  local index = scope and #scope == 1 and vim.fn.index(names, scope[1]) or -1
  if index >= 0 and index + 1 < #names then
    return { names[index + 2] }
  end
  return M.ALL
end

--- Why `<M-w>` cannot move on from `prompt`'s scope (nil when it can): one workspace, or a prompt that names
--- its own (`@name`).
---@param prompt string
---@param names string[]
---@return string|nil
function M.next_refusal(prompt, names)
  if #names < 2 then
    return 'autodoc: there is one workspace; add another with :AutodocWorkspaceAdd'
  elseif select(4, M.parse(prompt, nil, names)) then
    return 'autodoc: the prompt names its workspace (@name): edit it instead'
  end
end

--- search.related's parameters for the section `source`, with related sections from `scope` (the section's own
--- workspace alone is asked as before; another scope tells the engine the section's workspace).
---@param scope autodoc.Scope
---@param source autodoc.RelatedSource
---@param options table
---@return table
function M.related_params(scope, source, options)
  local target = M.wire(scope)
  options = vim.tbl_extend('force', options, { line = source.line })
  if target ~= source.workspace then
    options.workspace = source.workspace
    target = type(target) == 'string' and target ~= M.ALL and { target } or target
  end
  return { target, source.path, options }
end

--- The scope related sections come from when nothing names one: setup's (`'current'`: the section's own
--- workspace).
---@param source autodoc.RelatedSource
---@return autodoc.Scope
function M.related_default(source)
  return autodoc.config.scope == 'current' and { source.workspace } or M.ALL
end

--- What a title says is searched: `kb`, `kb + rfcs`, or `all: kb, rfcs` (`all 5 workspaces` when many).
---@param scope autodoc.Scope|nil
---@param names string[]|nil the workspaces it searched (an answer's), else the editor's of `scope`
---@return string
function M.describe(scope, names)
  names = names or M.searched(scope)
  if #names == 0 then
    return '…'
  end
  if scope ~= M.ALL or #names == 1 then
    return table.concat(names, ' + ')
  end
  return #names <= 3 and 'all: ' .. table.concat(names, ', ') or string.format('all %d workspaces', #names)
end

--- The file a hit is: its workspace's root (the answer's, else the editor's) joined with its path; a folder's
--- path is its own. `root`: for a hit that names no workspace (a document list's).
---@param hit autodoc.Hit
---@param answer autodoc.Answer|nil
---@param root string|nil
---@return string
function M.file(hit, answer, root)
  if hit.folder then
    return hit.path
  end
  local workspaces = answer and type(answer.workspaces) == 'table' and answer.workspaces or {}
  local info = hit.workspace and workspaces[hit.workspace]
  local found = info and rpc.value(info.root) or hit.workspace and autodoc.workspaces[hit.workspace] or root or ''
  return found .. '/' .. hit.path
end

--- The cells of the rows' workspace label for `answer`: 0 when it searched one workspace (no label), else its
--- longest name's: at most LABEL_CELLS in a narrow list, up to LABEL_CELLS_WIDE where the rows are wide enough
--- to give an eighth of their width to it (a 200-column terminal showed `autodoc…` for `autodoc-kb`).
---@param answer autodoc.Answer|nil
---@param width integer|nil the rows' width, when the view knows it
---@return integer
function M.label_cells(answer, width)
  local searched = M.labelled(answer)
  if #searched < 2 then
    return 0
  end
  local longest = 0
  for _, name in ipairs(searched) do
    longest = math.max(longest, vim.api.nvim_strwidth(name))
  end
  local most = math.min(M.LABEL_CELLS_WIDE, math.max(M.LABEL_CELLS, math.floor((width or 0) / 8)))
  return math.min(longest, most)
end

--- `name` cut to `cells` cells at its end.
---@param name string
---@param cells integer
---@return string
local function end_cut(name, cells)
  if vim.api.nvim_strwidth(name) <= cells then
    return name
  end
  name = vim.fn.strcharpart(name, 0, cells - 1) .. '…'
  while vim.api.nvim_strwidth(name) > cells do
    name = vim.fn.strcharpart(name, 0, vim.fn.strchars(name) - 2) .. '…'
  end
  return name
end

--- Each of `names` as a label of at most `cells` cells: a longer name loses its end, or its middle where
--- losing the end would make two labels alike (`autodoc-kb` and `autodoc-notes` were both `autodoc-…`).
---@param names string[]
---@param cells integer
---@return table<string, string>
function M.labels(names, cells)
  local cut, seen, alike = {}, {}, false
  for _, name in ipairs(names) do
    cut[name] = end_cut(name, cells)
    alike = alike or seen[cut[name]] ~= nil
    seen[cut[name]] = true
  end
  if alike then
    local shorten_middle = require('autodoc.session.text').shorten_middle
    for _, name in ipairs(names) do
      cut[name] = shorten_middle(name, cells)
    end
  end
  return cut
end

local made = {} -- the last labels worked out: each row of a list asks again with the same names

--- `hit`'s workspace as a label of `cells` cells (padded; see `labels`: `names` are the workspaces whose labels
--- must differ, the answer's), '' for none.
---@param hit autodoc.Hit
---@param cells integer
---@param names string[]|nil
---@return string
function M.label(hit, cells, names)
  if cells == 0 or not hit.workspace then
    return ''
  end
  names = names or { hit.workspace }
  if made.names ~= names or made.cells ~= cells then
    made = { names = names, cells = cells, labels = M.labels(names, cells) }
  end
  local name = made.labels[hit.workspace] or end_cut(hit.workspace, cells)
  return name .. string.rep(' ', cells - vim.api.nvim_strwidth(name))
end

--- The workspaces an answer searched, whose labels must differ.
---@param answer autodoc.Answer|nil
---@return string[]
function M.labelled(answer)
  local searched = answer and type(answer.scope) == 'table' and rpc.value(answer.scope.workspaces)
  return type(searched) == 'table' and searched or {}
end

return M
