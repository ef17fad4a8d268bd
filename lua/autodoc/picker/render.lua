--- What the picker shows: hit lines, the list title, the stage checkboxes and the preview.
--- (Over 300 lines: the list and its preview share the selection, the marks' namespace and the drawing helpers.)
local finder = require('autodoc.picker.finder')
local stages = require('autodoc.stages')
local text = require('autodoc.session.text')
local scope = require('autodoc.session.scope')

local M = {}
M.ns = vim.api.nvim_create_namespace('autodoc')

---@param buf integer
---@param lines string[]
local function set_lines(buf, lines)
  vim.bo[buf].modifiable = true
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
end

M.shorten_middle = text.shorten_middle

--- The hits the list shows (those of the session's answer drawn last; none while a message is shown).
---@param state autodoc.PickerState
---@return autodoc.Hit[]
function M.hits(state)
  return state.drawn and state.drawn.hits or {}
end

--- The file a listed hit is (its workspace's root, from the answer shown, joined with its path).
---@param state autodoc.PickerState
---@param hit autodoc.Hit
---@return string
function M.file(state, hit)
  return scope.file(hit, state.drawn, state.session.root)
end

--- The query words the preview marks: the answer shown's.
---@param state autodoc.PickerState
---@return string[]
local function words(state)
  return state.drawn and state.drawn.query and state.drawn.query.terms or {}
end

--- Mark each row's workspace label (the first `cells` of `rows`) in AutodocWorkspace.
---@param buf integer
---@param hits autodoc.Hit[]
---@param cells integer the label's cells (0: no labels)
---@param first integer the buffer line of the first hit's row (0-based)
---@param names string[]|nil the workspaces whose labels differ (scope.labelled)
function M.mark_labels(buf, hits, cells, first, names)
  if cells == 0 then
    return
  end
  for index, hit in ipairs(hits) do
    local label = scope.label(hit, cells, names)
    if label ~= '' then
      vim.api.nvim_buf_set_extmark(buf, M.ns, first + index - 1, 0, { end_col = #label,
        hl_group = 'AutodocWorkspace' })
    end
  end
end

--- The rows of `answer`'s hits fitted to `width`, each with its workspace label when it searched several.
---@param answer autodoc.Answer
---@param width integer
---@return string[] rows, integer label_cells
function M.rows(answer, width)
  local cells = scope.label_cells(answer, width)
  local names = scope.labelled(answer)
  local function label_of(hit) return scope.label(hit, cells, names) end
  local letters = text.letters(answer.hits, width, label_of)
  return vim.tbl_map(function(hit) return (text.row(hit, width, label_of(hit), letters)) end, answer.hits), cells
end

--- The list's title: the answer's summary (autodoc.session.text).
---@param answer autodoc.Answer
---@return string
function M.list_title(answer)
  return ' ' .. text.summary(answer) .. ' '
end

--- The answer's summary for a list `width` cells wide: the title keeps the parts that fit whole (the hit count
--- first) and the footer says the rest, cut in its middle when it is longer still (a field's hint ends it). The
--- footer part is nil when all fits.
---@param summary string
---@param width integer
---@return string title, string|nil rest
function M.title_parts(summary, width)
  local room = width - 4 -- the border's corners and the spaces around the text
  if text.cells(summary) <= room then
    return summary, nil
  end
  local parts = vim.split(summary, ' · ', { plain = true })
  local head, next_part = parts[1], 2
  while next_part <= #parts and text.cells(head .. ' · ' .. parts[next_part]) <= room do
    head, next_part = head .. ' · ' .. parts[next_part], next_part + 1
  end
  if next_part > #parts then
    return head, nil
  end
  return head, text.shorten_middle(table.concat(parts, ' · ', next_part), room)
end

---@param state autodoc.PickerState
function M.toggles(state)
  if state.mode == 'documents' or state.mode == 'folders' then -- lists without stages
    set_lines(state.toggles_buf,
      { state.mode == 'folders' and '<CR> adds the folder as a workspace' or '<CR> opens the document' })
    return
  end
  local session = state.session
  local pieces, spans = {}, {}
  local column = 0
  for _, name in ipairs(stages.names) do
    -- a ranker is configured for few workspaces: its box waits for an answer to say it can run
    local known = name ~= 'rerank' or session.available.rerank ~= nil
    if known and session.available[name] ~= false then
      local label = stages.labels[name]
      if name == 'rerank' and session.rank_model then
        label = string.format('Rerank (%s)', session.rank_model)
      end
      local box = string.format('[%s] %s', session.stages[name] and 'x' or ' ', label)
      spans[name] = { column, column + #box }
      table.insert(pieces, box)
      column = column + #box + 2
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
  return M.hits(state)[row], row
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

--- The lines a hit's preview shows: its file, or a folder's Markdown files.
---@param hit autodoc.Hit
---@param path string the hit's file (autodoc.session.scope.file)
---@return string[]
function M.preview_lines(hit, path)
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
  if ok then
    return lines
  end
  -- gone (its workspace's folder, or the file since the last scan): the index's copy, at the same lines
  local stored = hit.workspace and require('autodoc.host').stored_lines(hit.workspace, hit.path)
  return stored or { 'cannot read ' .. path }
end

--- Put `win` on `line` of `buf` and centre it, once the window shows `buf`. A picker may put its new
--- preview buffer in the window a tick after the preview is filled (telescope does), and a cursor set
--- before that would land in the window's previous, shorter buffer.
---@param win integer
---@param buf integer
---@param line integer
---@param tries integer|nil
local function centre_when_shown(win, buf, line, tries)
  if not vim.api.nvim_win_is_valid(win) or not vim.api.nvim_buf_is_valid(buf) then
    return
  end
  if vim.api.nvim_win_get_buf(win) ~= buf then
    -- A view shows its preview buffer after filling it: telescope a tick later (with no autocommand),
    -- mini.pick at its next redraw, which a loaded machine puts off past any count of ticks (BufWinEnter).
    if not tries then
      vim.api.nvim_create_autocmd('BufWinEnter', { buffer = buf, once = true, callback = function()
        vim.schedule(function() centre_when_shown(win, buf, line, math.huge) end)
      end })
    end
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
    vim.wo[win].linebreak, vim.wo[win].breakindent = true, true -- long lines wrap between words
    centre_when_shown(win, buf, hit.line_start)
  end
end

--- What the preview shows: the selected hit, for this query.
---@param state autodoc.PickerState
---@param hit autodoc.Hit|nil
---@return string|nil
local function preview_key(state, hit)
  return hit and table.concat({ state.session.tick, M.file(state, hit), hit.line_start, hit.line_end,
    table.concat(words(state), ' ') }, '\0')
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
  set_lines(buf, M.preview_lines(hit, M.file(state, hit)))
  M.show_section(buf, state.preview_win, hit, words(state))
end

--- The list's footer: the notice, else what the title had no room for.
---@param state autodoc.PickerState
local function draw_footer(state)
  if not vim.api.nvim_win_is_valid(state.list_win) then
    return
  end
  local said, group = state.footer or state.title_rest, state.footer and 'AutodocNotice' or 'FloatFooter'
  if said then -- a notice longer than the list keeps its end (what to do), as the title's rest does
    said = text.shorten_middle(said, vim.api.nvim_win_get_width(state.list_win) - 4)
  end
  local drawn = said and group .. said
  if state.footer_drawn == drawn then
    return
  end
  state.footer_drawn = drawn
  vim.api.nvim_win_set_config(state.list_win, { footer = said and { { ' ' .. said .. ' ', group } } or '',
    footer_pos = 'left' })
end

--- Title the list with `answer`'s summary: the parts that fit, the rest in the footer (M.title_parts); a
--- folder the prompt's title names already is left out.
---@param state autodoc.PickerState
---@param answer autodoc.Answer
function M.title_list(state, answer)
  local title, rest = M.title_parts(text.summary(answer, state.session.root_problem ~= nil),
    vim.api.nvim_win_get_width(state.list_win))
  vim.api.nvim_win_set_config(state.list_win, { title = ' ' .. title .. ' ', title_pos = 'left' })
  state.title_rest = rest
  draw_footer(state)
end

--- Say `text` in the list's footer (nil: say nothing).
---@param state autodoc.PickerState
---@param text string|nil
function M.notice(state, text)
  state.footer = text
  draw_footer(state)
end

--- Show `text` in place of the hits (an error, or why there is nothing to search).
---@param state autodoc.PickerState
---@param text string
function M.message(state, text)
  if not vim.api.nvim_win_is_valid(state.list_win) then
    return
  end
  state.drawn = nil
  local lines = require('autodoc.wrap').between_words(text, vim.api.nvim_win_get_width(state.list_win))
  set_lines(state.list_buf, lines)
  for row = 0, #lines - 1 do
    vim.api.nvim_buf_set_extmark(state.list_buf, M.ns, row, 0, { line_hl_group = 'ErrorMsg' })
  end
  vim.api.nvim_win_set_config(state.list_win, { title = ' autodoc ', title_pos = 'left' })
  state.title_rest = nil
  draw_footer(state)
  M.preview(state)
end

--- Replace the list with `answer`. A selection the user moved stays on the same hit when the list updates
--- in place (the full answer after the lexical one, a refresh); otherwise the first hit is selected, so Enter
--- opens what the newest answer ranks first.
---@param state autodoc.PickerState
---@param answer autodoc.Answer
function M.answer(state, answer)
  local keep = state.moved and M.selected(state)
  state.drawn = answer
  local lines, label_cells = M.rows(answer, vim.api.nvim_win_get_width(state.list_win))
  set_lines(state.list_buf, lines)
  M.mark_labels(state.list_buf, answer.hits, label_cells, 0, scope.labelled(answer))
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
  M.title_list(state, answer)
  M.toggles(state)
  M.preview_later(state)
end

--- Preview the selected hit once the list is drawn (reading and marking the file never holds up the list); of
--- answers that arrive together only the last is previewed, and the same hit for the same query (the final
--- answer kept the lexical one's first hit) is not read and marked again. User AutodocPreview says its cost.
---@param state autodoc.PickerState
function M.preview_later(state)
  state.preview_tick = (state.preview_tick or 0) + 1
  local tick = state.preview_tick
  vim.schedule(function()
    if state.preview_tick == tick and vim.api.nvim_buf_is_valid(state.preview_buf)
        and (state.previewed == nil or preview_key(state, M.selected(state)) ~= state.previewed) then
      local started = vim.uv.hrtime()
      M.preview(state)
      vim.api.nvim_exec_autocmds('User', { pattern = 'AutodocPreview',
        data = { ms = (vim.uv.hrtime() - started) / 1e6 } })
    end
  end)
end

return M
