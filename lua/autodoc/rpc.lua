--- Requests to the Python remote plugin, answered asynchronously.
---
--- A request made before the engine is open waits in autodoc.lifecycle's queue (the one place that knows
--- whether the engine is ready) and is sent, in order, once it is; when the engine cannot open, the callback
--- gets an 'autodoc.host' error whose reason says what to do.
---
--- `request(method, params, callback, lane, on_partial)` sends (id, method, params, lane) to the plugin's
--- AutodocRequest function; the plugin answers through `_resolve`, and a streamed search (`search.stream`)
--- first through `_partial` (`on_partial(answer)`). The lane goes to the host, which runs only the newest
--- request of a lane (its greatest id: ids follow the order requests are made, not always the order they are
--- sent) and stops an older search at its next stage boundary (answered as cancelled, never passed on).
--- Whether an answer is still wanted is the caller's to decide (autodoc.session's tick).
local host = require('autodoc.host')

local M = {}

local next_id = 0
local pending = {}

local reported = {}

--- The file the Python host logs to; a failed callback's traceback goes there too.
function M.log_path()
  return vim.fn.stdpath('log') .. '/autodoc.log'
end

---@param text string
local function append_to_log(text)
  local file = io.open(M.log_path(), 'a')
  if file then
    file:write(os.date('%Y-%m-%d %H:%M:%S '), text, '\n')
    file:close()
  end
end

--- Run a callback of `method`'s answer. Its error is said in one line, once per place it was raised, and its
--- traceback is logged: unhandled, it would reach only the Python host's log (as the failure of the call
--- that delivered the answer) and the view waiting for it would stop without a word.
local function protected(method, callback, ...)
  local ok, message = xpcall(callback, debug.traceback, ...)
  if ok then
    return
  end
  message = tostring(message)
  local first = message:match('^[^\n]*')
  local place = first:match('^(.-:%d+):') or first
  append_to_log(string.format('handling the answer to %s failed: %s', method, message))
  if not reported[place] then
    reported[place] = true
    require('autodoc.screen').say(string.format('autodoc: handling the answer to %s failed: %s (traceback in %s)',
      method, first, M.log_path()), vim.log.levels.ERROR, true)
  end
end

---@param reason string
---@return table the error a request gets when the host cannot run it
local function host_error(reason)
  return { code = -1, message = 'autodoc.host', data = { reason = reason } }
end

--- A new request id. Ids grow in the order requests are made, which is not always the order they are sent: a
--- request made while the engine opens waits in autodoc.lifecycle's queue, and one made by a queued callback
--- (the picker, once the engine is ready, searching its prompt) is sent before those queued behind it.
---@return integer
local function new_id()
  next_id = next_id + 1
  return next_id
end

--- Send the request made with `id` (new_id, when it was made).
local function send_as(id, method, params, callback, lane, on_partial)
  pending[id] = { callback = callback, lane = lane, on_partial = on_partial, method = method }
  host.ensure(function(reason)
    if reason then
      pending[id] = nil
      protected(method, callback, host_error(reason))
    else
      host.notify({ id, method, params, lane or vim.NIL })
    end
  end)
end

--- Send now, starting the host if none runs: for the requests that open the engine (autodoc.lifecycle);
--- every other one is a `request`.
---@param method string
---@param params table
---@param callback fun(err: table|nil, result: any)
---@param lane string|nil
---@param on_partial fun(result: any)|nil called with each partial answer before the final one
function M.send(method, params, callback, lane, on_partial)
  send_as(new_id(), method, params, callback, lane, on_partial)
end

--- Send once the engine is open (opening it if nobody has).
---@param method string
---@param params table
---@param callback fun(err: table|nil, result: any)
---@param lane string|nil
---@param on_partial fun(result: any)|nil called with each partial answer before the final one
function M.request(method, params, callback, lane, on_partial)
  local id = new_id() -- now: of two requests in a lane, the one made later is the newest, whenever it is sent
  require('autodoc.lifecycle').when_ready(function()
    send_as(id, method, params, callback, lane, on_partial)
  end, function(reason)
    protected(method, callback, host_error(reason))
  end)
end

--- Called by the Python plugin with a partial answer to request `id` (its final answer follows).
---@param id integer
---@param result any
function M._partial(id, result)
  local entry = pending[id]
  if entry and entry.on_partial then
    protected(entry.method, entry.on_partial, result)
  end
end

--- Called by the Python plugin with the answer to request `id`.
---@param id integer
---@param result any
---@param err table|nil
function M._resolve(id, result, err)
  local entry = pending[id]
  pending[id] = nil
  if not entry then
    return
  end
  if err == vim.NIL then
    err = nil
  end
  if err and err.message == 'cancelled' then
    return
  end
  protected(entry.method, entry.callback, err, result)
end

--- The host exited: it answers nothing more, so every request still waiting fails with why (as when the host
--- cannot start). autodoc.lifecycle calls it once it has marked the engine closed.
---@param message string
function M.fail_pending(message)
  local unanswered = pending
  pending = {}
  for _, entry in pairs(unanswered) do
    protected(entry.method, entry.callback, host_error(message))
  end
end

--- A field of an answer: nil where the engine sent JSON null (decoded as vim.NIL, which is truthy).
---@param value any
---@return any
function M.value(value)
  return value ~= vim.NIL and value or nil
end

--- The engine's words for what to do next, as the editor says them (the engine's messages are the command
--- line's and MCP's too).
local IN_THE_EDITOR = {
  { 'add it with workspace.add', 'add it with :AutodocWorkspaceAdd' },
  { 'remove it first (workspace.remove)', 'remove it first (:AutodocWorkspaceRemove!)' },
}

--- A readable message for an error object from the engine: its reason, in the editor's words. Its JSON-RPC
--- code means nothing to a person: it goes to the log (rpc.log_path()) with the error's name.
---@param err table
---@return string
function M.describe(err)
  if err.message == 'autodoc.host' then
    return err.data.reason
  end
  local reason = tostring(type(err.data) == 'table' and err.data.reason or err.message or 'error')
  append_to_log(string.format('error %s (%s): %s', tostring(err.message), tostring(err.code), reason))
  for _, words in ipairs(IN_THE_EDITOR) do
    reason = reason:gsub(vim.pesc(words[1]), (words[2]:gsub('%%', '%%%%')))
  end
  return 'autodoc: ' .. reason
end

return M
