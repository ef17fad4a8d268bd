--- The :AutodocSearch picker: a query prompt and the hit list on the left, a preview of the
--- file under the cursor on the right, and a row of stage checkboxes beneath the list.
--- Searches run as you type; lexical hits show at once and the list updates in place when the
--- slower stages answer. Answers to an older query are dropped, never shown. Its types: picker/types.lua.
--- (Over 300 lines: the search loop, the toggles, the workspace switch and the window's life share its state.)
---
--- Parts, telescope-style: finder (what to ask the engine), render (list, toggles, previewer),
--- layout (the floats), actions (what keys do). This module holds the open picker's state.
local autodoc = require('autodoc')
local rpc = require('autodoc.rpc')
local later = require('autodoc.later')
local stages = require('autodoc.stages')
local layout = require('autodoc.picker.layout')
local render = require('autodoc.picker.render')
local finder = require('autodoc.picker.finder')
local actions = require('autodoc.picker.actions')

local M = {}

---@type autodoc.PickerState|nil the open picker, for tests and mappings
M.state = nil
--- For each rendered answer (make bench): { level = 1|2, ms = keystroke to updated list, and its parts:
--- debounce_ms (keystroke to request), wait_ms (request to answer, engine_ms of it in the engine),
--- render_ms (drawing the list; the preview follows, render.preview_ms) }
M.latencies = {}
M.LOG_SIZE = 1000 -- entries kept

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

--- Search for what the prompt holds now (no debounce).
---@param state autodoc.PickerState
function M.search(state)
  state.seq = state.seq + 1
  local seq = state.seq
  local asked_at = vim.uv.hrtime()
  state.typed_at[seq] = state.last_keystroke or asked_at
  local query = vim.api.nvim_buf_get_lines(state.prompt_buf, 0, 1, false)[1] or ''
  state.query = query
  local current = function() return seq == state.seq and is_open(state) end
  local function show_error(err) render.message(state, rpc.describe(err)) end
  if state.mode ~= 'folders' and not state.workspace then
    if autodoc.error then
      render.message(state, autodoc.error) -- the host could not start: said once, shown here
    end
    return -- the engine is still opening: the search runs once it is
  elseif state.mode ~= 'folders' and autodoc.phase ~= 'ready' then
    -- The host exited since the picker opened: open the engine again first, then search.
    autodoc.when_ready(function()
      if current() then
        M.search(state)
      end
    end, function(message)
      if current() then
        render.message(state, message)
      end
    end)
    return
  elseif state.mode == 'folders' then
    render.answer(state, finder.folders(query))
  elseif state.mode == 'documents' then
    finder.documents(state.workspace, query, autodoc.config.limit, function(err, answer)
      if not current() then
        return
      end
      if err then
        show_error(err)
        return
      end
      render.answer(state, answer)
    end)
  elseif state.mode == 'related' then -- the prompt narrows the related sections (autodoc.related)
    require('autodoc.related').search(state, current, show_error)
  elseif query:match('^%s*$') then
    render.answer(state, { hits = {}, semantic = 'off', rank = {}, empty_prompt = true })
  else
    finder.stream({
      workspace = state.workspace,
      query = query,
      stages = stages.requested(state.stages, state.available),
      limit = autodoc.config.limit,
      is_current = current,
      on_error = show_error,
      on_answer = function(level, result)
        local arrived = vim.uv.hrtime()
        state.last_stages = result.stages
        render.answer(state, result)
        local drawn, typed = vim.uv.hrtime(), state.typed_at[seq]
        table.insert(M.latencies, { level = level, ms = (drawn - typed) / 1e6, stages = result.stages.performed,
          query = query, debounce_ms = (asked_at - typed) / 1e6, wait_ms = (arrived - asked_at) / 1e6,
          engine_ms = result.timing and result.timing.total, render_ms = (drawn - arrived) / 1e6, timing = result.timing })
        if #M.latencies > M.LOG_SIZE then
          table.remove(M.latencies, 1)
        end
        vim.api.nvim_exec_autocmds('User', { pattern = 'AutodocResults', data = { seq = seq, level = level } })
      end,
    })
  end
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
--- footer until the next keystroke (a notification alone went to :messages, unseen behind the floats).
---@param name 'lexical'|'semantic'|'rerank'
function M.toggle(name)
  local state = M.state
  if not state or (state.mode ~= 'search' and state.mode ~= 'related') then
    return
  end
  local refusal
  if state.available[name] == false then
    refusal = name == 'rerank' and 'autodoc: no ranker is configured: Rerank stays off'
      or 'autodoc: no embedding model: Semantic stays off'
  elseif not stages.toggle(state.stages, name) then
    refusal = 'autodoc: keep Lexical or Semantic on: one must find the hits'
  end
  render.notice(state, refusal)
  if refusal then
    vim.notify(refusal, vim.log.levels.WARN)
    return
  end
  render.toggles(state)
  state.timer = later.cancel(state.timer) -- the search below asks for the same text now
  M.search(state)
end

--- Search the next workspace, in name order, with the same query.
function M.next_workspace()
  local state = M.state
  if not state or state.mode == 'folders' or not state.workspace then
    return
  end
  local names = vim.tbl_keys(autodoc.workspaces)
  table.sort(names)
  if #names < 2 then
    vim.notify('autodoc: there is one workspace; add another with :AutodocWorkspaceAdd', vim.log.levels.INFO)
    return
  end
  local index = 1
  for i, name in ipairs(names) do
    if name == state.workspace then
      index = i % #names + 1
    end
  end
  state.workspace, state.moved, state.available = names[index], false, {}
  M._engine_ready(state)
end

--- Close the open picker and return to the window it was opened from.
function M.close()
  local state = M.state
  if not state then
    return
  end
  M.state = nil
  state.timer = later.cancel(state.timer)
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
  local file = state.root .. '/' .. hit.path
  if not vim.uv.fs_stat(state.root) then
    vim.notify(string.format('autodoc: the workspace root %s is not there (a drive not mounted?)', state.root),
      vim.log.levels.ERROR)
    return
  end
  if not vim.uv.fs_stat(file) then -- deleted since it was indexed: an empty new buffer said nothing
    vim.notify(string.format('autodoc: %s was deleted since it was indexed; the index is updated now', hit.path),
      vim.log.levels.WARN)
    autodoc.index(state.workspace, nil, { hit.path }, true) -- its AutodocIndexed refreshes the list
    return
  end
  M.close()
  if state.on_choose then -- a caller takes the hit (the /autodoc slash command)
    state.on_choose({ hit }, { workspace = state.workspace, root = state.root })
    return
  end
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
  -- When the embedding model finishes filling or the workspace's files change, refresh the open query. A
  -- scan that found nothing new does not: it re-ran the search (and a paid ranker) every scan_ms.
  local group = vim.api.nvim_create_augroup('autodoc-picker', { clear = true })
  vim.api.nvim_create_autocmd('User', {
    group = group,
    pattern = { 'AutodocIndexed', 'AutodocSemanticReady' },
    callback = function(event)
      local data = event.data or {}
      local unchanged = event.match == 'AutodocIndexed' and data.report and not autodoc.changed_files(data.report)
      if M.state == state and not unchanged and (data.workspace == nil or data.workspace == state.workspace) then
        state.root = autodoc.workspaces[state.workspace] or state.root
        M.search(state)
      end
    end,
  })
end

---@class autodoc.PickerOpenOptions
---@field mode autodoc.PickerMode|nil default 'search'
---@field query string|nil pre-fills the prompt
---@field workspace string|nil default: the first workspace
---@field related autodoc.RelatedSource|nil for mode 'related'
---@field on_choose fun(hits: autodoc.Hit[], where: { workspace: string, root: string })|nil takes the chosen hit
---  instead of opening it

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
    stages = stages.load(),
    available = {},
    hits = {},
    seq = 0,
    typed_at = {},
    related = opts.related,
    on_choose = opts.on_choose,
  }
  layout.open(state)
  M.state = state
  render.toggles(state)
  actions.set_keys(M, state)
  watch(state)
  if opts.query and opts.query ~= '' then
    vim.api.nvim_buf_set_lines(state.prompt_buf, 0, -1, false, { opts.query })
  end
  vim.cmd('startinsert!')
  autodoc.when_ready(function() M._engine_ready(state) end, function(message)
    if M.state == state then
      render.message(state, message)
    end
  end)
end

--- The workspace to search when none is named: the first configured, else the first the engine knows.
---@return string|nil
local function default_workspace()
  local configured = (autodoc.config.workspaces[1] or {}).name
  if configured and autodoc.workspaces[configured] then
    return configured
  end
  local names = vim.tbl_keys(autodoc.workspaces)
  table.sort(names)
  return names[1]
end

--- The engine is open: settle the workspace, then search what was typed meanwhile.
---@param state autodoc.PickerState
function M._engine_ready(state)
  if M.state ~= state then
    return
  end
  if state.mode ~= 'folders' then
    state.workspace = state.workspace or default_workspace()
    if not state.workspace then
      render.message(state, 'autodoc: no workspace yet; add one with :AutodocWorkspaceAdd or '
        .. "setup({ workspaces = { { name = 'kb', path = '~/kb' } } })")
      return
    end
    state.root = autodoc.workspaces[state.workspace] or ''
    vim.api.nvim_win_set_config(state.prompt_win, { title = layout.prompt_title(state.mode, state.workspace) })
    -- Which stages the workspace can run, before the first answer says so (an empty prompt asks nothing).
    local asked = state.workspace
    rpc.request('workspace.status', { asked }, function(err, status)
      if not err and M.state == state and state.workspace == asked and status then -- not after <M-w> moved on
        state.available.semantic = status.semantic ~= 'off'
        state.available.rerank = status.ranker ~= nil and status.ranker ~= vim.NIL
        state.rank_model = state.available.rerank and status.ranker.model ~= vim.NIL and status.ranker.model or nil
        render.toggles(state)
      end
    end)
  end
  M.search(state)
end

return M
