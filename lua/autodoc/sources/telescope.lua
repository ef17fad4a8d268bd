--- :Telescope autodoc: the search session (autodoc.session) as a telescope.nvim picker. The engine ranks, so
--- the sorter only highlights; each answer (lexical, then every stage) refreshes the list in place. The prompt
--- title names the workspace, the results title shows the stages and a refusal.
local sources = require('autodoc.sources')

local M = {}

---@param session autodoc.Session
---@param opts table telescope picker options
local function open(session, opts)
  local pickers = require('telescope.pickers')
  local sorters = require('telescope.sorters')
  local previewers = require('telescope.previewers')
  local actions = require('telescope.actions')
  local action_state = require('telescope.actions.state')
  local picker

  --- The cells a row has: the results window less the selection caret.
  local function width()
    local win = picker and picker.results_win
    if not win or not vim.api.nvim_win_is_valid(win) then
      return nil
    end
    return vim.api.nvim_win_get_width(win) - vim.fn.strdisplaywidth(picker.selection_caret or '> ')
  end
  local function entry(item, index)
    local hit = item.hit
    local function display()
      if not hit then
        return item.text
      end
      local cells = width()
      local label = session:label(hit, cells)
      return session:row(hit, cells), label ~= '' and { { { 0, #label }, 'AutodocWorkspace' } } or nil
    end
    return { value = hit, ordinal = item.text, index = index, filename = hit and sources.file(session, hit),
      lnum = hit and hit.line_start, display = display }
  end
  -- telescope calls the finder with each prompt; answers arrive later and refresh the picker, which calls the
  -- finder again: then the answer for that prompt is there to list.
  local finder = setmetatable({ close = function() end }, {
    __call = function(_, prompt, process_result, process_complete)
      if session.prompt == prompt then
        for index, item in ipairs(sources.items(session)) do
          if process_result(entry(item, index)) then
            return
          end
        end
      else
        vim.schedule(function()
          session:typed()
          session:ask(prompt)
        end)
      end
      process_complete()
    end,
  })
  local title, status = sources.header(session)
  picker = pickers.new(opts, {
    prompt_title = title,
    results_title = status,
    default_text = session.initial_query,
    finder = finder,
    sorter = sorters.highlighter_only(opts),
    previewer = previewers.new_buffer_previewer({
      title = 'Section',
      define_preview = function(self, item)
        if item.value then
          sources.preview(session, item.value, self.state.bufnr, self.state.winid)
        end
      end,
    }),
    attach_mappings = function(prompt_bufnr, map)
      actions.select_default:replace(function()
        local current = action_state.get_current_picker(prompt_bufnr)
        local chosen = vim.tbl_map(function(e) return e.value end, current:get_multi_selection())
        if #chosen == 0 then
          chosen = { (action_state.get_selected_entry() or {}).value }
        end
        actions.close(prompt_bufnr)
        sources.choose(session, vim.tbl_filter(function(hit) return hit ~= nil end, chosen))
      end)
      sources.each_key(session, function(key, fn) map({ 'i', 'n' }, key, fn) end)
      return true
    end,
  })
  -- The prompt buffer's line less the picker's prompt_prefix (both public fields): action_state's
  -- get_current_line() is a global telescope does not reset when a picker opens empty.
  session.prompt_now = function()
    if not vim.api.nvim_buf_is_valid(picker.prompt_bufnr) then
      return nil
    end
    local line = vim.api.nvim_buf_get_lines(picker.prompt_bufnr, 0, 1, false)[1] or ''
    return line:sub(#(picker.prompt_prefix or '') + 1)
  end
  session.on_update = function()
    if not vim.api.nvim_buf_is_valid(picker.prompt_bufnr) then
      return
    end
    local new_title, new_status = sources.header(session)
    for border, text in pairs({ [picker.prompt_border] = new_title, [picker.results_border] = new_status }) do
      if border and border.change_title then
        border:change_title(text)
      end
    end
    picker:refresh(nil, { reset_prompt = false })
  end
  picker:find()
end

--- Open the picker (telescope must be installed).
---@param opts table|nil telescope picker options, and autodoc.SourceOptions (query, workspace, related, on_choose)
function M.search(opts)
  opts = opts or {}
  sources.start('telescope', opts, function(session) open(session, opts) end)
end

return M
