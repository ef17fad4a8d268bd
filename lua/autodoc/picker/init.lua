--- The :AutodocSearch picker: a query prompt and the hit list on the left, a preview of the
--- file under the cursor on the right, and a row of stage checkboxes beneath the list.
--- Searches run as you type; lexical hits show at once and the list updates in place when the
--- slower stages answer. Answers to an older query are dropped, never shown. Its types: picker/types.lua.
---
--- Every list it shows is a session (autodoc.session) with the strategy of its mode: search, related,
--- documents or folders; the session holds the prompt, the answers and the message, the picker its windows.
--- Parts, telescope-style: render (list, toggles, previewer), layout (the floats), actions (what keys do). This
--- module holds the open picker's state.
local autodoc = require('autodoc')
local later = require('autodoc.later')
local session_core = require('autodoc.session')
local strategies = require('autodoc.session.strategies')
local scope_of = require('autodoc.session.scope')
local layout = require('autodoc.picker.layout')
local render = require('autodoc.picker.render')
local actions = require('autodoc.picker.actions')

local M = {}

---@type autodoc.PickerState|nil the open picker, for mappings
M.state = nil

--- Re-render the preview of the selected hit.
---@param state autodoc.PickerState
function M.preview(state)
  render.preview(state)
end

---@param state autodoc.PickerState
---@return boolean
local function is_open(state)
  return M.state == state and vim.api.nvim_win_is_valid(state.list_win)
end

--- Does the open list search (stages, workspaces), or only list (documents, folders)?
---@param state autodoc.PickerState
---@return boolean
local function searches(state)
  return state.mode == 'search' or state.mode == 'related'
end

--- Draw what the session holds now (its on_update).
---@param state autodoc.PickerState
local function draw(state)
  local session = state.session
  if not is_open(state) then
    return
  end
  local title = searches(state) and ' ' .. session:title() .. ' '
    or layout.prompt_title(state.mode, scope_of.describe(session.searched))
  vim.api.nvim_win_set_config(state.prompt_win, { title = title })
  if session.message then
    state.drawn = nil
    render.message(state, session.message)
  elseif session.answer and state.drawn ~= session.answer then
    state.drawn = session.answer
    render.answer(state, session.answer)
  end
  render.toggles(state)
  render.notice(state, session.notice)
end

--- Search for what the prompt holds now (no debounce).
---@param state autodoc.PickerState
function M.search(state)
  state.session:ask(vim.api.nvim_buf_get_lines(state.prompt_buf, 0, 1, false)[1] or '', state.last_keystroke)
end

--- A keystroke after a pause searches at once; one that follows another within `debounce_ms` waits until
--- typing pauses that long (a paste, key repeat, a fast typist), so a burst asks for its first and last text.
---@param state autodoc.PickerState
---@param paused boolean the keystroke before this one was at least `debounce_ms` ago
local function schedule_search(state, paused)
  local waiting = state.timer ~= nil
  state.timer = later.cancel(state.timer)
  if paused and not waiting then
    M.search(state)
    return
  end
  state.timer = later.call(autodoc.config.debounce_ms, function()
    state.timer = nil
    if M.state == state then
      M.search(state)
    end
  end)
end

--- Flip stage `name` in the open picker and search again. What cannot be flipped is said in the list's
--- footer until the next keystroke.
---@param name 'lexical'|'semantic'|'rerank'
function M.toggle(name)
  local state = M.state
  if state and searches(state) then
    state.timer = later.cancel(state.timer) -- the search the toggle asks is for the same text, now
    state.session:toggle(name)
  end
end

--- Search the next scope (every workspace, then each by name) with the same query; the documents list follows
--- the same round.
function M.next_workspace()
  local state = M.state
  if state and state.mode ~= 'folders' then
    state.moved = false
    state.session:next_workspace()
  end
end

--- Close the open picker and return to the window it was opened from.
function M.close()
  local state = M.state
  if not state then
    return
  end
  M.state = nil
  state.timer = later.cancel(state.timer)
  state.session:close()
  layout.close(state)
  vim.cmd('stopinsert')
  if vim.api.nvim_win_is_valid(state.origin_win) then
    vim.api.nvim_set_current_win(state.origin_win)
  end
end

--- Open the selected hit (or add the selected folder as a workspace).
---@param how 'edit'|'vsplit'|'split'|'tab'|nil
function M.open_hit(how)
  local state = M.state
  local hit = state and render.selected(state)
  if not state or not hit then
    return
  end
  if hit.folder then
    M.close()
    actions.add_folder(hit)
    return
  end
  if state.session.on_choose then -- a caller takes the hit (the /autodoc slash command)
    M.close()
    state.session.on_choose({ hit }, state.session)
    return
  end
  local file = render.file(state, hit)
  local root = file:sub(1, #file - #hit.path - 1)
  if not vim.uv.fs_stat(root) then
    autodoc.state.notify(string.format('the workspace root %s is not there (a drive not mounted?)', root),
      vim.log.levels.ERROR)
    return
  end
  if not vim.uv.fs_stat(file) then -- deleted since it was indexed: say so, not an empty buffer
    autodoc.state.notify(string.format('%s was deleted since it was indexed; the index is updated now', hit.path),
      vim.log.levels.WARN)
    -- its AutodocIndexed refreshes the list
    autodoc.index(hit.workspace or state.session:single_workspace(), nil, { hit.path }, true)
    return
  end
  M.close()
  actions.jump(file, hit.line_start, hit.line_end, how)
end

--- Send every hit to the quickfix list and open it.
function M.quickfix()
  local state = M.state
  if not state then
    return
  end
  local items = actions.quickfix_items(state)
  M.close()
  vim.fn.setqflist({}, ' ', { title = 'autodoc: ' .. (state.session.prompt or ''), items = items })
  vim.cmd('copen')
end

---@param state autodoc.PickerState
local function watch(state)
  vim.api.nvim_create_autocmd({ 'TextChangedI', 'TextChanged' }, {
    buffer = state.prompt_buf,
    callback = function()
      local now = vim.uv.hrtime()
      local paused = not state.last_keystroke or now - state.last_keystroke >= autodoc.config.debounce_ms * 1e6
      state.last_keystroke = now
      state.moved = false -- a new query: the selection starts on its first hit again
      state.session:typed()
      render.notice(state, nil)
      schedule_search(state, paused)
    end,
  })
  vim.api.nvim_create_autocmd('BufLeave', {
    buffer = state.prompt_buf,
    callback = function()
      vim.schedule(function()
        local current = vim.api.nvim_get_current_win()
        if M.state == state and current ~= state.list_win and current ~= state.toggles_win then
          M.close()
        end
      end)
    end,
  })
  vim.api.nvim_create_autocmd('VimResized', {
    group = vim.api.nvim_create_augroup('autodoc-picker-size', { clear = true }),
    callback = function()
      if is_open(state) then
        layout.resize(state)
        state.drawn = nil -- rows fitted to the old width: draw them again
        draw(state)
        render.preview(state)
      end
    end,
  })
end

---@class autodoc.PickerOpenOptions
---@field mode autodoc.PickerMode|nil default 'search'
---@field query string|nil pre-fills the prompt
---@field workspace string|nil one workspace to search, or whose documents to list (as `scope = { name }`)
---@field scope string|string[]|nil the workspaces searched, or whose documents are listed: a name, a list, '*',
---   or '@a @b' as typed (default: setup's scope)
---@field related autodoc.RelatedSource|nil for mode 'related'
---@field on_choose fun(hits: autodoc.Hit[], session: autodoc.Session)|nil called with the chosen hit in place
---   of opening it

--- Open the picker.
---@param opts autodoc.PickerOpenOptions|nil
function M.open(opts)
  opts = opts or {}
  if M.state then
    M.close()
  end
  local mode = opts.mode or 'search'
  ---@type autodoc.PickerState
  local state = { mode = mode, origin_win = vim.api.nvim_get_current_win() }
  local strategy = ({ search = strategies.search, related = strategies.related,
    documents = strategies.documents, folders = strategies.folders })[mode]
  state.session = session_core.new({ source = 'builtin', strategy = strategy, scope = opts.scope or opts.workspace,
    related = opts.related, on_choose = opts.on_choose,
    on_update = function() draw(state) end,
    prompt_now = function()
      return vim.api.nvim_buf_is_valid(state.prompt_buf)
        and vim.api.nvim_buf_get_lines(state.prompt_buf, 0, 1, false)[1] or nil
    end })
  layout.open(state, opts.workspace)
  M.state = state
  render.toggles(state)
  actions.set_keys(M, state)
  watch(state)
  if opts.query and opts.query ~= '' then
    vim.api.nvim_buf_set_lines(state.prompt_buf, 0, -1, false, { opts.query })
  end
  vim.cmd('startinsert!')
  state.session:start(function()
    if M.state == state then
      M.search(state) -- what was typed meanwhile
    end
  end)
end

return M
