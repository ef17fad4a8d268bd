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
---@field debounce_ms integer typing pause before a search
---@field poll_ms integer how often to check a workspace whose vectors are filling
---@field scan_ms integer how often to look for files changed outside Neovim (0: never; FocusGained still does)
---@field limit integer hits in the picker
---@field keys autodoc.Keys picker keys

local M = {}

---@type autodoc.Config
M.defaults = {
  workspaces = {}, -- { { name = 'kb', path = '~/kb' } }
  db = nil,
  index_on_save = true,
  debounce_ms = 15, -- queued searches for older text are cancelled, so a short pause is enough
  poll_ms = 1000,
  scan_ms = 30000, -- a scan only stats files: see :help autodoc-outside-changes for its cost
  limit = 30,
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
    next = { '<C-n>', '<Down>' },
    prev = { '<C-p>', '<Up>' },
    close = { '<Esc>', 'q' },
  },
}

--- Options whose default is nil, so that they are known keys all the same.
local OPTIONAL = { db = 'a path (string)', python = 'a path (string)' }

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

---@param value any
---@return boolean
local function is_workspace_list(value)
  if not vim.islist(value) then
    return false
  end
  for _, ws in ipairs(value) do
    if type(ws) ~= 'table' or type(ws.name) ~= 'string' or ws.name == '' or type(ws.path) ~= 'string' then
      return false
    end
  end
  return true
end

--- field -> { check, what it must be }
local CHECKS = {
  workspaces = { is_workspace_list, "a list of { name = 'kb', path = '~/kb' }" },
  db = { function(v) return type(v) == 'string' and v ~= '' end, 'a path (string)' },
  python = { function(v) return type(v) == 'string' and v ~= '' end, 'a path to a Python (string)' },
  index_on_save = { function(v) return type(v) == 'boolean' end, 'a boolean' },
  debounce_ms = { function(v) return is_integer_from(v, 0) end, 'a non-negative integer' },
  poll_ms = { function(v) return is_integer_from(v, 1) end, 'a positive integer' },
  scan_ms = { function(v) return is_integer_from(v, 0) end, 'a non-negative integer (0: no periodic scan)' },
  limit = { function(v) return is_integer_from(v, 1) end, 'a positive integer' },
}

---@param message string
local function fail(message)
  error('autodoc: setup: ' .. message, 0)
end

---@param keys any
local function check_keys(keys)
  if type(keys) ~= 'table' or vim.islist(keys) and #keys > 0 then
    fail(string.format("'keys' must be a table of key names, got %s", show(keys)))
  end
  for name, lhs in pairs(keys) do
    if M.defaults.keys[name] == nil then
      fail(string.format("unknown key 'keys.%s' (known: %s)", name,
        table.concat(vim.tbl_keys(M.defaults.keys), ', ')))
    end
    if not is_keys(lhs) then
      fail(string.format("'keys.%s' must be a key or a list of keys, got %s", name, show(lhs)))
    end
  end
end

--- Raise one clear error naming the first bad or unknown field of `opts`.
---@param opts table|nil
function M.validate(opts)
  if opts == nil then
    return
  end
  if type(opts) ~= 'table' then
    fail(string.format('options must be a table, got %s', show(opts)))
  end
  for name, value in pairs(opts) do
    if name == 'keys' then
      check_keys(value)
    elseif CHECKS[name] then
      if not CHECKS[name][1](value) then
        fail(string.format("'%s' must be %s, got %s", name, CHECKS[name][2], show(value)))
      end
    elseif OPTIONAL[name] == nil then
      local known = vim.tbl_keys(CHECKS)
      table.insert(known, 'keys')
      table.sort(known)
      fail(string.format("unknown option '%s' (known: %s)", tostring(name), table.concat(known, ', ')))
    end
  end
end

--- The defaults overridden by `opts`, after checking them.
---@param opts table|nil
---@return autodoc.Config
function M.resolve(opts)
  M.validate(opts)
  return vim.tbl_deep_extend('force', vim.deepcopy(M.defaults), opts or {})
end

return M
