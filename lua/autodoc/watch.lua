--- One poller per workspace: while it indexes or its vectors fill, ask for workspace.status every
--- poll_ms, update the progress message, and fire User AutodocSemanticReady once the vectors are complete
--- (so an open picker refreshes by itself). The host answers from its request workers while its index
--- thread runs.
local rpc = require('autodoc.rpc')
local progress = require('autodoc.progress')
local state = require('autodoc.state')

local M = {}

---@class autodoc.Watch
---@field token table the poll chain that owns this watch; a newer chain replaces it
---@field semantic boolean follow the fill and say when it is complete
---@field running boolean a poll is scheduled or under way

local watches = {} ---@type table<string, autodoc.Watch>

local function filling(status)
  return status.semantic == 'partial' or status.semantic == 'switching'
end

---@param ws string
---@param watch autodoc.Watch
---@param status table|nil workspace.status's answer, nil when it failed
local function report(ws, watch, status)
  -- status.indexing is null when asked before the host has started the run just requested
  local run = status and rpc.value(status.indexing)
  if state.indexing[ws] and run then
    progress.indexing_update(ws, run)
  end
  if not watch.semantic then
    return
  end
  if not status then
    watch.semantic = false
    return
  end
  progress.embedding(ws, status)
  if not filling(status) then
    watch.semantic = false
    vim.api.nvim_exec_autocmds('User', { pattern = 'AutodocSemanticReady', data = { workspace = ws } })
  end
end

local poll

--- Poll `ws` again after poll_ms, unless a newer chain has replaced this one by then.
---@param ws string
---@param watch autodoc.Watch
local function poll_later(ws, watch)
  local token = watch.token
  vim.defer_fn(function()
    if watch.token == token then
      poll(ws, watch)
    end
  end, state.config.poll_ms)
end

---@param ws string
---@param watch autodoc.Watch
poll = function(ws, watch)
  local token = watch.token
  rpc.request('workspace.status', { ws }, function(err, status)
    if watch.token ~= token then
      return -- replaced by a newer chain
    end
    report(ws, watch, not err and status or nil)
    if watch.semantic or state.indexing[ws] then
      poll_later(ws, watch)
    else
      watch.running = false
    end
  end)
end

---@param ws string
---@param at_once boolean
local function start(ws, at_once)
  local watch = watches[ws]
  watch.token = {}
  watch.running = true
  if at_once then
    poll(ws, watch)
  else
    poll_later(ws, watch)
  end
end

---@param ws string
---@return autodoc.Watch
local function watch_of(ws)
  watches[ws] = watches[ws] or { token = {}, semantic = false, running = false }
  return watches[ws]
end

--- Follow an index run of `ws` (state.indexing[ws] set) in the progress message, from poll_ms on.
---@param ws string
function M.indexing(ws)
  if not watch_of(ws).running then
    start(ws, false)
  end
end

--- Follow the vectors of `ws` filling until they are complete.
---@param ws string
---@param restart boolean|nil poll at once even when it is followed already (a pause or resume to show)
function M.semantic(ws, restart)
  local watch = watch_of(ws)
  if watch.semantic and watch.running and not restart then
    return
  end
  watch.semantic = true
  start(ws, true)
end

return M
