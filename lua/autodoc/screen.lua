--- What the user must read stays on the screen until the next key. Errors, warnings and the answers to
--- commands are kept: while one is on the screen and no key has come since, progress (autodoc.progress)
--- holds its messages back, and shows the latest of each once a key comes. Statuslines and the
--- User AutodocProgress event get every update all the same.
local M = {}

---@class autodoc.HeldProgress
---@field slot string whose message it is (a workspace's index run or vector fill)
---@field show fun() shows it
---@field final boolean the work's last message (kept in :messages): never replaced by a later one

local kept = false -- a kept message is on the screen and no key has come since
local held = {} ---@type autodoc.HeldProgress[] in the order they came
local listening = false

local function show_held()
  local shows = held
  held = {}
  for _, progress in ipairs(shows) do
    progress.show()
  end
end

local function on_key()
  if kept then
    kept = false
    vim.schedule(show_held) -- after the key is handled (on_key may not echo)
  end
end

--- Say `message` as a notification at `level`; `keep`: it stays on the screen until the next key.
---@param message string
---@param level integer vim.log.levels.*
---@param keep boolean
function M.say(message, level, keep)
  vim.notify(message, level, { title = 'autodoc' })
  if keep then
    kept = true
    if not listening then
      listening = true
      vim.on_key(on_key, vim.api.nvim_create_namespace('autodoc-screen'))
    end
  end
end

--- Show a progress message now, or once the user has read what is kept. Of the messages held for one
--- slot only the latest update is shown, after any final message before it.
---@param slot string
---@param show fun()
---@param final boolean
---@return boolean shown now
function M.progress(slot, show, final)
  if not kept then
    show()
    return true
  end
  held = vim.tbl_filter(function(progress) return progress.slot ~= slot or progress.final end, held)
  table.insert(held, { slot = slot, show = show, final = final })
  return false
end

return M
