--- The picker's windows: four floats (prompt, hit list, stage toggles, preview) sized from the editor.
local M = {}

---@class autodoc.PickerGeometry
---@field prompt vim.api.keyset.win_config
---@field list vim.api.keyset.win_config
---@field toggles vim.api.keyset.win_config
---@field preview vim.api.keyset.win_config

local TITLES = { search = ' AutoDoc · %s ', documents = ' AutoDoc open · %s ', folders = ' AutoDoc: add a folder ',
  related = ' AutoDoc related · %s ' }

---@param buf integer
---@param config vim.api.keyset.win_config
---@param enter boolean
---@return integer window
local function float(buf, config, enter)
  return vim.api.nvim_open_win(buf, enter, vim.tbl_extend('force', { relative = 'editor', style = 'minimal',
    border = 'rounded' }, config))
end

---@param filetype string|nil
---@return integer buffer
local function scratch(filetype)
  local buf = vim.api.nvim_create_buf(false, true)
  vim.bo[buf].bufhidden = 'wipe'
  if filetype then
    vim.bo[buf].filetype = filetype
  end
  return buf
end

--- Below this many columns the preview goes under the list: side by side, an 80-column terminal would leave
--- the list 36 cells, too few for a hit's path, span, relevance and stages.
M.SIDE_BY_SIDE_COLUMNS = 120

--- A preview this wide reads a Markdown file comfortably; past it, the list takes the room (its rows' breadcrumbs
--- show whole), up to LIST_COLUMNS, which holds a deep path, a long breadcrumb and every badge; past that, halves.
M.PREVIEW_COLUMNS = 80
M.LIST_COLUMNS = 120

--- The list's share of `width` cells side by side (the preview has the rest, less the borders between them).
---@param width integer
---@return integer
local function list_columns(width)
  local half = math.floor(width * 0.5)
  return math.max(half, math.min(width - 2 - M.PREVIEW_COLUMNS, M.LIST_COLUMNS))
end

--- 90% of the editor: prompt, list and toggles on the left, the preview on the right (half each, until the
--- preview has PREVIEW_COLUMNS); in a narrow editor the prompt, list and toggles on top at full width, the
--- preview beneath them.
---@return autodoc.PickerGeometry
function M.geometry()
  local width = math.floor(vim.o.columns * 0.9)
  local height = math.floor(vim.o.lines * 0.8)
  local row = math.floor((vim.o.lines - height) / 2)
  local col = math.floor((vim.o.columns - width) / 2)
  if vim.o.columns < M.SIDE_BY_SIDE_COLUMNS then
    local list_height = math.max(3, math.floor((height - 8) * 0.5))
    return {
      prompt = { row = row, col = col, width = width, height = 1 },
      list = { row = row + 3, col = col, width = width, height = list_height },
      toggles = { row = row + list_height + 5, col = col, width = width, height = 1 },
      preview = { row = row + list_height + 8, col = col, width = width,
        height = math.max(1, height - list_height - 8) },
    }
  end
  local left = list_columns(width)
  return {
    prompt = { row = row, col = col, width = left, height = 1 },
    list = { row = row + 3, col = col, width = left, height = height - 6 },
    toggles = { row = row + height - 1, col = col, width = left, height = 1 },
    preview = { row = row, col = col + left + 2, width = width - left - 2, height = height },
  }
end

---@param mode autodoc.PickerMode
---@param workspace string|nil
---@return string
function M.prompt_title(mode, workspace)
  return string.format(TITLES[mode], workspace or '…')
end

--- Create the buffers and windows on `state`; the prompt window gets the focus.
---@param state autodoc.PickerState
---@param workspace string|nil the prompt title's workspace until the session says
function M.open(state, workspace)
  require('autodoc.highlights').define() -- for a picker opened before plugin/ was sourced
  local geometry = M.geometry()
  state.preview_buf = scratch('markdown')
  state.list_buf = scratch()
  state.toggles_buf = scratch()
  state.prompt_buf = scratch()
  state.preview_win = float(state.preview_buf, vim.tbl_extend('force', geometry.preview,
    { title = ' Preview ', focusable = false }), false)
  state.list_win = float(state.list_buf, vim.tbl_extend('force', geometry.list, { title = ' Hits ' }), false)
  vim.wo[state.list_win].cursorline = true
  vim.wo[state.list_win].winhighlight = 'CursorLine:AutodocSelection' -- visible without 'termguicolors' too
  vim.wo[state.list_win].wrap = false
  state.toggles_win = float(state.toggles_buf, geometry.toggles, false)
  state.prompt_win = float(state.prompt_buf, vim.tbl_extend('force', geometry.prompt,
    { title = M.prompt_title(state.mode, workspace) }), true)
end

--- Fit the open windows to the editor's size again (after VimResized): a terminal narrowed under an open
--- picker otherwise left the preview over the list.
---@param state autodoc.PickerState
function M.resize(state)
  local geometry = M.geometry()
  local windows = { prompt = state.prompt_win, list = state.list_win, toggles = state.toggles_win,
    preview = state.preview_win }
  for part, win in pairs(windows) do
    if vim.api.nvim_win_is_valid(win) then
      vim.api.nvim_win_set_config(win, vim.tbl_extend('force', { relative = 'editor' }, geometry[part]))
    end
  end
end

---@param state autodoc.PickerState
function M.close(state)
  for _, win in ipairs({ state.prompt_win, state.list_win, state.toggles_win, state.preview_win }) do
    if vim.api.nvim_win_is_valid(win) then
      vim.api.nvim_win_close(win, true)
    end
  end
end

return M
