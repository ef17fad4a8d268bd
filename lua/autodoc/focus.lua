--- The documents open in buffers, embedded first while their workspace's vectors fill: entering a Markdown
--- buffer under a workspace root tells the engine (`embedding.focus`) the workspace's listed buffers, the
--- most recently entered first (the engine keeps as many as it takes). Only while the engine is open and that
--- workspace fills; never starts the host.
local later = require('autodoc.later')
local markdown_file = require('autodoc.markdown_file')
local rpc = require('autodoc.rpc')
local state = require('autodoc.state')
local workspaces = require('autodoc.workspaces')

local M = {}

-- Moving between windows enters buffers in quick succession: one request once the moves pause.
local DEBOUNCE_MS = 300

local filling = {} ---@type table<string, true> workspaces whose vectors fill, from the index runs' reports
local wanted = {} ---@type table<string, true> workspaces to tell at the next flush
local entered = {} ---@type table<integer, integer> buffer -> when it was last entered (a counter)
local clock = 0
local flush_later ---@type autodoc.Later|nil

--- The workspace-relative paths of `ws`'s documents open in listed buffers, the most recently entered first.
---@param ws string
---@return string[]
local function open_documents(ws)
  local buffers = vim.tbl_filter(function(info) return markdown_file.is_markdown(info.name) end,
    vim.fn.getbufinfo({ buflisted = 1 }))
  table.sort(buffers, function(a, b)
    local entered_a, entered_b = entered[a.bufnr] or 0, entered[b.bufnr] or 0
    if entered_a ~= entered_b then
      return entered_a > entered_b
    end
    return a.lastused > b.lastused
  end)
  local paths, seen = {}, {}
  for _, info in ipairs(buffers) do
    for _, found in ipairs(workspaces.of(info.name)) do
      if found[1] == ws and not seen[found[2]] then
        seen[found[2]] = true
        table.insert(paths, found[2])
      end
    end
  end
  return paths
end

local function flush()
  flush_later = nil
  local names = vim.tbl_keys(wanted)
  wanted = {}
  if state.phase ~= 'ready' then
    return -- a closed engine is not opened for this; the next fill's index report asks again
  end
  for _, ws in ipairs(names) do
    local paths = filling[ws] and open_documents(ws) or {}
    if #paths > 0 then
      rpc.request('embedding.focus', { ws, paths }, function() end) -- a failure (the host exited) says nothing
    end
  end
end

---@param ws string
local function want(ws)
  wanted[ws] = true
  later.cancel(flush_later)
  flush_later = later.call(DEBOUNCE_MS, flush)
end

--- BufEnter/BufWinEnter: a Markdown buffer's workspaces' open documents go first, if they fill.
---@param buf integer
function M.entered(buf)
  if not state.config.open_buffers_first or not markdown_file.is_markdown(vim.api.nvim_buf_get_name(buf)) then
    return
  end
  clock = clock + 1
  entered[buf] = clock
  if state.phase ~= 'ready' then
    return
  end
  for _, found in ipairs(workspaces.of(vim.api.nvim_buf_get_name(buf))) do
    if filling[found[1]] then
      want(found[1])
    end
  end
end

--- BufWipeout: the buffer is forgotten.
---@param buf integer
function M.wiped(buf)
  entered[buf] = nil
end

--- An index run's report (User AutodocIndexed) or the end of a fill (User AutodocSemanticReady). A report
--- that says the workspace fills names its open documents again: the fill may have just begun, or begun again
--- in a new host that knows nothing of them.
---@param event string 'AutodocIndexed'|'AutodocSemanticReady'
---@param data table the event's data
function M.semantic_changed(event, data)
  local ws = data.workspace
  local report = data.report or {}
  if event == 'AutodocIndexed' and (report.semantic == 'partial' or report.semantic == 'switching') then
    filling[ws] = true
    if state.config.open_buffers_first then
      want(ws)
    end
  else
    filling[ws] = nil
  end
end

return M
