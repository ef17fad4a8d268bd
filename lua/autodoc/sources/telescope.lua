--- :Telescope autodoc: the hybrid search as a telescope.nvim picker. The engine ranks, so the sorter
--- only highlights; each answer (lexical, then every stage) refreshes the list in place.
local sources = require('autodoc.sources')

local M = {}

---@param session autodoc.SourceSession
---@param opts table telescope picker options
local function open(session, opts)
  local pickers = require('telescope.pickers')
  local sorters = require('telescope.sorters')
  local previewers = require('telescope.previewers')
  local actions = require('telescope.actions')
  local action_state = require('telescope.actions.state')

  local function entry(hit, index)
    return { value = hit, display = sources.display(hit), ordinal = sources.display(hit), index = index,
      filename = sources.file(session, hit), lnum = hit.line_start }
  end
  -- telescope calls the finder with each prompt; answers arrive later and refresh the picker,
  -- which calls the finder again: then the answer for that prompt is there to list.
  local finder = setmetatable({ close = function() end }, {
    __call = function(_, prompt, process_result, process_complete)
      if session.prompt == prompt and session.answer then
        for index, hit in ipairs(session.answer.hits) do
          if process_result(entry(hit, index)) then
            return
          end
        end
      else
        vim.schedule(function() sources.query(session, prompt) end)
      end
      process_complete()
    end,
  })
  local picker = pickers.new(opts, {
    prompt_title = 'AutoDoc · ' .. session.workspace,
    finder = finder,
    sorter = sorters.highlighter_only(opts),
    previewer = previewers.new_buffer_previewer({
      title = 'Section',
      define_preview = function(self, item)
        sources.preview(session, item.value, self.state.bufnr, self.state.winid)
      end,
    }),
    attach_mappings = function(prompt_bufnr, map)
      actions.select_default:replace(function()
        local selected = action_state.get_selected_entry()
        local marked = action_state.get_current_picker(prompt_bufnr):get_multi_selection()
        actions.close(prompt_bufnr)
        if opts.on_choose then -- a caller takes the hits (the /autodoc slash command): the marked ones, else this
          local hits = vim.tbl_map(function(item) return item.value end, #marked > 0 and marked or { selected })
          opts.on_choose(hits, session)
        elseif selected then
          sources.jump(session, selected.value)
        end
      end)
      sources.each_stage_key(session, function(_, key, flip) map({ 'i', 'n' }, key, flip) end)
      return true
    end,
  })
  session.on_update = function()
    if vim.api.nvim_buf_is_valid(picker.prompt_bufnr) then
      picker:refresh(nil, { reset_prompt = false })
    end
  end
  M.session = session
  picker:find()
end

--- Open the picker (telescope must be installed).
---@param opts table|nil telescope picker options; `on_choose(hits, session)` takes the chosen hits instead
---  of opening them
function M.search(opts)
  opts = opts or {}
  sources.start('telescope', function() end, function(session) open(session, opts) end)
end

return M
