--- AutoDoc for Neovim: setup, workspaces and indexing on save.
local rpc = require('autodoc.rpc')
local config = require('autodoc.config')
local progress = require('autodoc.progress')

local M = {}

M.defaults = config.defaults

---@type autodoc.Config
M.config = vim.deepcopy(M.defaults)
M.workspaces = {} ---@type table<string, string> name -> root, as the engine knows them
---@type 'idle'|'starting'|'ready'|'failed'
M.phase = 'idle'
M.error = nil ---@type string|nil why the engine could not open
local waiting = {} ---@type { ready: fun(), failed: fun(message: string)|nil }[]

local function notify(message, level)
  if not message:find('^autodoc') then -- most come prefixed from rpc.describe; every one says whose it is
    message = 'autodoc: ' .. message
  end
  vim.notify(message, level or vim.log.levels.INFO, { title = 'autodoc' })
end

--- Run `fn` once the engine is open and the configured workspaces are added, opening it if nobody
--- has (setup() never called: the defaults, and the workspaces already in the database).
--- `on_error(message)` runs instead when it cannot open (default: the message as an error, so a
--- command never fails in silence).
---@param fn fun()
---@param on_error fun(message: string)|nil
function M.when_ready(fn, on_error)
  if M.phase == 'ready' then
    fn()
    return
  end
  table.insert(waiting, { ready = fn, failed = on_error or function(message)
    notify(message, vim.log.levels.ERROR)
  end })
  if M.phase ~= 'starting' then
    M.start()
  end
end

---@param message string|nil nil when ready
local function settle(message)
  M.phase = message and 'failed' or 'ready'
  M.error = message
  local queue = waiting
  waiting = {}
  for _, entry in ipairs(queue) do
    if not message then
      entry.ready()
    elseif entry.failed then
      entry.failed(message)
    end
  end
end

--- The absolute path with its folders' symlinks resolved, as the engine stores roots (realpath), so a
--- root given through a symlink and the buffers opened through it compare equal. The last component
--- is kept as written when it does not exist yet (or is a file: a linked note keeps its own name).
local function absolute(path)
  local full = vim.fs.normalize(vim.fn.fnamemodify(vim.fn.expand(path), ':p')):gsub('/$', '')
  if vim.fn.isdirectory(full) == 1 then
    return vim.uv.fs_realpath(full) or full
  end
  local parent = vim.uv.fs_realpath(vim.fs.dirname(full))
  return parent and (parent:gsub('/$', '') .. '/' .. vim.fs.basename(full)) or full
end

--- Add a workspace (name -> folder) and index it.
---@param name string
---@param path string
---@param callback fun(workspace: string, report: table)|nil called once indexed
function M.add_workspace(name, path, callback)
  local root = absolute(path)
  rpc.request('workspace.add', { name, root }, function(err, result)
    if err then
      notify(rpc.describe(err), vim.log.levels.ERROR)
      return
    end
    M.workspaces[name] = result.root
    M.index(name, callback)
  end)
end

local watching = {} ---@type table<string, table> ws -> the token of its one poll chain

--- Poll a workspace while its vectors fill (updating the progress message); fire User
--- AutodocSemanticReady once they are complete, so an open picker refreshes by itself.
---@param ws string
---@param restart boolean|nil poll at once, replacing the poll chain under way
function M.watch_semantic(ws, restart)
  if watching[ws] and not restart then
    return
  end
  local token = {}
  watching[ws] = token
  local function poll()
    if watching[ws] ~= token then
      return -- replaced by a newer chain
    end
    rpc.request('workspace.status', { ws }, function(err, result)
      if watching[ws] ~= token then
        return
      end
      if err or not result then
        watching[ws] = nil
        return
      end
      progress.embedding(ws, result)
      if result.semantic == 'partial' or result.semantic == 'switching' then
        vim.defer_fn(poll, M.config.poll_ms)
      else
        watching[ws] = nil
        vim.api.nvim_exec_autocmds('User', { pattern = 'AutodocSemanticReady', data = { workspace = ws } })
      end
    end)
  end
  poll()
end

M.indexing = {} ---@type table<string, integer> index runs asked for and not answered yet, per workspace
local last_quiet_error = {} ---@type table<string, string|nil> the last quiet run's error, per workspace

--- Whether an index run's report says files were added, changed, renamed or deleted.
---@param report table workspace.index's answer
---@return boolean
function M.changed_files(report)
  return (report.added or 0) + (report.changed or 0) + (report.renamed or 0) + (report.deleted or 0) > 0
end
local changed_files = M.changed_files

--- Index one workspace (all when `name` is nil); lexical first, vectors fill in the background.
--- A quiet run (a save, a scan for outside changes) shows progress only when files changed.
---@param name string|nil
---@param callback fun(workspace: string, report: table)|nil
---@param paths string[]|nil only these files, relative to the root
---@param quiet boolean|nil
function M.index(name, callback, paths, quiet)
  local names = name and { name } or vim.tbl_keys(M.workspaces)
  if #names == 0 and not quiet then
    notify('no workspace to index: add one with :AutodocWorkspaceAdd or setup({ workspaces = ... })',
      vim.log.levels.WARN)
  end
  for _, ws in ipairs(names) do
    M.indexing[ws] = (M.indexing[ws] or 0) + 1
    if not quiet then
      progress.indexing(ws)
      M.watch_indexing(ws)
    end
    rpc.request('workspace.index', { ws, { wait = 'lexical', paths = paths } }, function(err, result)
      M.indexing[ws] = M.indexing[ws] > 1 and M.indexing[ws] - 1 or nil
      -- A quiet run (a save, a scan) says a lasting fault, such as a root not mounted, once, not every scan_ms.
      local message = err and rpc.describe(err) or nil
      local repeated = quiet and message == last_quiet_error[ws]
      last_quiet_error[ws] = message
      if err then
        -- A host that exited has said so once (autodoc.host); its unanswered runs need not repeat it.
        if not repeated and err.message ~= 'autodoc.host' then
          progress.indexed(ws, nil)
          notify(message, vim.log.levels.ERROR)
        end
        return
      end
      if not quiet or changed_files(result) then
        progress.indexed(ws, result)
      end
      if callback then
        callback(ws, result)
      end
      vim.api.nvim_exec_autocmds('User', { pattern = 'AutodocIndexed', data = { workspace = ws, report = result } })
      if result.semantic == 'partial' or result.semantic == 'switching' then
        M.watch_semantic(ws)
      end
    end)
  end
end

--- While `ws` indexes, ask for its progress every `poll_ms` and update the message (count, rate,
--- time left). The host answers from its request workers while its index thread runs.
---@param ws string
function M.watch_indexing(ws)
  local function poll()
    if not M.indexing[ws] then
      return
    end
    rpc.request('workspace.status', { ws }, function(err, status)
      if not err and status and status.indexing and M.indexing[ws] then
        progress.indexing_update(ws, status.indexing)
      end
      if M.indexing[ws] then
        vim.defer_fn(poll, M.config.poll_ms)
      end
    end)
  end
  vim.defer_fn(poll, M.config.poll_ms)
end

--- Look for files changed outside Neovim (a git pull, another editor): a quiet index run of each
--- workspace, which only stats files that did not change. Skipped before the engine is open (a scan
--- never starts the Python host) and for a workspace whose index run is under way.
function M.scan()
  if M.phase ~= 'ready' then
    return
  end
  for ws in pairs(M.workspaces) do
    if not M.indexing[ws] then
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
  local every = M.config.scan_ms
  if every > 0 then
    scan_timer = assert(vim.uv.new_timer())
    scan_timer:start(every, every, vim.schedule_wrap(M.scan))
  end
end

--- For statuslines: what runs now, e.g. "kb: 812/2,000 embedded"; '' when idle.
---@return string
function M.status()
  return progress.line()
end

--- :AutodocEmbed pause|resume: stop or restart the background embedding (in this editor's host).
---@param action 'pause'|'resume'
function M.embedding(action)
  if action ~= 'pause' and action ~= 'resume' then
    notify(':AutodocEmbed takes pause or resume', vim.log.levels.ERROR)
    return
  end
  rpc.request('embedding.' .. action, {}, function(err)
    if err then
      notify(rpc.describe(err), vim.log.levels.ERROR)
      return
    end
    notify(action == 'pause' and 'background embedding paused' or 'background embedding resumed')
    for ws in pairs(M.workspaces) do
      M.watch_semantic(ws, true) -- at once, so the progress message says paused or resumed
    end
  end)
end

--- Notify a workspace's documents, chunks and semantic state.
---@param name string|nil default: the first workspace
function M.show_status(name)
  local names = name and { name } or vim.tbl_keys(M.workspaces)
  table.sort(names)
  if #names == 0 then
    notify('no workspace: add one with :AutodocWorkspaceAdd or setup({ workspaces = ... })', vim.log.levels.WARN)
    return
  end
  local problems = {} ---@type table[] quickfix items of every workspace's file problems
  local left = #names
  for _, ws in ipairs(names) do
    rpc.request('workspace.status', { ws }, function(err, result)
      left = left - 1
      if err then
        notify(rpc.describe(err), vim.log.levels.ERROR)
      else
        notify(M.status_text(ws, result))
        for _, problem in ipairs(result.problems or {}) do
          table.insert(problems, { filename = result.root .. '/' .. problem.path, lnum = 1,
            text = string.format('%s: %s', problem.kind, problem.reason), type = 'W' })
        end
      end
      if left == 0 and #problems > 0 then
        vim.fn.setqflist({}, ' ', { title = 'autodoc: files with problems', items = problems })
        notify(string.format('%d files with problems: in the quickfix list (:copen)', #problems), vim.log.levels.WARN)
      end
    end)
  end
end

--- One line of a workspace's status: "kb: 30 documents, 3,111 chunks, semantic ready, 4 files with problems".
---@param ws string
---@param result table workspace.status's answer
---@return string
function M.status_text(ws, result)
  local text = string.format('%s: %s documents, %s chunks, semantic %s', ws, progress.thousands(result.documents),
    progress.thousands(result.chunks), result.semantic)
  if result.embedder ~= vim.NIL and result.embedder and result.semantic ~= 'ready' then
    text = text .. ' · ' .. progress.embedding_text(ws, result.embedder, result.embedding_paused):gsub('^[^:]*: ', '')
  end
  if result.problems and #result.problems > 0 then
    text = text .. string.format(', %d files with problems', #result.problems)
  end
  return text
end

--- Every workspace whose root holds `file` (nested roots hold it both), with the path relative to each.
---@param file string
---@return { [1]: string, [2]: string }[] pairs of workspace name and relative path
function M.workspaces_of(file)
  file = absolute(file)
  local found = {}
  for name, root in pairs(M.workspaces) do
    if file:sub(1, #root + 1) == root .. '/' then
      table.insert(found, { name, file:sub(#root + 2) })
    end
  end
  return found
end

--- The configured workspaces the engine does not know yet: add them, then call `done`.
---@param done fun()
local function add_configured(done)
  local remaining = 1
  local function one_done()
    remaining = remaining - 1
    if remaining == 0 then
      done()
    end
  end
  for _, ws in ipairs(M.config.workspaces) do
    local root = absolute(ws.path)
    if M.workspaces[ws.name] ~= root then
      remaining = remaining + 1
      rpc.request('workspace.add', { ws.name, root }, function(err, result)
        if err then
          notify(rpc.describe(err), vim.log.levels.ERROR)
        else
          M.workspaces[ws.name] = result.root
          M.index(ws.name)
        end
        one_done()
      end)
    end
  end
  one_done()
end

-- After the host exits, the next request opens the engine again (in a new host) the way the first did.
require('autodoc.host').on_exit(function()
  M.phase = 'idle'
end)

--- plugin.setup's parameters: the configured database and the log file.
---@return table[]
local function setup_params()
  return { { db = M.config.db, log = vim.fn.stdpath('log') .. '/autodoc.log' } }
end

-- Whatever request starts a new host after one exited (a status poll, a picker source, a save), its first
-- message opens the engine on the configured database; otherwise that request would open the default one.
require('autodoc.host').on_start(function()
  if M.phase ~= 'starting' then -- the first start sends plugin.setup itself
    rpc.request('plugin.setup', setup_params(), function() end)
  end
end)

--- Open the engine (once): the database, the workspaces it holds, then the configured ones; then a quiet
--- scan of those it held (the ones just added are being indexed).
function M.start()
  M.phase = 'starting'
  rpc.request('plugin.setup', setup_params(), function(err)
    if err then
      if err.message ~= 'autodoc.host' then -- the host already said why, once
        notify(rpc.describe(err), vim.log.levels.ERROR)
      end
      settle(rpc.describe(err))
      return
    end
    rpc.request('workspace.list', {}, function(list_err, list)
      for _, ws in ipairs(list_err and {} or list) do
        M.workspaces[ws.name] = ws.root
      end
      add_configured(function()
        settle(nil)
        M.schedule_scans()
        M.scan() -- the workspaces it already held: files may have changed while Neovim was closed
      end)
    end)
  end)
end

--- Re-index a written Markdown file when it lies under a workspace root (only once the engine is open:
--- saving a file never starts the Python host).
---@param file string
function M.on_save(file)
  if M.phase ~= 'ready' or not M.config.index_on_save then
    return
  end
  for _, found in ipairs(M.workspaces_of(file)) do
    M.index(found[1], nil, { found[2] }, true) -- queued in the host behind a run under way, never a search
  end
end

--- Check `opts` and open the engine with them; the configured workspaces are added and indexed.
--- Works before or after plugin/ is sourced, and again later (new workspaces are added; `db` and
--- `python` take effect only before the engine first opens). A bad or unknown field is said in one
--- message and left out; the rest applies (an error would have stopped the rest of the user's init.lua).
---@param opts autodoc.Config|table|nil
function M.setup(opts)
  local problems
  local before = M.config
  M.config, problems = config.resolve(opts)
  if #problems > 0 then
    notify('setup: ' .. table.concat(problems, '; ') .. ' (left out; the other options apply)', vim.log.levels.ERROR)
  end
  local open = M.phase == 'ready' or M.phase == 'starting'
  for _, key in ipairs({ 'db', 'python' }) do
    if open and M.config[key] ~= before[key] then -- it was ignored without a word
      notify(string.format("setup: '%s' takes effect when Neovim restarts (the engine is open already)", key),
        vim.log.levels.WARN)
    end
  end
  if M.phase == 'ready' then
    add_configured(function() end)
    M.schedule_scans()
  elseif M.phase ~= 'starting' then
    M.start()
  end
end

return M
