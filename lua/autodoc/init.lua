--- AutoDoc for Neovim: setup() and the functions commands and users call. The work is done by modules
--- with one job each: lifecycle (opening the engine), workspaces (the registry), indexing (runs, saves,
--- scans), watch (one progress poller per workspace) and status (:AutodocStatus). `state` is autodoc.state,
--- which those modules share (phase, error, ...); config, workspaces and indexing are its tables.
local config = require('autodoc.config')
local state = require('autodoc.state')
local lifecycle = require('autodoc.lifecycle')
local workspaces = require('autodoc.workspaces')
local indexing = require('autodoc.indexing')
local watch = require('autodoc.watch')
local status = require('autodoc.status')
local progress = require('autodoc.progress')

local M = {}

M.defaults = config.defaults
M.state = state
M.config = state.config
M.workspaces = state.workspaces
M.indexing = state.indexing
M.when_ready = lifecycle.when_ready
M.start = lifecycle.start
M.add_workspace = workspaces.add
M.remove_workspace = workspaces.remove
M.workspaces_of = workspaces.of
M.on_save = workspaces.on_save
M.index = indexing.index
M.changed_files = indexing.changed_files
M.scan = indexing.scan
M.schedule_scans = indexing.schedule_scans
M.embedding = indexing.embedding
M.watch_semantic = watch.semantic
M.show_status = status.show
M.status_text = status.text

--- For statuslines: what runs now, e.g. "kb: 812/2,000 embedded"; '' when idle.
---@return string
function M.status()
  return progress.line()
end

--- Open a search picker in one of the five views (`opts.view`), optionally with `on_choose(hits)` for the chosen
--- hits: `:help autodoc-pick-api`.
---@param opts autodoc.PickOptions|nil
function M.pick(opts)
  require('autodoc.pick').open(opts)
end

--- What the search picker opened last shows (read-only copy, nil before one opens): `:help autodoc-picker-state`.
---@return table|nil
function M.picker_state()
  return require('autodoc.session').state()
end

--- Check `opts` and open the engine with them; the configured workspaces are added and indexed.
--- Works before or after plugin/ is sourced, and again later (new workspaces are added; `db` and
--- `python` take effect only before the engine first opens). A bad or unknown field is said in one
--- message and left out; the rest applies (an error would have stopped the rest of the user's init.lua).
---@param opts autodoc.Config|table|nil
function M.setup(opts)
  local problems
  local before = state.config
  state.config, problems = config.resolve(opts)
  M.config = state.config
  if #problems > 0 then
    state.notify('setup: ' .. table.concat(problems, '; ') .. ' (left out; the other options apply)',
      vim.log.levels.ERROR)
  end
  local open = state.phase == 'ready' or state.phase == 'starting'
  for _, key in ipairs({ 'db', 'python' }) do
    if open and state.config[key] ~= before[key] then -- said, since it is not applied
      state.notify(string.format("setup: '%s' takes effect when Neovim restarts (the engine is open already)", key),
        vim.log.levels.WARN)
    end
  end
  if state.phase == 'ready' then
    workspaces.add_configured(function() end)
    indexing.schedule_scans()
  elseif state.phase ~= 'starting' then
    lifecycle.start()
  end
end

return M
