--- The :AutodocSearch picker: a query prompt and the hit list on the left, a preview of the
--- file under the cursor on the right, and a row of stage checkboxes beneath the list.
--- Searches run as you type; lexical hits show at once and the list updates in place when the
--- slower stages answer. Answers to an older query are dropped, never shown. Its types: picker/types.lua.
--- (Over 300 lines: the search loop, the toggles, the workspace switch and the window's life share its state.)
---
--- Parts, telescope-style: finder (what to ask the engine), render (list, toggles, previewer),
--- layout (the floats), actions (what keys do). This module holds the open picker's state.
local autodoc = require('autodoc')
local later = require('autodoc.later')
local session_core = require('autodoc.session')
local scope_of = require('autodoc.session.scope')
local layout = require('autodoc.picker.layout')
local render = require('autodoc.picker.render')
local finder = require('autodoc.picker.finder')
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

--- Draw what the session holds now (its on_update).
---@param state autodoc.PickerState
local function draw(state)
  local session = state.session
  if not is_open(state) then
    return
  end
  vim.api.nvim_win_set_config(state.prompt_win, { title = ' ' .. session:title() .. ' ' })
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
  local query = vim.api.nvim_buf_get_lines(state.prompt_buf, 0, 1, false)[1] or ''
  state.query = query
  if state.session then
    state.session:ask(query, state.last_keystroke)
    return
  end
  state.seq = state.seq + 1
  local seq = state.seq
  local current = function() return seq == state.seq and is_open(state) end
  if state.mode == 'folders' then
    render.answer(state, finder.folders(query))
    return
  end
  if not state.scope then
    return -- before the engine is open: _engine_ready searches what was typed
  end
  local scope, text, problem = scope_of.parse(query, state.scope, scope_of.names())
  if problem or #scope_of.searched(scope) == 0 then
    render.message(state, problem or require('autodoc.session.text').NO_WORKSPACE)
    return
  end
  state.searched = scope
  vim.api.nvim_win_set_config(state.prompt_win, { title = layout.prompt_title(state.mode, scope_of.describe(scope)) })
  finder.documents_in(scope_of.searched(scope), autodoc.workspaces, text, autodoc.config.limit, function(err, answer)
    if current() then
      if err then
        render.message(state, require('autodoc.rpc').describe(err))
      else
        render.answer(state, answer)
      end
    end
  end)
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
  if state and state.session then
    state.timer = later.cancel(state.timer) -- the search the toggle asks is for the same text, now
    state.session:toggle(name)
  end
end

--- Search the next scope (every workspace, then each by name) with the same query.
function M.next_workspace()
  local state = M.state
  if state and state.session then
    state.moved = false
    state.session:next_workspace()
  elseif state and state.mode == 'documents' and state.scope then -- :AutodocOpen's list follows the same round
    local names = scope_of.names()
    local refusal = scope_of.next_refusal(state.query or '', names)
    if refusal then
      render.notice(state, refusal)
      return
    end
    state.moved, state.scope = false, scope_of.next(state.scope, names)
    M.search(state)
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
  if state.session then
    state.session:close()
  end
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
  if state.on_choose then -- a caller takes the hit (the /autodoc slash command)
    M.close()
    state.on_choose({ hit }, state.session)
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
    autodoc.index(hit.workspace or state.workspace, nil, { hit.path }, true) -- its AutodocIndexed refreshes the list
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
  vim.fn.setqflist({}, ' ', { title = 'autodoc: ' .. (state.query or ''), items = items })
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
      if state.session then
        state.session:typed()
      end
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
        if state.session then
          draw(state)
        else
          M.search(state)
        end
        render.preview(state)
      end
    end,
  })
  -- The documents and folders lists refresh as the session does (autodoc.session) when the workspace's files
  -- change or its embeddings finish filling; a scan that found nothing new asks nothing.
  local group = vim.api.nvim_create_augroup('autodoc-picker', { clear = true })
  vim.api.nvim_create_autocmd('User', {
    group = group,
    pattern = { 'AutodocIndexed', 'AutodocSemanticReady' },
    callback = function(event)
      local data = event.data or {}
      local unchanged = event.match == 'AutodocIndexed' and data.report and not autodoc.changed_files(data.report)
      if M.state == state and not state.session and not unchanged
          and (data.workspace == nil or vim.tbl_contains(scope_of.searched(state.searched), data.workspace)) then
        M.search(state)
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
  local state = {
    mode = mode,
    workspace = opts.workspace,
    root = opts.workspace and autodoc.workspaces[opts.workspace] or '',
    origin_win = vim.api.nvim_get_current_win(),
    hits = {},
    seq = 0,
    on_choose = opts.on_choose,
    asked_scope = opts.scope or opts.workspace,
    opened_from = vim.api.nvim_buf_get_name(0),
  }
  if mode == 'search' or mode == 'related' then
    state.session = session_core.new({ source = 'builtin', scope = opts.scope or opts.workspace, related = opts.related,
      on_update = function() draw(state) end,
      prompt_now = function()
        return vim.api.nvim_buf_is_valid(state.prompt_buf)
          and vim.api.nvim_buf_get_lines(state.prompt_buf, 0, 1, false)[1] or nil
      end })
  end
  layout.open(state)
  M.state = state
  render.toggles(state)
  actions.set_keys(M, state)
  watch(state)
  if opts.query and opts.query ~= '' then
    vim.api.nvim_buf_set_lines(state.prompt_buf, 0, -1, false, { opts.query })
  end
  vim.cmd('startinsert!')
  local function failed(message)
    if M.state == state then
      render.message(state, message)
    end
  end
  if state.session then
    state.session:start(function() M._engine_ready(state) end, failed)
  else
    autodoc.when_ready(function() M._engine_ready(state) end, failed)
  end
end

--- The engine is open: settle the documents list's workspace (a search's scope is its session's), then search
--- what was typed meanwhile.
---@param state autodoc.PickerState
function M._engine_ready(state)
  if M.state ~= state then
    return
  end
  if state.mode == 'documents' then -- the scope as a search's (autodoc.session.scope); a bad name is said
    local scope, problem = scope_of.resolve(state.asked_scope, scope_of.names())
    if problem then
      autodoc.state.notify(problem, vim.log.levels.WARN)
    end
    state.scope = scope or scope_of.default(state.opened_from) or {}
  end
  M.search(state)
end

return M
