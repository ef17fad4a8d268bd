--- How far a workspace's vectors have filled, for the search views: `semantic 54%` in the list's title while
--- they fill (the progress message is hidden under `-- INSERT --` in a picker). The share comes from the
--- fill's progress updates (User AutodocProgress, autodoc.progress); the open view's title follows them.
local M = {}

local percents = {} ---@type table<string, integer> workspace -> share embedded, while its vectors fill
local listening = false

--- The workspaces the open search shows (a title drawn from an answer alone does not name them).
---@return string[]
local function shown_workspaces()
  local session = require('autodoc.session').current
  if not session or session.closed then
    return {}
  end
  return require('autodoc.session.scope').searched(session.searched or session.scope)
end

--- Draw the open search's title again: the built-in picker's list title, or the source's header.
local function redraw_title()
  local session = require('autodoc.session').current
  if not session or session.closed or not session.answer then
    return
  end
  local picker = require('autodoc.picker').state
  if picker and picker.session == session then
    if vim.api.nvim_win_is_valid(picker.list_win) and not session.message then
      require('autodoc.picker.render').title_list(picker, session.answer)
    end
  else
    session.on_update(session)
  end
end

---@param event table User AutodocProgress
local function on_progress(event)
  local data = event.data or {}
  if data.work ~= 'embedding' or not data.workspace then
    return
  end
  local percent = data.status == 'running' and tonumber(data.percent) or nil
  if percents[data.workspace] ~= percent then
    percents[data.workspace] = percent
    if vim.tbl_contains(shown_workspaces(), data.workspace) then
      redraw_title()
    end
  end
end

local function listen()
  if listening then
    return
  end
  listening = true
  vim.api.nvim_create_autocmd('User', {
    group = vim.api.nvim_create_augroup('autodoc-coverage', { clear = true }),
    pattern = 'AutodocProgress',
    callback = on_progress,
  })
end

--- The workspaces whose vectors `answer` says are filling: of a search of several, those its `workspaces`
--- name as partial or switching (a ready one is never followed: its watch would say at once that it is
--- complete, and the open list would search again); of one, the one the open search shows.
---@param answer table
---@return string[]
local function filling(answer)
  local parts = answer.workspaces
  if type(parts) ~= 'table' or vim.tbl_isempty(parts) then
    local shown = shown_workspaces()
    return #shown == 1 and shown or {} -- of several, an answer that does not say which fills follows none
  end
  local names = {}
  for name, part in pairs(parts) do
    if part.semantic == 'partial' or part.semantic == 'switching' then
      table.insert(names, name)
    end
  end
  table.sort(names)
  return names
end

--- Whether some workspace of `answer` fills its vectors: its own state says so, or (of a search of several, whose
--- state is the least ready: 'off' beside a workspace with no model) one of its `workspaces`.
---@param answer table
---@return boolean
function M.filling_any(answer)
  return answer.semantic == 'partial' or answer.semantic == 'switching'
    or type(answer.workspaces) == 'table' and not vim.tbl_isempty(answer.workspaces) and #filling(answer) > 0
end

--- The answer's semantic state for a title: `semantic 54%` while the vectors fill and their share is known (of a
--- search of several workspaces, each filling one by name: `semantic rfcs 54%`), else `semantic partial` (or
--- `switching`), and each filling workspace is followed from now on so that the share comes.
---@param answer table a search answer whose `semantic` is 'partial' or 'switching'
---@return string
function M.text(answer)
  listen()
  local names = filling(answer)
  -- of several workspaces, the one filling is named even alone: `semantic 0%` read as the whole search's share
  local several = type(answer.workspaces) == 'table' and vim.tbl_count(answer.workspaces) > 1
  local shares = {}
  for _, name in ipairs(names) do
    if percents[name] then
      table.insert(shares, (#names == 1 and not several) and string.format('%d%%', percents[name])
        or string.format('%s %d%%', name, percents[name]))
    else
      vim.schedule(function() require('autodoc.watch').semantic(name) end) -- already followed: nothing new
    end
  end
  local state = answer.semantic -- of several, 'off' beside a workspace with no model: the filling one's then
  if state ~= 'partial' and state ~= 'switching' then
    local parts = type(answer.workspaces) == 'table' and answer.workspaces or {}
    state = #names > 0 and type(parts[names[1]]) == 'table' and parts[names[1]].semantic or state
  end
  return 'semantic ' .. (#shares > 0 and table.concat(shares, ', ') or state)
end

--- The share embedded of `workspace` while its vectors fill (nil when not filling or not known yet).
---@param workspace string
---@return integer|nil
function M.percent(workspace)
  return percents[workspace]
end

return M
