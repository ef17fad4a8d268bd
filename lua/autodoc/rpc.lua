--- Requests to the Python remote plugin, answered asynchronously.
---
--- `request(method, params, callback, lane)` sends (id, method, params, lane) to the plugin's
--- AutodocRequest function; the plugin answers through `_resolve`. Within a lane only the newest
--- request matters: older answers are dropped here too, so a slow answer never overwrites a newer one.
local M = {}

local next_id = 0
local pending = {}
local latest = {}

---@param method string
---@param params table
---@param callback fun(err: table|nil, result: any)
---@param lane string|nil
---@return integer request id
function M.request(method, params, callback, lane)
  next_id = next_id + 1
  local id = next_id
  pending[id] = { callback = callback, lane = lane }
  if lane then
    latest[lane] = id
  end
  local ok, err = pcall(vim.fn.AutodocRequest, id, method, params, lane or vim.NIL)
  if not ok then
    pending[id] = nil
    callback({ code = -1, message = 'autodoc.host', data = { reason = 'the autodoc Python host is not available: ' .. tostring(err) } })
  end
  return id
end

--- How many requests still wait for their answer (dropped ones included: every request is answered).
function M.outstanding()
  return vim.tbl_count(pending)
end

--- Is `id` still the newest request of its lane?
function M.is_current(id, lane)
  return lane == nil or latest[lane] == id
end

function M._resolve(id, result, err)
  local entry = pending[id]
  pending[id] = nil
  if not entry then
    return
  end
  if entry.lane and latest[entry.lane] ~= id then
    return -- superseded by a newer request in the same lane: never shown
  end
  if err == vim.NIL then
    err = nil
  end
  if err and err.message == 'cancelled' then
    return
  end
  entry.callback(err, result)
end

--- A readable message for an error object from the engine.
function M.describe(err)
  local reason = type(err.data) == 'table' and err.data.reason or nil
  return string.format('autodoc: %s (%s)', reason or err.message or 'error', tostring(err.code))
end

return M
