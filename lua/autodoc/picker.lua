--- The :AutodocSearch picker: a query prompt and the hit list on the left, a preview of the
--- file under the cursor on the right, and a row of stage checkboxes beneath the list.
--- Searches run as you type; lexical hits show at once and the list updates in place when the
--- slower stages answer. Answers to an older query are dropped, never shown.
local autodoc = require('autodoc')
local rpc = require('autodoc.rpc')
local stages = require('autodoc.stages')

local M = {}
local ns = vim.api.nvim_create_namespace('autodoc')
local LABELS = { lexical = 'Lexical', semantic = 'Semantic', rerank = 'Rerank' }

M.state = nil -- the open picker, for tests and mappings
M.latencies = {} -- { level = 1|2, ms = keystroke-to-updated-list } for each rendered answer (make bench)

local function float(buf, config, enter)
  return vim.api.nvim_open_win(buf, enter, vim.tbl_extend('force', { relative = 'editor', style = 'minimal',
    border = 'rounded' }, config))
end

local function scratch(filetype)
  local buf = vim.api.nvim_create_buf(false, true)
  vim.bo[buf].bufhidden = 'wipe'
  if filetype then
    vim.bo[buf].filetype = filetype
  end
  return buf
end

local function layout()
  local width = math.floor(vim.o.columns * 0.9)
  local height = math.floor(vim.o.lines * 0.8)
  local row = math.floor((vim.o.lines - height) / 2)
  local col = math.floor((vim.o.columns - width) / 2)
  local left = math.floor(width * 0.5)
  return {
    prompt = { row = row, col = col, width = left, height = 1 },
    list = { row = row + 3, col = col, width = left, height = height - 6 },
    toggles = { row = row + height - 1, col = col, width = left, height = 1 },
    preview = { row = row, col = col + left + 2, width = width - left - 2, height = height },
  }
end

local function workspace_name(opts)
  return opts.workspace or next(autodoc.workspaces) or (autodoc.config.workspaces[1] or {}).name
end

-- Rendering ---------------------------------------------------------------------------------

local function hit_line(hit)
  local via = table.concat(hit.via or {}, '+')
  local mark = hit.superseded and '  (superseded)' or ''
  return string.format('%s:%d-%d  %s  %.2f  [%s]%s', hit.path, hit.line_start, hit.line_end, hit.breadcrumb,
    hit.relevance or 0, via, mark)
end

local function list_title(answer)
  local parts = {}
  local rank = answer.rank or {}
  if rank.state == 'ranked' then
    table.insert(parts, 're-ranked by ' .. tostring(rank.model))
  elseif rank.state == 'error' then
    table.insert(parts, 'not re-ranked: ' .. tostring(rank.error))
  elseif answer.stages and answer.stages.skipped and answer.stages.skipped.rerank then
    table.insert(parts, 'not re-ranked: ' .. answer.stages.skipped.rerank)
  end
  if answer.semantic == 'partial' or answer.semantic == 'switching' then
    table.insert(parts, 'semantic ' .. answer.semantic)
  end
  return ' ' .. (#parts > 0 and table.concat(parts, ' · ') or string.format('%d hits', #answer.hits)) .. ' '
end

local function render_toggles(state)
  if state.mode ~= 'search' then
    vim.bo[state.toggles_buf].modifiable = true
    vim.api.nvim_buf_set_lines(state.toggles_buf, 0, -1, false,
      { state.mode == 'folders' and '<CR> adds the folder as a workspace' or '<CR> opens the document' })
    vim.bo[state.toggles_buf].modifiable = false
    return
  end
  local pieces, spans = {}, {}
  local column = 0
  for _, name in ipairs(stages.names) do
    if state.available[name] ~= false then
      local label = LABELS[name]
      if name == 'rerank' and state.rank_model then
        label = string.format('Rerank (%s)', state.rank_model)
      end
      local text = string.format('[%s] %s', state.stages[name] and 'x' or ' ', label)
      spans[name] = { column, column + #text }
      table.insert(pieces, text)
      column = column + #text + 2
    end
  end
  state.toggle_spans = spans
  vim.bo[state.toggles_buf].modifiable = true
  vim.api.nvim_buf_set_lines(state.toggles_buf, 0, -1, false, { table.concat(pieces, '  ') })
  vim.bo[state.toggles_buf].modifiable = false
end

local function selected(state)
  if not vim.api.nvim_win_is_valid(state.list_win) then
    return nil
  end
  local row = vim.api.nvim_win_get_cursor(state.list_win)[1]
  return state.hits[row], row
end

local function mark_words(buf, words, first, last)
  for line_number = first, last do
    local line = (vim.api.nvim_buf_get_lines(buf, line_number - 1, line_number, false)[1] or ''):lower()
    for _, word in ipairs(words) do
      local start = 1
      while #word > 1 do
        local from, to = line:find(word, start, true)
        if not from then
          break
        end
        vim.api.nvim_buf_set_extmark(buf, ns, line_number - 1, from - 1, { end_col = to, hl_group = 'Search' })
        start = to + 1
      end
    end
  end
end

function M.preview(state)
  local hit = selected(state)
  local buf = state.preview_buf
  vim.api.nvim_buf_clear_namespace(buf, ns, 0, -1)
  if not hit then
    vim.bo[buf].modifiable = true
    vim.api.nvim_buf_set_lines(buf, 0, -1, false, {})
    vim.bo[buf].modifiable = false
    return
  end
  local path = hit.folder and hit.path or state.root .. '/' .. hit.path
  local ok, lines
  if hit.folder then
    ok, lines = true, vim.fn.globpath(path, '**/*.md', false, true)
  else
    ok, lines = pcall(vim.fn.readfile, path)
  end
  vim.bo[buf].modifiable = true
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, ok and lines or { 'cannot read ' .. path })
  vim.bo[buf].modifiable = false
  local last = math.min(hit.line_end, vim.api.nvim_buf_line_count(buf))
  for line = hit.line_start, last do
    vim.api.nvim_buf_set_extmark(buf, ns, line - 1, 0, { line_hl_group = 'Visual' })
  end
  mark_words(buf, state.words or {}, 1, vim.api.nvim_buf_line_count(buf))
  if vim.api.nvim_win_is_valid(state.preview_win) then
    vim.api.nvim_win_set_cursor(state.preview_win, { math.max(1, hit.line_start), 0 })
    vim.api.nvim_win_call(state.preview_win, function()
      vim.cmd('normal! zz')
    end)
  end
end

local function render(state, answer)
  local keep = selected(state)
  state.hits = answer.hits
  state.answer = answer
  state.words = answer.query and answer.query.terms or {}
  local lines = vim.tbl_map(hit_line, answer.hits)
  vim.bo[state.list_buf].modifiable = true
  vim.api.nvim_buf_set_lines(state.list_buf, 0, -1, false, lines)
  vim.bo[state.list_buf].modifiable = false
  for index, hit in ipairs(answer.hits) do
    if hit.superseded then
      vim.api.nvim_buf_set_extmark(state.list_buf, ns, index - 1, 0, { line_hl_group = 'Comment' })
    end
  end
  local row = 1
  if keep then -- keep the selection on the same hit when the list updates in place
    for index, hit in ipairs(answer.hits) do
      if hit.path == keep.path and hit.line_start == keep.line_start then
        row = index
      end
    end
  end
  if #lines > 0 then
    vim.api.nvim_win_set_cursor(state.list_win, { row, 0 })
  end
  vim.api.nvim_win_set_config(state.list_win, { title = list_title(answer), title_pos = 'left' })
  state.available.semantic = answer.semantic ~= 'off'
  state.available.rerank = (answer.rank or {}).state ~= 'off'
  state.rank_model = answer.rank and answer.rank.model ~= vim.NIL and answer.rank.model or nil
  render_toggles(state)
  M.preview(state)
end

-- Searching ----------------------------------------------------------------------------------

local sources = {}

--- :AutodocOpen: documents by title, alias or path.
function sources.documents(state, query, seq)
  rpc.request('doc.list', { state.workspace, query, { limit = autodoc.config.limit } }, function(err, documents)
    if seq ~= state.seq or not vim.api.nvim_win_is_valid(state.list_win) then
      return
    end
    if err then
      vim.notify(rpc.describe(err), vim.log.levels.WARN)
      return
    end
    local hits = {}
    for _, doc in ipairs(documents) do
      local aliases = #doc.aliases > 0 and ' (' .. table.concat(doc.aliases, ', ') .. ')' or ''
      table.insert(hits, { path = doc.path, line_start = 1, line_end = math.max(1, doc.line_count),
        breadcrumb = doc.title .. aliases, relevance = 1, via = { 'title' } })
    end
    render(state, { hits = hits, semantic = 'off', rank = { state = 'off' }, query = { terms = {} } })
  end, 'documents')
end

--- :AutodocWorkspaceAdd: folders, completed as you type; <CR> adds the one under the cursor.
function sources.folders(state, query)
  local hits = {}
  local candidates = vim.fn.getcompletion(query ~= '' and query or './', 'dir')
  if query ~= '' and vim.fn.isdirectory(vim.fn.expand(query)) == 1 then
    table.insert(candidates, 1, query) -- the folder typed so far, before its subfolders
  end
  for _, dir in ipairs(candidates) do
    local path = vim.fn.fnamemodify(vim.fn.expand(dir), ':p'):gsub('/$', '')
    local count = #vim.fn.globpath(path, '**/*.md', false, true)
    table.insert(hits, { path = path, line_start = 1, line_end = 1, breadcrumb = count .. ' Markdown files',
      relevance = 1, via = { 'folder' }, folder = true })
  end
  render(state, { hits = hits, semantic = 'off', rank = { state = 'off' }, query = { terms = {} } })
end

function M.search(state)
  state.seq = state.seq + 1
  local seq = state.seq
  state.typed_at = state.typed_at or {}
  state.typed_at[seq] = state.last_keystroke or vim.uv.hrtime()
  local query = vim.api.nvim_buf_get_lines(state.prompt_buf, 0, 1, false)[1] or ''
  state.query = query
  if state.mode ~= 'search' then
    sources[state.mode](state, query, seq)
    return
  end
  if query:match('^%s*$') then
    render(state, { hits = {}, semantic = state.available.semantic == false and 'off' or 'ready', rank = {} })
    return
  end
  local wanted = stages.requested(state.stages, state.available)
  local level = 0
  local function answer_for(this_level)
    return function(err, result)
      if seq ~= state.seq or this_level < level or not vim.api.nvim_win_is_valid(state.list_win) then
        return -- an older query, or a faster stage arriving after a fuller answer
      end
      if err then
        vim.notify(rpc.describe(err), vim.log.levels.WARN)
        return
      end
      level = this_level
      state.last_stages = result.stages
      render(state, result)
      table.insert(M.latencies, { level = this_level, ms = (vim.uv.hrtime() - state.typed_at[seq]) / 1e6,
        stages = result.stages.performed })
      vim.api.nvim_exec_autocmds('User', { pattern = 'AutodocResults', data = { seq = seq, level = this_level } })
    end
  end
  local params = { limit = autodoc.config.limit }
  if vim.tbl_contains(wanted, 'lexical') and #wanted > 1 then
    rpc.request('search.query', { state.workspace, query, vim.tbl_extend('force', params, { stages = { 'lexical' } }) },
      answer_for(1), 'search-fast')
  end
  rpc.request('search.query', { state.workspace, query, vim.tbl_extend('force', params, { stages = wanted }) },
    answer_for(2), 'search-full')
end

local function schedule_search(state)
  if state.timer then
    state.timer:stop()
  end
  state.timer = vim.defer_fn(function()
    state.timer = nil
    if M.state == state then
      M.search(state)
    end
  end, autodoc.config.debounce_ms)
end

function M.toggle(name)
  local state = M.state
  if not state or state.mode ~= 'search' then
    return
  end
  if state.available[name] == false then
    vim.notify(string.format('autodoc: %s is not available in this workspace (%s)', LABELS[name],
      name == 'rerank' and 'no ranker configured' or 'no embedding model'), vim.log.levels.INFO)
    return
  end
  if not stages.toggle(state.stages, name) then
    vim.notify('autodoc: keep Lexical or Semantic on: one of them must find the hits', vim.log.levels.WARN)
    return
  end
  render_toggles(state)
  M.search(state)
end

-- Actions ------------------------------------------------------------------------------------

function M.close()
  local state = M.state
  if not state then
    return
  end
  M.state = nil
  if state.timer then
    state.timer:stop()
  end
  for _, win in ipairs({ state.prompt_win, state.list_win, state.toggles_win, state.preview_win }) do
    if vim.api.nvim_win_is_valid(win) then
      vim.api.nvim_win_close(win, true)
    end
  end
  vim.cmd('stopinsert')
  if vim.api.nvim_win_is_valid(state.origin_win) then
    vim.api.nvim_set_current_win(state.origin_win)
  end
end

local function flash(buf, first, last)
  local marks = {}
  for line = first, last do
    table.insert(marks, vim.api.nvim_buf_set_extmark(buf, ns, line - 1, 0, { line_hl_group = 'IncSearch' }))
  end
  vim.defer_fn(function()
    if vim.api.nvim_buf_is_valid(buf) then
      vim.api.nvim_buf_clear_namespace(buf, ns, 0, -1)
    end
  end, 600)
end

function M.open_hit(how)
  local state = M.state
  local hit = state and selected(state)
  if not hit then
    return
  end
  if hit.folder then
    M.close()
    local name = vim.fn.fnamemodify(hit.path, ':t'):gsub('[^%w_.-]', '-')
    autodoc.add_workspace(name, hit.path, function(ws, report)
      vim.notify(string.format('autodoc: workspace %s added, %d documents indexed', ws, report.added))
    end)
    return
  end
  local path = state.root .. '/' .. hit.path
  M.close()
  vim.cmd("normal! m'") -- the jumplist remembers where we came from
  local command = ({ vsplit = 'vsplit', split = 'split', tab = 'tabedit' })[how] or 'edit'
  vim.cmd(command .. ' ' .. vim.fn.fnameescape(path))
  local last = math.min(hit.line_end, vim.api.nvim_buf_line_count(0))
  vim.api.nvim_win_set_cursor(0, { last, 0 })
  vim.api.nvim_win_set_cursor(0, { hit.line_start, 0 }) -- the span's end first, so all of it is in view
  vim.cmd('normal! zz')
  flash(vim.api.nvim_get_current_buf(), hit.line_start, last)
end

function M.quickfix()
  local state = M.state
  if not state then
    return
  end
  local items = {}
  for _, hit in ipairs(state.hits) do
    table.insert(items, { filename = state.root .. '/' .. hit.path, lnum = hit.line_start, end_lnum = hit.line_end,
      text = hit.breadcrumb })
  end
  M.close()
  vim.fn.setqflist({}, ' ', { title = 'autodoc: ' .. (state.query or ''), items = items })
  vim.cmd('copen')
end

local function move(delta)
  local state = M.state
  if not state or #state.hits == 0 then
    return
  end
  local row = vim.api.nvim_win_get_cursor(state.list_win)[1]
  row = math.max(1, math.min(#state.hits, row + delta))
  vim.api.nvim_win_set_cursor(state.list_win, { row, 0 })
  M.preview(state)
end

local function map(buf, modes, lhs, rhs)
  for _, key in ipairs(type(lhs) == 'table' and lhs or { lhs }) do
    vim.keymap.set(modes, key, rhs, { buffer = buf, nowait = true, silent = true })
  end
end

local function toggle_at_cursor(state)
  local column = vim.api.nvim_win_get_cursor(state.toggles_win)[2]
  for name, span in pairs(state.toggle_spans or {}) do
    if column >= span[1] and column < span[2] then
      M.toggle(name)
      return
    end
  end
end

local function set_keys(state)
  local keys = autodoc.config.keys
  for _, buf in ipairs({ state.prompt_buf, state.list_buf, state.toggles_buf }) do
    local modes = buf == state.prompt_buf and { 'i', 'n' } or { 'n' }
    map(buf, modes, keys.toggle_lexical, function() M.toggle('lexical') end)
    map(buf, modes, keys.toggle_semantic, function() M.toggle('semantic') end)
    map(buf, modes, keys.toggle_rerank, function() M.toggle('rerank') end)
    map(buf, modes, keys.open, function() M.open_hit('edit') end)
    map(buf, modes, keys.open_vsplit, function() M.open_hit('vsplit') end)
    map(buf, modes, keys.open_split, function() M.open_hit('split') end)
    map(buf, modes, keys.open_tab, function() M.open_hit('tab') end)
    map(buf, modes, keys.quickfix, M.quickfix)
    map(buf, modes, keys.next, function() move(1) end)
    map(buf, modes, keys.prev, function() move(-1) end)
    map(buf, 'n', keys.close, M.close)
  end
  map(state.prompt_buf, 'i', '<Esc>', M.close)
  map(state.toggles_buf, 'n', keys.toggle_under_cursor, function() toggle_at_cursor(state) end)
  map(state.toggles_buf, 'n', '<LeftRelease>', function() toggle_at_cursor(state) end)
end

--- Open the picker. `opts.query` pre-fills the prompt; `opts.workspace` picks the workspace.
function M.open(opts)
  opts = opts or {}
  if M.state then
    M.close()
  end
  local mode = opts.mode or 'search'
  local name = workspace_name(opts)
  if not name and mode ~= 'folders' then
    vim.notify('autodoc: no workspace; add one with require("autodoc").setup({ workspaces = ... })',
      vim.log.levels.WARN)
    return
  end
  local geometry = layout()
  local state = {
    mode = mode,
    workspace = name,
    root = name and autodoc.workspaces[name] or '',
    origin_win = vim.api.nvim_get_current_win(),
    stages = stages.load(),
    available = {},
    hits = {},
    seq = 0,
  }
  state.preview_buf = scratch('markdown')
  state.list_buf = scratch()
  state.toggles_buf = scratch()
  state.prompt_buf = scratch()
  state.preview_win = float(state.preview_buf, vim.tbl_extend('force', geometry.preview,
    { title = ' Preview ', focusable = false }), false)
  state.list_win = float(state.list_buf, vim.tbl_extend('force', geometry.list, { title = ' Hits ' }), false)
  vim.wo[state.list_win].cursorline = true
  vim.wo[state.list_win].wrap = false
  state.toggles_win = float(state.toggles_buf, geometry.toggles, false)
  local titles = { search = ' AutoDoc · %s ', documents = ' AutoDoc open · %s ', folders = ' AutoDoc: add a folder ' }
  state.prompt_win = float(state.prompt_buf, vim.tbl_extend('force', geometry.prompt,
    { title = string.format(titles[mode], name or '') }), true)
  M.state = state
  render_toggles(state)
  set_keys(state)
  vim.api.nvim_create_autocmd({ 'TextChangedI', 'TextChanged' }, {
    buffer = state.prompt_buf,
    callback = function()
      state.last_keystroke = vim.uv.hrtime()
      schedule_search(state)
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
  if opts.query and opts.query ~= '' then
    vim.api.nvim_buf_set_lines(state.prompt_buf, 0, -1, false, { opts.query })
  end
  vim.cmd('startinsert!')
  autodoc.when_ready(function()
    state.root = name and autodoc.workspaces[name] or state.root
    M.search(state)
  end)
  -- When the embedding model finishes filling or the workspace changes, refresh the open query.
  local group = vim.api.nvim_create_augroup('autodoc-picker', { clear = true })
  vim.api.nvim_create_autocmd('User', {
    group = group,
    pattern = { 'AutodocIndexed', 'AutodocSemanticReady' },
    callback = function()
      if M.state == state then
        state.root = autodoc.workspaces[name] or state.root
        M.search(state)
      end
    end,
  })
end

return M
