--- A call some milliseconds from now that can be cancelled until it runs.
---
--- `vim.defer_fn` returns its timer, but stopping that timer does not stop a callback the timer has already
--- scheduled: a key pressed in that gap made the older keystroke's search run too.
local M = {}

---@class autodoc.Later
---@field private timer uv.uv_timer_t
---@field private over boolean run or cancelled
local Later = {}
Later.__index = Later

--- Call `fn` in `ms` milliseconds, on the main loop.
---@param ms integer
---@param fn fun()
---@return autodoc.Later
function M.call(ms, fn)
  local self = setmetatable({ over = false }, Later)
  self.timer = vim.defer_fn(function()
    if not self.over then
      self.over = true
      fn()
    end
  end, ms)
  return self
end

--- The call does not happen (a no-op once it has).
function Later:cancel()
  if self.over then
    return
  end
  self.over = true
  if not self.timer:is_closing() then
    self.timer:stop()
    self.timer:close()
  end
end

--- Cancel `call` if there is one; nil, for `pending = later.cancel(pending)`.
---@param call autodoc.Later|nil
---@return nil
function M.cancel(call)
  if call then
    call:cancel()
  end
  return nil
end

return M
