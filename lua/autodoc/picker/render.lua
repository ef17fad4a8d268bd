--- What the picker shows: hit lines, the list title, the stage checkboxes and the preview.
--- (Over 300 lines: the list and its preview share the selection, the marks' namespace and the drawing helpers.)
local finder = require('autodoc.picker.finder')
local stages = require('autodoc.stages')

local M = {}
M.ns = vim.api.nvim_create_namespace('autodoc')

---@param buf integer
---@param lines string[]
local function set_lines(buf, lines)
  vim.bo[buf].modifiable = true
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
end

--- The display cells of `text` (printable ASCII, most rows, is counted without asking Neovim).
---@param text string
---@return integer
local function cells(text)
  return text:find('[^\32-\126]') and vim.api.nvim_strwidth(text) or #text
end

--- `text` cut to `width` display cells in the middle, keeping more of its end (a breadcrumb's last part
--- names the section itself). Linear in the text: each row of every list is drawn with it.
---@param text string
---@param width integer
---@return string
function M.shorten_middle(text, width)
  if cells(text) <= width then
    return text
  end
  if width <= 1 then
    return width == 1 and '…' or ''
  end
  local head_cells = math.floor((width - 1) * 0.4)
  if not text:find('[^\32-\126]') then
    return text:sub(1, head_cells) .. '…' .. text:sub(#text - (width - 1 - head_cells) + 1)
  end
  local chars = {}
  for char in text:gmatch('[%z\1-\127\194-\244][\128-\191]*') do
    chars[#chars + 1] = char
  end
  local head, used = {}, 0
  for _, char in ipairs(chars) do
    local char_cells = #char == 1 and 1 or vim.api.nvim_strwidth(char)
    if used + char_cells > head_cells then
      break
    end
    used = used + char_cells
    head[#head + 1] = char
  end
  local tail, tail_used = {}, 0
  for index = #chars, 1, -1 do
    local char_cells = #chars[index] == 1 and 1 or vim.api.nvim_strwidth(chars[index])
    if tail_used + char_cells > width - 1 - used then
      break
    end
    tail_used = tail_used + char_cells
    table.insert(tail, 1, chars[index])
  end
  return table.concat(head) .. '…' .. table.concat(tail)
end

--- One hit as a list line: `path:start-end  breadcrumb  relevance  [stages]`. Given a `width`, a line that
--- would be wider loses the middle of its breadcrumb first, then of its path: the span, the relevance and the
--- stages always show (a 90-column list cut them off).
---@param hit autodoc.Hit
---@param width integer|nil the list's width in cells
---@return string
function M.hit_line(hit, width)
  if hit.folder then -- no span, relevance or stage: the folder and its Markdown files
    return string.format('%s  %s', hit.path, hit.breadcrumb)
  end
  local span = string.format(':%d-%d', hit.line_start, hit.line_end)
  local tail = string.format('  %.2f  [%s]%s', hit.relevance or 0, table.concat(hit.via or {}, '+'),
    hit.superseded and '  (superseded)' or '')
  local path, crumb = hit.path, hit.breadcrumb
  if width then
    local room = width - cells(span .. tail) - cells(path) - 2
    if room >= 8 then
      crumb = M.shorten_middle(crumb, room)
    else -- no room for a breadcrumb worth reading: the path gets what is left
      crumb = ''
      path = M.shorten_middle(path, math.max(width - cells(span .. tail), 1))
    end
  end
  return path .. span .. (crumb ~= '' and '  ' .. crumb or '') .. tail
end

--- The list's title: the rerank outcome and the semantic state, or the hit count.
---@param answer autodoc.Answer
---@return string
function M.list_title(answer)
  local parts = {}
  local rank = answer.rank or {}
  if rank.state == 'ranked' then
    table.insert(parts, 're-ranked by ' .. tostring(rank.model))
  elseif rank.state == 'error' then
    table.insert(parts, 'not re-ranked: ' .. tostring(rank.error))
  elseif rank.state ~= 'off' and answer.stages and answer.stages.skipped and answer.stages.skipped.rerank then
    table.insert(parts, 'not re-ranked: ' .. answer.stages.skipped.rerank) -- no ranker at all is no news
  end
  local performed = answer.stages and answer.stages.performed or {}
  local by_meaning = #answer.hits > 0 and vim.tbl_contains(performed, 'lexical')
  for _, hit in ipairs(answer.hits) do
    by_meaning = by_meaning and hit.via and #hit.via == 1 and hit.via[1] == 'semantic'
  end
  if by_meaning then
    table.insert(parts, 'no section has these words: by meaning only')
  end
  local requested = answer.stages and answer.stages.requested
  local semantic_asked = not requested or vim.tbl_contains(requested, 'semantic')
  if semantic_asked and (answer.semantic == 'partial' or answer.semantic == 'switching') then
    table.insert(parts, 'semantic ' .. answer.semantic) -- not news once Semantic is switched off
  end
  local left_out = answer.query and tonumber(answer.query.terms_left_out) or 0
  if left_out > 0 then -- a pasted paragraph: most of it was not searched
    table.insert(parts, string.format('only the first %d of %d terms searched', #answer.query.terms,
      #answer.query.terms + left_out))
  end
  local count = string.format(#answer.hits == 1 and '%d hit' or '%d hits', #answer.hits)
  return ' ' .. (#parts > 0 and table.concat(parts, ' · ') or count) .. ' '
end

---@param state autodoc.PickerState
function M.toggles(state)
  if state.mode ~= 'search' then
    set_lines(state.toggles_buf,
      { state.mode == 'folders' and '<CR> adds the folder as a workspace' or '<CR> opens the document' })
    return
  end
  local pieces, spans = {}, {}
  local column = 0
  for _, name in ipairs(stages.names) do
    if state.available[name] ~= false then
      local label = stages.labels[name]
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
  set_lines(state.toggles_buf, { table.concat(pieces, '  ') })
end

--- The hit under the list's cursor, and its row.
---@param state autodoc.PickerState
---@return autodoc.Hit|nil, integer|nil
function M.selected(state)
  if not vim.api.nvim_win_is_valid(state.list_win) then
    return nil
  end
  local row = vim.api.nvim_win_get_cursor(state.list_win)[1]
  return state.hits[row], row
end

---@param buf integer
---@param words string[]
function M.mark_words(buf, words)
  for line_number = 1, vim.api.nvim_buf_line_count(buf) do
    local line = (vim.api.nvim_buf_get_lines(buf, line_number - 1, line_number, false)[1] or ''):lower()
    for _, word in ipairs(words) do
      local start = 1
      while #word > 1 do
        local from, to = line:find(word, start, true)
        if not from then
          break
        end
        vim.api.nvim_buf_set_extmark(buf, M.ns, line_number - 1, from - 1,
          { end_col = to, hl_group = 'AutodocMatch' })
        start = to + 1
      end
    end
  end
end

--- The lines a hit's preview shows: the file, or a folder's Markdown files.
---@param hit autodoc.Hit
---@param root string
---@return string[]
function M.preview_lines(hit, root)
  local path = hit.folder and hit.path or root .. '/' .. hit.path
  if hit.folder then
    local files, complete = finder.markdown_files(path, finder.PREVIEW_WALK)
    table.sort(files)
    if not complete then
      table.insert(files, 1, string.format('(more: the first %d entries of %s were looked at)',
        finder.PREVIEW_WALK, path))
    end
    return files
  end
  local ok, lines = pcall(vim.fn.readfile, path)
  return ok and lines or { 'cannot read ' .. path }
end

--- Put `win` on `line` of `buf` and centre it, once the window shows `buf`. A picker may put its new
--- preview buffer in the window a tick after the preview is filled (telescope does): the cursor set at
--- once landed in the window's previous, shorter buffer ("Cursor position outside buffer").
---@param win integer
---@param buf integer
---@param line integer
---@param tries integer|nil
local function centre_when_shown(win, buf, line, tries)
  if not vim.api.nvim_win_is_valid(win) or not vim.api.nvim_buf_is_valid(buf) then
    return
  end
  if vim.api.nvim_win_get_buf(win) ~= buf then
    if (tries or 0) < 10 then
      vim.schedule(function() centre_when_shown(win, buf, line, (tries or 0) + 1) end)
    end
    return
  end
  -- The file may have shrunk since it was indexed (or be gone: one "cannot read" line).
  vim.api.nvim_win_set_cursor(win, { math.max(1, math.min(line, vim.api.nvim_buf_line_count(buf))), 0 })
  vim.api.nvim_win_call(win, function() vim.cmd('normal! zz') end)
end

--- Highlight the hit's span and the query's words in `buf` (which holds the hit's file), and put `win`
--- (if given) on the span, lines wrapped between words.
---@param buf integer
---@param win integer|nil
---@param hit autodoc.Hit
---@param words string[]
function M.show_section(buf, win, hit, words)
  vim.api.nvim_buf_clear_namespace(buf, M.ns, 0, -1)
  local line_count = vim.api.nvim_buf_line_count(buf)
  for line = hit.line_start, math.min(hit.line_end, line_count) do
    vim.api.nvim_buf_set_extmark(buf, M.ns, line - 1, 0, { line_hl_group = 'AutodocSection' })
  end
  M.mark_words(buf, words)
  if win and vim.api.nvim_win_is_valid(win) then
    vim.wo[win].linebreak, vim.wo[win].breakindent = true, true -- 'opened throu|gh apsw' no more
    centre_when_shown(win, buf, hit.line_start)
  end
end

--- What the preview shows: the selected hit, for this query.
---@param state autodoc.PickerState
---@param hit autodoc.Hit|nil
---@return string|nil
local function preview_key(state, hit)
  return hit and table.concat({ state.seq or 0, state.root, hit.path, hit.line_start, hit.line_end,
    table.concat(state.words or {}, ' ') }, '\0')
end

--- Show the selected hit's file, scrolled to it, its span highlighted and the query's words marked.
---@param state autodoc.PickerState
function M.preview(state)
  local hit = M.selected(state)
  local buf = state.preview_buf
  state.previewed = preview_key(state, hit)
  vim.api.nvim_buf_clear_namespace(buf, M.ns, 0, -1)
  if not hit then
    set_lines(buf, {})
    return
  end
  set_lines(buf, M.preview_lines(hit, state.root))
  M.show_section(buf, state.preview_win, hit, state.words or {})
end

--- Say `text` in the list's footer (nil: say nothing).
---@param state autodoc.PickerState
---@param text string|nil
function M.notice(state, text)
  if state.notice == text or not vim.api.nvim_win_is_valid(state.list_win) then
    return
  end
  state.notice = text
  vim.api.nvim_win_set_config(state.list_win, { footer = text and { { ' ' .. text .. ' ', 'AutodocNotice' } } or '',
    footer_pos = 'left' })
end

--- Show `text` in place of the hits (an error, or why there is nothing to search).
---@param state autodoc.PickerState
---@param text string
function M.message(state, text)
  if not vim.api.nvim_win_is_valid(state.list_win) then
    return
  end
  state.hits = {}
  state.message = text
  set_lines(state.list_buf, vim.split(text, '\n'))
  vim.api.nvim_buf_set_extmark(state.list_buf, M.ns, 0, 0, { line_hl_group = 'ErrorMsg' })
  vim.api.nvim_win_set_config(state.list_win, { title = ' autodoc ', title_pos = 'left' })
  M.preview(state)
end

--- Replace the list with `answer`. A selection the user moved stays on the same hit when the list updates
--- in place (the full answer after the lexical one, a refresh); otherwise the first hit is selected: kept on
--- the lexical answer's first hit, Enter opened what the full answer ranked second.
---@param state autodoc.PickerState
---@param answer autodoc.Answer
function M.answer(state, answer)
  local keep = state.moved and M.selected(state)
  state.message = nil
  state.hits = answer.hits
  state.answer = answer
  state.words = answer.query and answer.query.terms or {}
  local width = vim.api.nvim_win_get_width(state.list_win)
  local lines = vim.tbl_map(function(hit) return M.hit_line(hit, width) end, answer.hits)
  set_lines(state.list_buf, lines)
  for index, hit in ipairs(answer.hits) do
    if hit.superseded then
      vim.api.nvim_buf_set_extmark(state.list_buf, M.ns, index - 1, 0, { line_hl_group = 'AutodocSuperseded' })
    end
  end
  local row = 1
  if keep then
    for index, hit in ipairs(answer.hits) do
      if hit.path == keep.path and hit.line_start == keep.line_start then
        row = index
      end
    end
  end
  if #lines > 0 then
    vim.api.nvim_win_set_cursor(state.list_win, { row, 0 })
  end
  vim.api.nvim_win_set_config(state.list_win, { title = M.list_title(answer), title_pos = 'left' })
  if not answer.empty_prompt then -- nothing was asked: it says nothing about the stages
    state.available.semantic = answer.semantic ~= 'off'
    state.available.rerank = (answer.rank or {}).state ~= 'off'
    state.rank_model = answer.rank and answer.rank.model ~= vim.NIL and answer.rank.model or nil
  end
  M.toggles(state)
  M.preview_later(state)
end

--- Preview the selected hit once the list is drawn (reading and marking the file never holds up the list); of
--- answers that arrive together only the last is previewed, and the same hit for the same query (the final
--- answer kept the lexical one's first hit) is not read and marked again. `preview_ms` logs each one's cost.
---@param state autodoc.PickerState
function M.preview_later(state)
  state.preview_tick = (state.preview_tick or 0) + 1
  local tick = state.preview_tick
  vim.schedule(function()
    if state.preview_tick == tick and vim.api.nvim_buf_is_valid(state.preview_buf)
        and (state.previewed == nil or preview_key(state, M.selected(state)) ~= state.previewed) then
      local started = vim.uv.hrtime()
      M.preview(state)
      table.insert(M.preview_ms, (vim.uv.hrtime() - started) / 1e6)
      if #M.preview_ms > 1000 then
        table.remove(M.preview_ms, 1)
      end
    end
  end)
end
M.preview_ms = {}

return M
