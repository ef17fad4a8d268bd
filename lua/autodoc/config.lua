--- setup() options: the defaults, and a check that names the bad field in one clear error.

---@class autodoc.Keys
---@field toggle_lexical string|string[]
---@field toggle_semantic string|string[]
---@field toggle_rerank string|string[]
---@field toggle_under_cursor string|string[]
---@field open string|string[]
---@field open_vsplit string|string[]
---@field open_split string|string[]
---@field open_tab string|string[]
---@field quickfix string|string[]
---@field next string|string[]
---@field prev string|string[]
---@field close string|string[]

---@class autodoc.WorkspaceSpec
---@field name string
---@field path string

---@class autodoc.Config
---@field workspaces autodoc.WorkspaceSpec[] added (and indexed) when the engine opens
---@field db string|nil default: $AUTODOC_DB or $XDG_DATA_HOME/autodoc/autodoc.db
---@field python string|nil the Python that runs the host (default: g:autodoc_python, the plugin's .venv, ...)
---@field index_on_save boolean re-index a Markdown buffer under a workspace root when written
---@field open_buffers_first boolean while a workspace's vectors fill, embed the documents open in buffers first
---@field debounce_ms integer keys closer together than this wait for typing to pause before a search
---@field related_ms integer rest in another section before :AutodocRelatedLive asks for it
---@field poll_ms integer how often to check a workspace whose vectors are filling
---@field scan_ms integer how often to look for files changed outside Neovim (0: never; FocusGained still does)
---@field limit integer hits in the picker
---@field scope 'all'|'current' what a search covers when it names no workspace: every one, or the buffer's
---@field keys autodoc.Keys picker keys

local M = {}

---@type autodoc.Config
M.defaults = {
  workspaces = {}, -- { { name = 'kb', path = '~/kb' } }
  db = nil,
  index_on_save = true,
  open_buffers_first = true,
  debounce_ms = 15, -- a key after a pause searches at once; a burst of keys waits for its end
  related_ms = 300, -- the live related list asks once the cursor rests in another section
  poll_ms = 1000,
  scan_ms = 30000, -- a scan only stats files: see :help autodoc-outside-changes for its cost
  limit = 30,
  scope = 'all', -- every workspace; 'current': the current buffer's (:help autodoc-scope)
  keys = {
    toggle_lexical = '<M-l>',
    toggle_semantic = '<M-s>',
    toggle_rerank = '<M-r>',
    toggle_under_cursor = '<Space>',
    open = '<CR>',
    open_vsplit = '<C-v>',
    open_split = '<C-x>',
    open_tab = '<C-t>',
    quickfix = '<C-q>',
    next_workspace = '<M-w>',
    next = { '<C-n>', '<Down>' },
    prev = { '<C-p>', '<Up>' },
    close = { '<Esc>', 'q' },
  },
}

---@param value any
---@return string
local function show(value)
  return type(value) == 'string' and string.format('%q', value) or vim.inspect(value, { newline = ' ', indent = '' })
end

---@param value any
---@param minimum integer
---@return boolean
local function is_integer_from(value, minimum)
  return type(value) == 'number' and value == math.floor(value) and value >= minimum
end

--- A keys option as a list: the config takes one key or a list of them.
---@param lhs string|string[]
---@return string[]
function M.key_list(lhs)
  return type(lhs) == 'table' and lhs or { lhs }
end

---@param value any
---@return boolean
local function is_keys(value)
  if type(value) == 'string' then
    return true
  end
  return vim.islist(value) and #value > 0 and #vim.tbl_filter(function(k) return type(k) ~= 'string' end, value) == 0
end

---@param ws any
---@return boolean
local function is_workspace(ws)
  return type(ws) == 'table' and type(ws.name) == 'string' and ws.name ~= '' and type(ws.path) == 'string'
end

--- field -> { check, what it must be }
local CHECKS = {
  workspaces = { vim.islist, "a list of { name = 'kb', path = '~/kb' }" },
  db = { function(v) return type(v) == 'string' and v ~= '' end, 'a path (string)' },
  python = { function(v) return type(v) == 'string' and v ~= '' end, 'a path to a Python (string)' },
  index_on_save = { function(v) return type(v) == 'boolean' end, 'a boolean' },
  open_buffers_first = { function(v) return type(v) == 'boolean' end, 'a boolean' },
  debounce_ms = { function(v) return is_integer_from(v, 0) end, 'a non-negative integer' },
  related_ms = { function(v) return is_integer_from(v, 0) end, 'a non-negative integer' },
  poll_ms = { function(v) return is_integer_from(v, 1) end, 'a positive integer' },
  scan_ms = { function(v) return is_integer_from(v, 0) end, 'a non-negative integer (0: no periodic scan)' },
  limit = { function(v) return is_integer_from(v, 1) end, 'a positive integer' },
  scope = { function(v) return v == 'all' or v == 'current' end, "'all' (every workspace) or 'current'" },
}

---@param names string[]
---@return string
local function sorted_list(names)
  table.sort(names)
  return table.concat(names, ', ')
end

--- `keys` without its bad entries, and what was wrong with them.
---@param keys any
---@param problems string[]
---@return table|nil
local function checked_keys(keys, problems)
  if type(keys) ~= 'table' or vim.islist(keys) and #keys > 0 then
    table.insert(problems, string.format("'keys' must be a table of key names, got %s", show(keys)))
    return nil
  end
  local good = {}
  for name, lhs in pairs(keys) do
    if M.defaults.keys[name] == nil then
      table.insert(problems, string.format("unknown key 'keys.%s' (known: %s)", name,
        sorted_list(vim.tbl_keys(M.defaults.keys))))
    elseif not is_keys(lhs) then
      table.insert(problems, string.format("'keys.%s' must be a key or a list of keys, got %s", name, show(lhs)))
    else
      good[name] = lhs
    end
  end
  return good
end

--- `workspaces` without its bad entries, each named in `problems`.
---@param list table
---@param problems string[]
---@return table
local function checked_workspaces(list, problems)
  local good = {}
  for index, ws in ipairs(list) do
    if is_workspace(ws) then
      table.insert(good, ws)
    else
      table.insert(problems, string.format("workspaces[%d] must be { name = 'kb', path = '~/kb' }, got %s",
        index, show(ws)))
    end
  end
  return good
end

--- `opts` without the fields that are unknown or bad, and one message for each of those.
---@param opts any
---@return table good, string[] problems
function M.check(opts)
  local problems = {}
  if opts == nil then
    return {}, problems
  end
  if type(opts) ~= 'table' then
    return {}, { string.format('options must be a table, got %s', show(opts)) }
  end
  local good = {}
  for name, value in pairs(opts) do
    if name == 'keys' then
      good.keys = checked_keys(value, problems)
    elseif CHECKS[name] and not CHECKS[name][1](value) then
      table.insert(problems, string.format("'%s' must be %s, got %s", name, CHECKS[name][2], show(value)))
    elseif name == 'workspaces' then
      good.workspaces = checked_workspaces(value, problems)
    elseif CHECKS[name] then
      good[name] = value
    else
      local known = vim.tbl_keys(CHECKS)
      table.insert(known, 'keys')
      table.insert(problems, string.format("unknown option '%s' (known: %s)", tostring(name), sorted_list(known)))
    end
  end
  table.sort(problems)
  return good, problems
end

--- The defaults overridden by the good fields of `opts`, and a message for each field left out.
---@param opts table|nil
---@return autodoc.Config config, string[] problems
function M.resolve(opts)
  local good, problems = M.check(opts)
  return vim.tbl_deep_extend('force', vim.deepcopy(M.defaults), good), problems
end

return M
