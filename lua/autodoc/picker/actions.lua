--- What the picker's keys do: open a hit, send hits to quickfix, move, flip a stage.
local autodoc = require('autodoc')
local config = require('autodoc.config')
local render = require('autodoc.picker.render')

local M = {}

---@param buf integer
---@param first integer
---@param last integer
local function flash(buf, first, last)
  for line = first, last do
    vim.api.nvim_buf_set_extmark(buf, render.ns, line - 1, 0, { line_hl_group = 'IncSearch' })
  end
  vim.defer_fn(function()
    if vim.api.nvim_buf_is_valid(buf) then
      vim.api.nvim_buf_clear_namespace(buf, render.ns, 0, -1)
    end
  end, 600)
end

--- Open `file` and put the cursor on `first`, the whole span in view and briefly highlighted.
---@param file string
---@param first integer
---@param last integer
---@param how 'edit'|'vsplit'|'split'|'tab'|nil
function M.jump(file, first, last, how)
  vim.cmd("normal! m'") -- the jumplist remembers where we came from
  local command = ({ vsplit = 'vsplit', split = 'split', tab = 'tabedit' })[how] or 'edit'
  vim.cmd(command .. ' ' .. vim.fn.fnameescape(file))
  last = math.min(last, vim.api.nvim_buf_line_count(0))
  first = math.min(first, last)
  vim.api.nvim_win_set_cursor(0, { last, 0 })
  vim.api.nvim_win_set_cursor(0, { first, 0 }) -- the span's end first, so all of it is in view
  vim.cmd('normal! zz')
  flash(vim.api.nvim_get_current_buf(), first, last)
end

--- Add the selected folder as a workspace named after it.
---@param hit autodoc.Hit
function M.add_folder(hit)
  local name = vim.fn.fnamemodify(hit.path, ':t'):gsub('[^%w_.-]', '-')
  autodoc.add_workspace(name, hit.path, function(ws, report)
    autodoc.state.notify(string.format('workspace %s added, %d documents indexed', ws, report.added), nil, { keep = true })
  end)
end

---@param state autodoc.PickerState
---@return vim.quickfix.entry[]
function M.quickfix_items(state)
  local items = {}
  for _, hit in ipairs(render.hits(state)) do
    table.insert(items, { filename = render.file(state, hit), lnum = hit.line_start, end_lnum = hit.line_end,
      text = hit.breadcrumb })
  end
  return items
end

---@param state autodoc.PickerState
---@param delta integer
function M.move(state, delta)
  local count = #render.hits(state)
  if count == 0 then
    return
  end
  local row = vim.api.nvim_win_get_cursor(state.list_win)[1]
  row = math.max(1, math.min(count, row + delta))
  vim.api.nvim_win_set_cursor(state.list_win, { row, 0 })
  state.moved = true -- a later answer to the same query keeps this hit selected
  render.preview(state)
end

--- The stage whose checkbox is under the cursor in the toggles row.
---@param state autodoc.PickerState
---@return string|nil
function M.toggle_at_cursor(state)
  local column = vim.api.nvim_win_get_cursor(state.toggles_win)[2]
  for name, span in pairs(state.toggle_spans or {}) do
    if column >= span[1] and column < span[2] then
      return name
    end
  end
end

---@param buf integer
---@param modes string|string[]
---@param lhs string|string[]
---@param rhs function
local function map(buf, modes, lhs, rhs)
  for _, key in ipairs(config.key_list(lhs)) do
    vim.keymap.set(modes, key, rhs, { buffer = buf, nowait = true, silent = true })
  end
end

--- Map config.keys in the picker's buffers to `picker`'s functions.
---@param picker table the autodoc.picker module
---@param state autodoc.PickerState
function M.set_keys(picker, state)
  local keys = autodoc.config.keys
  for _, buf in ipairs({ state.prompt_buf, state.list_buf, state.toggles_buf }) do
    local modes = buf == state.prompt_buf and { 'i', 'n' } or { 'n' }
    map(buf, modes, keys.toggle_lexical, function() picker.toggle('lexical') end)
    map(buf, modes, keys.toggle_semantic, function() picker.toggle('semantic') end)
    map(buf, modes, keys.toggle_rerank, function() picker.toggle('rerank') end)
    map(buf, modes, keys.open, function() picker.open_hit('edit') end)
    map(buf, modes, keys.open_vsplit, function() picker.open_hit('vsplit') end)
    map(buf, modes, keys.open_split, function() picker.open_hit('split') end)
    map(buf, modes, keys.open_tab, function() picker.open_hit('tab') end)
    map(buf, modes, keys.quickfix, picker.quickfix)
    map(buf, modes, keys.next_workspace, picker.next_workspace)
    map(buf, modes, keys.next, function() M.move(state, 1) end)
    map(buf, modes, keys.prev, function() M.move(state, -1) end)
    map(buf, 'n', keys.close, picker.close)
  end
  map(state.prompt_buf, 'i', '<Esc>', picker.close)
  local function toggle_here()
    local name = M.toggle_at_cursor(state)
    if name then
      picker.toggle(name)
    end
  end
  map(state.toggles_buf, 'n', keys.toggle_under_cursor, toggle_here)
  map(state.toggles_buf, 'n', '<LeftRelease>', toggle_here)
end

return M
