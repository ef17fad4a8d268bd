--- :AutodocRelatedLive: a side list of the sections related to the one under the cursor, refreshed when the
--- cursor enters another section. A move only compares the cursor's line with the section shown (no request
--- while it stays inside, so typing costs nothing); entering another section asks after `related_ms` of rest,
--- a move on before then cancels the ask, and an answer for a section the cursor has left is dropped (and the
--- request lane drops one a newer request replaced). The list is a session (autodoc.session, strategy
--- related_live): its tick says which ask an answer is for.
local autodoc = require('autodoc')
local later = require('autodoc.later')
local rpc = require('autodoc.rpc')

local M = {}

---@class autodoc.RelatedLive
---@field buf integer the side list
---@field win integer
---@field origin_win integer the window the cursor moved in last (where <CR> opens a hit)
---@field timer autodoc.Later|nil the pending ask
---@field session autodoc.Session the list's asks and answers (an answer to an older ask is dropped)
---@field shown { file: string, line_start: integer, line_end: integer }|nil the section listed
---@field wanted { file: string, line: integer }|nil the section the cursor moved to last
---@field asked { buf: integer, line: integer, file: string }|nil the section asked for last

---@type autodoc.RelatedLive|nil
M.state = nil

local HEADER_LINES = 1

---@param state autodoc.RelatedLive
---@param lines string[]
local function show(state, lines)
  if not vim.api.nvim_buf_is_valid(state.buf) then
    return
  end
  vim.bo[state.buf].modifiable = true
  vim.api.nvim_buf_set_lines(state.buf, 0, -1, false, lines)
  vim.bo[state.buf].modifiable = false
end

--- Is the cursor (file, line) still in the section listed (or asked for)?
---@param state autodoc.RelatedLive
---@param file string
---@param line integer
---@return boolean
local function same_section(state, file, line)
  local shown = state.shown
  return shown ~= nil and shown.file == file and line >= shown.line_start and line <= shown.line_end
end

---@param state autodoc.RelatedLive
---@param answer autodoc.Answer
---@param file string
local function list(state, answer, file)
  local about = answer.related or {}
  local section = rpc.value(about.section)
  state.shown = section and { file = file, line_start = section.line_start, line_end = section.line_end } or nil
  local width = vim.api.nvim_win_is_valid(state.win) and vim.api.nvim_win_get_width(state.win) or 60
  local render = require('autodoc.picker.render')
  local header = 'Related to ' .. (about.path or '?') .. (section and (' › ' .. section.breadcrumb) or '')
  local scope = require('autodoc.session.scope')
  local searched = scope.labelled(answer)
  if #searched > 1 then -- of several workspaces: which (kept by the cut, which takes the middle)
    header = header .. ' · ' .. scope.describe(rpc.value(answer.scope.asked), searched)
  end
  local rows, label_cells = render.rows(answer, width)
  local lines = { render.shorten_middle(header, width) }
  vim.list_extend(lines, rows)
  if #answer.hits == 0 then
    table.insert(lines, rpc.value(about.note) or '(no related section)')
  end
  show(state, lines)
  if vim.api.nvim_buf_is_valid(state.buf) then
    vim.api.nvim_buf_clear_namespace(state.buf, render.ns, 0, -1)
    render.mark_labels(state.buf, answer.hits, label_cells, HEADER_LINES, searched)
  end
  -- User AutodocRelatedLive: the list shows a new answer; `tick` is the ask it answers (each section asked
  -- takes the next), as picker_state's tick is a search's.
  vim.api.nvim_exec_autocmds('User', { pattern = 'AutodocRelatedLive', data = { tick = state.session.tick } })
end

--- Draw the session's newest answer, or why there is none (its on_update; answers it dropped never come).
---@param state autodoc.RelatedLive
local function draw(state)
  local session = state.session
  if M.state ~= state then
    return
  end
  if session.message then
    state.shown = nil
    show(state, { session.message })
  elseif session.answer then
    list(state, session.answer, state.asked.file)
  end
end

--- Ask for the section at (buf, line) now.
---@param state autodoc.RelatedLive
---@param buf integer
---@param line integer
local function ask(state, buf, line)
  state.asked = { buf = buf, line = line, file = vim.api.nvim_buf_get_name(buf) }
  state.session:ask('')
end

--- The cursor moved (or entered a buffer): ask again only when it left the section listed.
function M.moved()
  local state = M.state
  if not state then
    return
  end
  if not vim.api.nvim_win_is_valid(state.win) then
    M.stop()
    return
  end
  local win = vim.api.nvim_get_current_win()
  local buf = vim.api.nvim_get_current_buf()
  if win == state.win or vim.bo[buf].buftype ~= '' or vim.bo[buf].filetype ~= 'markdown' then
    return
  end
  state.origin_win = win
  local file, line = vim.api.nvim_buf_get_name(buf), vim.api.nvim_win_get_cursor(win)[1]
  if same_section(state, file, line) then
    if state.timer then -- back in the section listed before the ask for another went out: it is cancelled
      state.timer, state.wanted = later.cancel(state.timer), nil
    end
    return
  end
  if state.wanted and state.wanted.file == file and state.wanted.line == line then
    return -- the same line (a move along it, or a buffer entered again): asked already, or about to be
  end
  state.wanted = { file = file, line = line }
  later.cancel(state.timer) -- moved on before the ask: it is cancelled
  state.timer = later.call(autodoc.config.related_ms, function()
    state.timer = nil
    if M.state == state and vim.api.nvim_buf_is_valid(buf) then
      ask(state, buf, line)
    end
  end)
end

--- <CR> in the side list: open the hit under the cursor in the window the cursor came from.
local function open_hit()
  local state = M.state
  if not state then
    return
  end
  local session = state.session
  local hit = session:hits()[vim.api.nvim_win_get_cursor(state.win)[1] - HEADER_LINES]
  if not hit then
    return
  end
  if vim.api.nvim_win_is_valid(state.origin_win) then
    vim.api.nvim_set_current_win(state.origin_win)
  else
    vim.cmd('wincmd p')
  end
  local file = require('autodoc.session.scope').file(hit, session.answer, session.related.root)
  require('autodoc.picker.actions').jump(file, hit.line_start, hit.line_end, 'edit')
end

--- Where the side list goes (:help :AutodocRelatedLive): at the right, 40% of the editor's columns (40 to 60),
--- while the document keeps `document` columns; below it, a third of the rows (at least 8), in a narrower editor.
M.SIDE = { share = 0.4, min = 40, max = 60, document = 60, below_rows = 8 }

---@param buf integer
---@return integer the side list's window
local function open_side(buf)
  local side = M.SIDE
  local width = math.min(side.max, math.max(side.min, math.floor(vim.o.columns * side.share)))
  if vim.o.columns - width - 1 >= side.document then
    local win = vim.api.nvim_open_win(buf, false, { split = 'right', win = -1, width = width })
    vim.wo[win].winfixwidth = true
    return win
  end
  local height = math.max(side.below_rows, math.floor(vim.o.lines / 3))
  local win = vim.api.nvim_open_win(buf, false, { split = 'below', win = -1, height = height })
  vim.wo[win].winfixheight = true
  return win
end

--- Open the side list and follow the cursor.
function M.start()
  if M.state then
    return
  end
  local origin = vim.api.nvim_get_current_win()
  local buf = vim.api.nvim_create_buf(false, true)
  vim.bo[buf].bufhidden = 'wipe'
  vim.api.nvim_buf_set_name(buf, 'autodoc://related')
  local win = open_side(buf)
  vim.wo[win].wrap, vim.wo[win].number, vim.wo[win].cursorline = false, false, true
  local state = { buf = buf, win = win, origin_win = origin } ---@type autodoc.RelatedLive
  state.session = require('autodoc.session').new({ source = 'related-live', background = true,
    strategy = require('autodoc.session.strategies').related_live(function()
      return require('autodoc.related').here(state.asked.buf, state.asked.line)
    end),
    on_update = function() draw(state) end })
  M.state = state
  show(M.state, { 'Related sections: move the cursor into a section of a workspace file' })
  vim.keymap.set('n', '<CR>', open_hit, { buffer = buf, nowait = true, silent = true })
  vim.keymap.set('n', 'q', M.stop, { buffer = buf, nowait = true, silent = true })
  local group = vim.api.nvim_create_augroup('autodoc-related-live', { clear = true })
  vim.api.nvim_create_autocmd({ 'CursorMoved', 'CursorMovedI', 'BufEnter' }, { group = group, callback = M.moved })
  vim.api.nvim_create_autocmd('WinClosed', { group = group, pattern = tostring(win), callback = function()
    vim.schedule(M.stop)
  end })
  -- its rows are cut to the window's width: drawn again when that changes (they kept 80 columns' cuts at 200)
  vim.api.nvim_create_autocmd({ 'VimResized', 'WinResized' }, { group = group, callback = function()
    if M.state == state then
      draw(state)
    end
  end })
  state.session:start(function()
    if M.state == state and vim.api.nvim_win_is_valid(origin) then
      vim.api.nvim_win_call(origin, M.moved)
    end
  end)
end

--- Close the side list and stop following the cursor.
function M.stop()
  local state = M.state
  if not state then
    return
  end
  M.state = nil
  state.timer = later.cancel(state.timer)
  state.session:close()
  pcall(vim.api.nvim_del_augroup_by_name, 'autodoc-related-live')
  if vim.api.nvim_win_is_valid(state.win) then
    vim.api.nvim_win_close(state.win, true)
  end
end

--- :AutodocRelatedLive: open the side list, or close it.
function M.toggle()
  if M.state then
    M.stop()
  else
    M.start()
  end
end

return M
