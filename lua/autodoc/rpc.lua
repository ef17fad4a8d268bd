--- Requests to the Python remote plugin, answered asynchronously.
---
--- A request made before the host runs waits for it (autodoc.host queues it); when the host cannot
--- start, the callback gets an 'autodoc.host' error whose reason says what to do.
---
--- `request(method, params, callback, lane, on_partial)` sends (id, method, params, lane) to the plugin's
--- AutodocRequest function; the plugin answers through `_resolve`, and a streamed search (`search.stream`)
--- first through `_partial` (`on_partial(answer)`). The lane goes to the host, which runs only the newest
--- request of a lane and stops an older search at its next stage boundary (answered as cancelled, never
--- passed on). Whether an answer is still wanted is the caller's to decide (autodoc.session's tick).
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
--- traceback is logged (otherwise it went to the Python host's log only, as the failure of the call that
--- delivered the answer, and the picker just stopped).
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
    vim.notify(string.format('autodoc: handling the answer to %s failed: %s (traceback in %s)', method, first,
      M.log_path()), vim.log.levels.ERROR, { title = 'autodoc' })
  end
end

---@param method string
---@param params table
---@param callback fun(err: table|nil, result: any)
---@param lane string|nil
---@param on_partial fun(result: any)|nil called with each partial answer before the final one
---@return integer request id
function M.request(method, params, callback, lane, on_partial)
  next_id = next_id + 1
  local id = next_id
  pending[id] = { callback = callback, lane = lane, on_partial = on_partial, method = method }
  host.ensure(function(host_error)
    if host_error then
      pending[id] = nil
      protected(method, callback, { code = -1, message = 'autodoc.host', data = { reason = host_error } })
    else
      host.notify({ id, method, params, lane or vim.NIL })
    end
  end)
  return id
end

--- How many requests still wait for their answer (dropped ones included: every request is answered).
function M.outstanding()
  return vim.tbl_count(pending)
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

-- A host that exits answers nothing more: its requests fail with why, as a host that cannot start does.
host.on_exit(function(message)
  local unanswered = pending
  pending = {}
  for _, entry in pairs(unanswered) do
    protected(entry.method, entry.callback, { code = -1, message = 'autodoc.host', data = { reason = message } })
  end
end)

--- A readable message for an error object from the engine.
---@param err table
---@return string
function M.describe(err)
  if err.message == 'autodoc.host' then
    return err.data.reason
  end
  local reason = type(err.data) == 'table' and err.data.reason or nil
  return string.format('autodoc: %s (%s)', reason or err.message or 'error', tostring(err.code))
end

return M
