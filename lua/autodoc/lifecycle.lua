--- The engine's life in this editor: opening it once (plugin.setup, the workspaces it holds, the configured
--- ones), running what waits for it, and opening it again in a new host after one exited. Whatever waits for
--- the engine (a request, a picker, a command) waits in the one queue here, and runs in the order it came.
local rpc = require('autodoc.rpc')
local host = require('autodoc.host')
local state = require('autodoc.state')
local indexing = require('autodoc.indexing')
local workspaces = require('autodoc.workspaces')

local M = {}

local waiting = {} ---@type { ready: fun(), failed: fun(message: string) }[]

---@param message string|nil nil when ready
local function settle(message)
  state.phase = message and 'failed' or 'ready'
  state.error = message
  local queue = waiting
  waiting = {}
  for _, entry in ipairs(queue) do
    if message then
      entry.failed(message)
    else
      entry.ready()
    end
  end
end

--- plugin.setup's parameters: the configured database and the log file.
---@return table[]
local function setup_params()
  return { { db = state.config.db, log = rpc.log_path() } }
end

--- Open the engine (once): the database, the workspaces it holds, then the configured ones; then a quiet
--- scan of those it held (the ones just added are being indexed).
function M.start()
  state.phase = 'starting'
  rpc.send('plugin.setup', setup_params(), function(err)
    if err then
      if err.message ~= 'autodoc.host' then -- the host already said why, once
        state.notify(rpc.describe(err), vim.log.levels.ERROR)
      end
      settle(rpc.describe(err))
      return
    end
    rpc.send('workspace.list', {}, function(list_err, list)
      for _, ws in ipairs(list_err and {} or list) do
        state.workspaces[ws.name] = ws.root
      end
      workspaces.add_configured(function()
        settle(nil)
        indexing.schedule_scans()
        indexing.scan() -- the workspaces it already held: files may have changed while Neovim was closed
      end)
    end)
  end)
end

--- Run `fn` once the engine is open and the configured workspaces are added, opening it if nobody
--- has (setup() never called: the defaults, and the workspaces already in the database).
--- `on_error(message)` runs instead when it cannot open (default: the message as an error, so a
--- command never fails in silence).
---@param fn fun()
---@param on_error fun(message: string)|nil
function M.when_ready(fn, on_error)
  if state.phase == 'ready' then
    fn()
    return
  end
  table.insert(waiting, { ready = fn, failed = on_error or function(message)
    state.notify(message, vim.log.levels.ERROR)
  end })
  if state.phase ~= 'starting' then
    M.start()
  end
end

-- After the host exits, what was sent to it fails, and the next request opens the engine again (in a new host)
-- the way the first did: plugin.setup first, on the configured database.
host.on_exit(function(message)
  state.phase = 'idle'
  rpc.fail_pending(message)
end)

return M
