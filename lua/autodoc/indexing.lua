--- Index runs: on request, on save, and the periodic scan for files changed outside Neovim; and the
--- background embedding's pause and resume.
local rpc = require('autodoc.rpc')
local progress = require('autodoc.progress')
local state = require('autodoc.state')
local watch = require('autodoc.watch')

local M = {}

local last_quiet_error = {} ---@type table<string, string|nil> the last quiet run's error, per workspace

--- Whether an index run's report says files were added, changed, renamed or deleted.
---@param report table workspace.index's answer
---@return boolean
function M.changed_files(report)
  return (report.added or 0) + (report.changed or 0) + (report.renamed or 0) + (report.deleted or 0) > 0
end

---@param ws string
---@param err table|nil
---@param quiet boolean|nil
local function say_failure(ws, err, quiet)
  -- A quiet run (a save, a scan) says a lasting fault, such as a root not mounted, once, not every scan_ms.
  local message = err and rpc.describe(err) or nil
  local repeated = quiet and message == last_quiet_error[ws]
  last_quiet_error[ws] = message
  -- A host that exited has said so once (autodoc.host); its unanswered runs need not repeat it.
  if err and not repeated and err.message ~= 'autodoc.host' then
    progress.indexed(ws, nil)
    state.notify(message, vim.log.levels.ERROR)
  end
end

---@param ws string
---@param paths string[]|nil
---@param quiet boolean|nil
---@param callback fun(workspace: string, report: table)|nil
local function run(ws, paths, quiet, callback)
  state.indexing[ws] = (state.indexing[ws] or 0) + 1
  if not quiet then
    progress.indexing(ws)
    watch.indexing(ws)
  end
  rpc.request('workspace.index', { ws, { wait = 'lexical', paths = paths } }, function(err, result)
    state.indexing[ws] = state.indexing[ws] > 1 and state.indexing[ws] - 1 or nil
    say_failure(ws, err, quiet)
    if err then
      return
    end
    if not quiet or M.changed_files(result) then
      progress.indexed(ws, result)
    end
    if callback then
      callback(ws, result)
    end
    vim.api.nvim_exec_autocmds('User', { pattern = 'AutodocIndexed', data = { workspace = ws, report = result } })
    if result.semantic == 'partial' or result.semantic == 'switching' then
      watch.semantic(ws)
    end
  end)
end

--- What a command says of `name` when the engine holds no such workspace (nil when it does): the name and
--- the ones there are, in one row of an 80-column screen where it can, e.g. "autodoc: no workspace 'x' to
--- index; there are kb, rfcs".
---@param name string
---@param doing string what the command would have done, e.g. 'to index'
---@return string|nil
function M.unknown_workspace(name, doing)
  if state.workspaces[name] then
    return nil
  end
  local names = vim.tbl_keys(state.workspaces)
  table.sort(names)
  local there = #names == 0 and 'add one with :AutodocWorkspaceAdd' or 'there are ' .. table.concat(names, ', ')
  return string.format("no workspace '%s' %s; %s", name, doing, there)
end

--- Index one workspace (all when `name` is nil); lexical first, vectors fill in the background.
--- A quiet run (a save, a scan for outside changes) shows progress only when files changed.
---@param name string|nil
---@param callback fun(workspace: string, report: table)|nil
---@param paths string[]|nil only these files, relative to the root
---@param quiet boolean|nil
function M.index(name, callback, paths, quiet)
  if state.phase ~= 'ready' then -- the workspaces are known once the engine is open (setup()'s are added then)
    require('autodoc.lifecycle').when_ready(function() M.index(name, callback, paths, quiet) end, function(message)
      if not quiet then
        state.notify(message, vim.log.levels.ERROR)
      end
    end)
    return
  end
  local unknown = name and M.unknown_workspace(name, 'to index')
  if unknown then
    if not quiet then
      state.notify(unknown, vim.log.levels.ERROR)
    end
    return
  end
  local names = name and { name } or vim.tbl_keys(state.workspaces)
  if #names == 0 and not quiet then
    state.notify('no workspace to index: add one with :AutodocWorkspaceAdd or setup({ workspaces = ... })',
      vim.log.levels.WARN)
  end
  for _, ws in ipairs(names) do
    run(ws, paths, quiet, callback)
  end
end

--- Look for files changed outside Neovim (a git pull, another editor): a quiet index run of each
--- workspace, which only stats files that did not change. Skipped before the engine is open (a scan
--- never starts the Python host) and for a workspace whose index run is under way.
function M.scan()
  if state.phase ~= 'ready' then
    return
  end
  for ws in pairs(state.workspaces) do
    if not state.indexing[ws] then
      M.index(ws, nil, nil, true)
    end
  end
end

local scan_timer ---@type uv.uv_timer_t|nil

--- (Re)start the periodic scan every config.scan_ms (none when 0).
function M.schedule_scans()
  if scan_timer then
    scan_timer:stop()
    scan_timer:close()
    scan_timer = nil
  end
  local every = state.config.scan_ms
  if every > 0 then
    scan_timer = assert(vim.uv.new_timer())
    scan_timer:start(every, every, vim.schedule_wrap(M.scan))
  end
end

--- :AutodocEmbed pause|resume: stop or restart the background embedding (in this editor's host).
---@param action 'pause'|'resume'
function M.embedding(action)
  if action ~= 'pause' and action ~= 'resume' then
    state.notify(':AutodocEmbed takes pause or resume', vim.log.levels.ERROR)
    return
  end
  rpc.request('embedding.' .. action, {}, function(err)
    if err then
      state.notify(rpc.describe(err), vim.log.levels.ERROR)
      return
    end
    state.notify(action == 'pause' and 'background embedding paused' or 'background embedding resumed')
    for ws in pairs(state.workspaces) do
      watch.semantic(ws, true) -- at once, so the progress message says paused or resumed
    end
  end)
end

return M
