--- Related sections: what else the knowledge base says about the section under the cursor (search.related).
--- :AutodocRelated opens the picker on them (preview, stage toggles, jump, splits, quickfix); :AutodocPick
--- {source} related (and :Telescope autodoc related) the same in the other pickers; :AutodocRelatedLive keeps
--- a side list that follows the cursor from section to section. The picker and the sources call in here
--- through small hooks (picker.search's 'related' mode, sources.start and sources.query).
local autodoc = require('autodoc')
local rpc = require('autodoc.rpc')
local stages = require('autodoc.stages')

local M = {}

---@class autodoc.RelatedSource
---@field workspace string
---@field root string
---@field path string relative to the root
---@field line integer
---@field answers table<string, autodoc.Answer>|nil the engine's answers, by the stages asked
---@field shown string|nil the stages and prompt of the answer a source shows

--- The workspace holding `buf`'s file (the deepest root, for nested workspaces), and the file's path in it.
---@param buf integer
---@param line integer
---@return autodoc.RelatedSource|nil, string|nil why not
function M.here(buf, line)
  local name = vim.api.nvim_buf_get_name(buf)
  if name == '' then
    return nil, 'autodoc: this buffer has no file; related sections are for a Markdown file of a workspace'
  end
  local file = vim.uv.fs_realpath(name) or vim.fs.normalize(name)
  local best
  for workspace, root in pairs(autodoc.workspaces) do
    if vim.startswith(file, root .. '/') and (not best or #root > #best.root) then
      best = { workspace = workspace, root = root, path = file:sub(#root + 2), line = line, answers = {} }
    end
  end
  if not best then
    return nil, string.format('autodoc: %s is in no workspace (:AutodocWorkspaceAdd adds its folder)',
      vim.fn.fnamemodify(name, ':~:.'))
  end
  return best
end

--- The section under the cursor, or nil after saying why there is none.
---@return autodoc.RelatedSource|nil
local function under_cursor()
  local source, why = M.here(vim.api.nvim_get_current_buf(), vim.api.nvim_win_get_cursor(0)[1])
  if not source then
    vim.notify(why, vim.log.levels.WARN)
  end
  return source
end

--- Ask search.related for `source`.
---@param source autodoc.RelatedSource
---@param wanted string[] the stages
---@param callback fun(err: table|nil, answer: autodoc.Answer|nil)
---@param lane string|nil
function M.request(source, wanted, callback, lane)
  rpc.request('search.related', { source.workspace, source.path,
    { line = source.line, limit = autodoc.config.limit, stages = wanted, snippets = false } }, callback, lane)
end

--- The answer with only the hits whose path or breadcrumb holds every word typed (case-blind): the prompt
--- narrows the related sections, it asks nothing.
---@param answer autodoc.Answer
---@param prompt string|nil
---@return autodoc.Answer
function M.filtered(answer, prompt)
  local words = vim.split(vim.trim(prompt or ''):lower(), '%s+', { trimempty = true })
  if #words == 0 then
    return answer
  end
  local kept = vim.tbl_filter(function(hit)
    local text = (hit.path .. ' ' .. (hit.breadcrumb or '')):lower()
    for _, word in ipairs(words) do
      if not text:find(word, 1, true) then
        return false
      end
    end
    return true
  end, answer.hits)
  return vim.tbl_extend('force', answer, { hits = kept })
end

--- The engine's answer for these stages (asked once per stages), then `done(err, answer)`.
---@param source autodoc.RelatedSource
---@param wanted string[]
---@param lane string
---@param done fun(err: table|nil, answer: autodoc.Answer|nil)
local function answer_for(source, wanted, lane, done)
  local key = table.concat(wanted, ',')
  if source.answers[key] then
    done(nil, source.answers[key])
    return
  end
  M.request(source, wanted, function(err, answer)
    if answer then
      source.answers[key] = answer
    end
    done(err, answer)
  end, lane)
end

-- -- the built-in picker ------------------------------------------------------------------------

--- :AutodocRelated, <Plug>(autodoc-related): the picker on the sections related to the one under the cursor.
function M.open()
  autodoc.when_ready(function()
    local source = under_cursor()
    if source then
      require('autodoc.picker').open({ mode = 'related', workspace = source.workspace, related = source })
    end
  end)
end

--- picker.search for the 'related' mode: list the answer for the checked stages, narrowed by the prompt.
---@param state autodoc.PickerState
---@param is_current fun(): boolean
---@param on_error fun(err: table)
function M.search(state, is_current, on_error)
  local seq = state.seq
  -- Asked each time (a refresh after an index run must not show the answer from before it); the lane drops
  -- an answer a newer request replaced.
  M.request(state.related, stages.requested(state.stages, state.available), function(err, answer)
    if not is_current() then
      return
    end
    if err or not answer then
      on_error(err or {})
      return
    end
    state.last_stages = answer.stages
    require('autodoc.picker.render').answer(state, M.filtered(answer, state.query))
    vim.api.nvim_exec_autocmds('User', { pattern = 'AutodocResults', data = { seq = seq, level = 2 } })
  end, 'related')
end

-- -- the other pickers (telescope, fzf-lua, snacks, mini.pick) ----------------------------------------

local pending ---@type autodoc.RelatedSource|nil the section the next source session relates

--- :AutodocPick {source} related, :Telescope autodoc related: source `module` on the section under the cursor.
---@param module string e.g. 'autodoc.sources.telescope'
---@param opts table|nil the picker's own options
function M.pick(module, opts)
  autodoc.when_ready(function()
    pending = under_cursor()
    if pending then
      require(module).search(opts)
    end
  end)
end

--- The section a source session being started relates (once), for sources.start.
---@return autodoc.RelatedSource|nil
function M.take_pending()
  local source = pending
  pending = nil
  return source
end

--- sources.query for a related session: the answer for the checked stages, narrowed by the prompt; nothing
--- when that is what the source shows already (a source asks again whenever it redraws).
---@param session autodoc.SourceSession
---@param prompt string
function M.query(session, prompt)
  local wanted = stages.requested(session.stages, {})
  local shown = table.concat(wanted, ',') .. '\n' .. prompt
  local source = session.related
  if source.shown == shown then
    return
  end
  source.shown = shown
  session.prompt = prompt
  session.answer = nil
  answer_for(source, wanted, session.lane .. '-related', function(err, answer)
    if source.shown ~= shown then
      return -- the prompt or the stages changed meanwhile
    end
    session.answer = answer and M.filtered(answer, prompt) or { hits = {}, error = rpc.describe(err or {}) }
    session.level = 2
    table.insert(session.shown, { prompt, 2 })
    vim.schedule(function() session.on_update(session) end) -- never inside the source's own finder call
  end)
end

-- -- the live side list -------------------------------------------------------------------------------

M.live = require('autodoc.related_live')

return M
