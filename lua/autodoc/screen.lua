--- What the user must read stays on the screen until the next key. Errors, warnings and the answers to
--- commands are kept: while one is on the screen and no key has come since, progress (autodoc.progress)
--- holds its messages back, and shows the latest of each once a key comes. Statuslines and the
--- User AutodocProgress event get every update all the same. What does not fit in the message area (more rows
--- than 'cmdheight', or a last row reaching the ruler) shows in a float until the key, and so does what insert
--- mode's '-- INSERT --' would cover: the hit-enter prompt would stop every plugin request meanwhile.
local M = {}

---@class autodoc.HeldProgress
---@field slot string whose message it is (a workspace's index run or vector fill)
---@field show fun() shows it
---@field final boolean the work's last message (kept in :messages): never replaced by a later one

local kept = false -- a kept message is on the screen and no key has come since
local held = {} ---@type autodoc.HeldProgress[] in the order they came
local listening = false
local float = nil ---@type integer|nil the window showing lines too many for the message area (say_lines)

local messagesopt = nil ---@type string|nil the user's 'messagesopt', while the float's lines are in the history

local function close_float()
  if float and vim.api.nvim_win_is_valid(float) then
    vim.api.nvim_win_close(float, true)
  end
  float = nil
  if messagesopt then
    vim.o.messagesopt, messagesopt = messagesopt, nil
  end
end

local function show_held()
  local shows = held
  held = {}
  for _, progress in ipairs(shows) do
    progress.show()
  end
end

--- Only a key the user typed reads the message: the picker's preview centres its window with `:normal! zz`,
--- whose keys come here too (with nothing typed).
local function on_key(_, typed)
  if kept and typed ~= nil and typed ~= '' then
    kept = false
    vim.schedule(function() -- after the key is handled (on_key may not echo or close windows)
      close_float()
      show_held()
    end)
  end
end

--- Keep what is on the screen until the next key.
local function keep()
  kept = true
  if not listening then
    listening = true
    vim.on_key(on_key, vim.api.nvim_create_namespace('autodoc-screen'))
  end
end

--- The cells a message may fill on the last row: Neovim keeps the ruler's and 'showcmd''s columns there
--- (its comp_col()), and a message that reaches them raises the hit-enter prompt (at 80 columns, 69 cells).
---@return integer
function M.last_row_cells()
  local windows = vim.tbl_filter(function(win) return vim.api.nvim_win_get_config(win).relative == '' end,
    vim.api.nvim_tabpage_list_wins(0))
  local last_has_status = vim.o.laststatus > 1 or vim.o.laststatus == 1 and #windows > 1
  local reserved = vim.o.ruler and not last_has_status and 18 or 0
  if vim.o.showcmd and vim.o.showcmdloc == 'last' then
    reserved = reserved + 10 + ((not vim.o.ruler or last_has_status) and 1 or 0)
  end
  return vim.o.columns - reserved
end

--- Whether `lines` show in the message area with no hit-enter prompt: in 'cmdheight' rows ('columns' wide: a
--- line as wide wraps too), the last short of the ruler and showcmd columns.
---@param lines string[]
---@return boolean
local function fits(lines)
  local rows = 0
  for _, line in ipairs(lines) do
    rows = rows + math.floor(vim.fn.strdisplaywidth(line) / vim.o.columns) + 1
  end
  local last = vim.fn.strdisplaywidth(lines[#lines]) % vim.o.columns
  return rows < vim.o.cmdheight or rows == vim.o.cmdheight and last < M.last_row_cells()
end

--- Insert mode (a picker's prompt) draws '-- INSERT --' over the message area: a message there is never seen.
---@return boolean
local function mode_hides_messages()
  return vim.o.showmode and vim.api.nvim_get_mode().mode:match('^[iR]') ~= nil
end

--- A notification plugin (nvim-notify, snacks.notifier, ...) replaces vim.notify and shows each message in a
--- window of its own: the message area's limits are not its.
---@return boolean
local function notify_is_neovims()
  local source = debug.getinfo(vim.notify, 'S').source
  return source:find('vim/_editor.lua', 1, true) ~= nil
end

local HIGHLIGHT = { [vim.log.levels.ERROR] = 'ErrorMsg', [vim.log.levels.WARN] = 'WarningMsg' }

--- `lines` in a float just above the message area, broken between words to the editor's width.
---@param lines string[]
---@param level integer
local function open_float(lines, level)
  close_float()
  local room_across = math.max(vim.o.columns - 2, 1)
  lines = require('autodoc.wrap').between_words(table.concat(lines, '\n'), room_across)
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].bufhidden = 'wipe'
  local widest = math.max(unpack(vim.tbl_map(vim.fn.strdisplaywidth, lines)))
  local width = math.max(math.min(widest, room_across), 1)
  local room = math.max(vim.o.lines - vim.o.cmdheight - 4, 1) -- its border, and the last window's status line
  float = vim.api.nvim_open_win(buf, false, { relative = 'editor', row = 0, col = 0, width = width, height = 1,
    style = 'minimal', border = 'rounded', title = ' autodoc ', focusable = false, zindex = 200, noautocmd = true })
  vim.wo[float].wrap = true -- its lines fit, broken between words (a name is never cut in two)
  vim.wo[float].winhighlight = HIGHLIGHT[level] and 'NormalFloat:' .. HIGHLIGHT[level] or ''
  local height = math.min(vim.api.nvim_win_text_height(float, {}).all, room)
  vim.api.nvim_win_set_config(float, { relative = 'editor', row = vim.o.lines - vim.o.cmdheight - height - 3, col = 0,
    height = height })
end

--- Put `lines` in |:messages| without the hit-enter prompt their rows would raise: 'messagesopt' waits 0 ms
--- instead until the float closes (Neovim 0.11 and later; older ones keep them out of :messages). Put back
--- sooner, it can come before Neovim looks at it, and the prompt shows.
---@param lines string[]
---@param level integer
local function into_history(lines, level)
  local ok, saved = pcall(function() return vim.o.messagesopt end)
  if not ok then
    return
  end
  messagesopt = messagesopt or saved
  vim.o.messagesopt = saved:gsub('hit%-enter', 'wait:0')
  local inserting = vim.api.nvim_get_mode().mode:match('^i') ~= nil
  local win, cursor = vim.api.nvim_get_current_win(), vim.api.nvim_win_get_cursor(0)
  vim.api.nvim_echo({ { table.concat(lines, '\n'), HIGHLIGHT[level] } }, true, {})
  -- The wait draws 'Press ENTER or type command to continue' before it ends, and nothing redraws that row (not
  -- even :redraw): the words stayed under the float with no prompt behind them. An empty message clears the row,
  -- now (the wait came inside this echo) and after this event (it came once the event ended).
  vim.api.nvim_echo({ { '' } }, false, {})
  vim.schedule(function()
    if float then
      vim.api.nvim_echo({ { '' } }, false, {})
    end
  end)
  -- In insert mode the wait moves the cursor a character left, as leaving insert mode does: the next key typed
  -- went before the last character (a prompt's `@nosuch foo` became `@nosuch foXo`).
  if inserting and vim.api.nvim_get_current_win() == win then
    vim.api.nvim_win_set_cursor(win, cursor)
  end
end

--- Say `message` as a notification at `level`; `keep`: it stays on the screen until the next key, in a float
--- above the message area when it does not fit there (more rows than 'cmdheight' raise the hit-enter prompt,
--- during which Neovim answers no plugin request: searches, progress and the picker stop until Enter), or
--- when insert mode's '-- INSERT --' would cover it.
---@param message string
---@param level integer vim.log.levels.*
---@param keep_it boolean
function M.say(message, level, keep_it)
  local lines = vim.split(message, '\n', { plain = true })
  if keep_it and notify_is_neovims() and (not fits(lines) or mode_hides_messages()) then
    open_float(lines, level)
    into_history(lines, level)
  else
    vim.notify(message, level, { title = 'autodoc' })
  end
  if keep_it then
    keep()
  end
end

--- Say `lines` and keep them until the next key (M.say).
---@param lines string[] the first says whose it is ('autodoc: ...')
---@param level integer vim.log.levels.*
function M.say_lines(lines, level)
  M.say(table.concat(lines, '\n'), level, true)
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
