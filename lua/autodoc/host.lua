--- The autodoc Python host: which interpreter runs it, starting it, and what to say when it cannot.
---
--- The host is a remote-plugin host of its own ("autodoc", registered with remote#host#Register and a
--- factory of ours), so it runs the plugin's environment without touching g:python3_host_prog, which
--- other remote plugins use. The interpreter is the first of, in order: setup({ python = ... }),
--- g:autodoc_python, <plugin root>/.venv/bin/python, g:python3_host_prog, python3 on PATH, that can
--- import autodoc_core and pynvim (checked once per interpreter, asynchronously). The engine's opening
--- requests (autodoc.lifecycle) wait for it to start; when no interpreter works, one message says why and
--- what to run.
local screen = require('autodoc.screen')

local M = {}

M.root = vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h:h:h')
-- Not under rplugin/python3/: :UpdateRemotePlugins has Neovim's python3 host (the `python3` on PATH, or
-- g:python3_host_prog) load every plugin there, and one without pynvim fails with E475 and E5108. No host scans
-- rplugin/autodoc-host/ (the hosts scan rplugin/{their name}/), so only the host below ever loads it.
M.plugin_path = M.root .. '/rplugin/autodoc-host/autodoc'
M.method = M.plugin_path .. ':function:AutodocRequest'
local NAME = 'autodoc'
local CHECK = 'import sys; sys.path = [p for p in sys.path if p != ""]; import autodoc_core, pynvim'
local QUITTING = 'autodoc: Neovim is quitting; the Python host was not started'
local START = 'import sys; sys.path = [p for p in sys.path if p != ""]; import pynvim; pynvim.start_host()'

---@class autodoc.PythonCandidate
---@field prog string
---@field source string why it was tried: 'setup({ python })', 'g:autodoc_python', ...
---@field error string|nil why it was not used (nil: usable, or not checked yet)

---@class autodoc.HostState
---@field phase 'idle'|'checking'|'ready'|'failed'
---@field python autodoc.PythonCandidate|nil the interpreter chosen
---@field tried autodoc.PythonCandidate[] every candidate, in order, with why each was passed over
---@field error string|nil the one message shown when the host cannot start
---@field channel integer|nil

---@type autodoc.HostState
M.state = { phase = 'idle', tried = {} }
local waiting = {} ---@type fun(err: string|nil)[]
local checked = {} ---@type table<string, string|false> prog -> error, or false when it can run the host
local registered = false
local exit_listeners = {} ---@type fun(message: string)[]

--- Call `listener(message)` whenever a running host exits (killed, out of memory, a crash).
---@param listener fun(message: string)
function M.on_exit(listener)
  table.insert(exit_listeners, listener)
end

--- The host on `channel` ended. If it was the one in use, forget it (a fresh host entry, so the next
--- request starts another), say so once, and tell the listeners (pending requests fail, the engine
--- is to be opened again).
---@param channel integer
---@param code integer
---@param stderr string[]
local function exited(channel, code, stderr)
  if M.state.phase ~= 'ready' or M.state.channel ~= channel then
    return -- a host that never started, or Neovim quitting after a restart
  end
  local lines = vim.tbl_filter(function(line) return line ~= '' end, stderr)
  local message = string.format('autodoc: the Python host exited (code %d%s); the next request starts it again',
    code, lines[#lines] and ': ' .. lines[#lines] or '')
  M.state = { phase = 'idle', tried = {} }
  vim.fn['remote#host#Register'](NAME, '*', M.factory) -- remote#host would hand out the dead channel
  screen.say(message, vim.log.levels.ERROR, true)
  for _, listener in ipairs(exit_listeners) do
    listener(message)
  end
end

--- The interpreters to try, in order (setup's `python` comes from the config).
---@return autodoc.PythonCandidate[]
function M.candidates()
  local list = {}
  local function add(prog, source)
    if type(prog) == 'string' and prog ~= '' then
      table.insert(list, { prog = vim.fn.expand(prog), source = source })
    end
  end
  local ok, autodoc = pcall(require, 'autodoc')
  add(ok and autodoc.config.python or nil, 'setup({ python = ... })')
  add(vim.g.autodoc_python, 'g:autodoc_python')
  add(M.root .. '/.venv/bin/python', "the plugin's .venv")
  add(vim.g.python3_host_prog, 'g:python3_host_prog')
  add(vim.fn.exepath('python3'), 'python3 on PATH')
  return list
end

--- The message for a host that cannot start because no interpreter has autodoc installed.
---@return string
function M.missing_message()
  return string.format('autodoc: no Python with autodoc installed; run :AutodocInstall or make install in %s', M.root)
end

--- Register the host and the plugin's function once (safe before or after plugin/ is sourced).
function M.register()
  if registered then
    return
  end
  registered = true
  local ok, err = pcall(function()
    vim.fn['remote#host#Register'](NAME, '*', M.factory)
    vim.fn['remote#host#RegisterPlugin'](NAME, M.plugin_path, {
      { type = 'function', name = 'AutodocRequest', sync = 0, opts = vim.empty_dict() },
    })
  end)
  if not ok and not tostring(err):find('already registered', 1, true) then
    vim.g.autodoc_registration_error = tostring(err)
  end
end

--- remote#host's factory: start the chosen interpreter as an RPC job and wait for its 'poll'.
---@return integer channel, 0 when it did not start
function M.factory()
  local python = M.state.python
  if not python then
    return 0
  end
  local stderr = {}
  local started, channel = pcall(vim.fn.jobstart, { python.prog, '-c', START, M.plugin_path }, {
    rpc = true,
    on_stderr = function(_, data)
      vim.list_extend(stderr, data)
    end,
    on_exit = function(job, code)
      if vim.v.exiting == vim.NIL then
        vim.schedule(function() exited(job, code, stderr) end)
      end
    end,
  })
  if started and channel > 0 then
    local polled, answer = pcall(vim.rpcrequest, channel, 'poll')
    if polled and answer == 'ok' then
      return channel
    end
    pcall(vim.fn.jobstop, channel)
  end
  local lines = vim.tbl_filter(function(line) return line ~= '' end, stderr)
  M.state.start_error = lines[#lines] or tostring(channel)
  return 0
end

---@param err string|nil
local function flush(err)
  local queue = waiting
  waiting = {}
  for _, callback in ipairs(queue) do
    callback(err)
  end
end

---@param message string
local function fail(message)
  M.state.phase = 'failed'
  M.state.error = message
  screen.say(message, vim.log.levels.ERROR, true) -- once: later requests fail quietly
  flush(message)
end

--- Neovim has begun to quit (`:qa`, `+qa`): it has already stopped its children and waits for them to end,
--- running scheduled callbacks meanwhile, so a host started now would never be stopped and Neovim would wait
--- for it forever.
---@return boolean
local function quitting()
  return vim.v.exiting ~= vim.NIL
end

--- When Neovim quits, start nothing: the requests waiting for the host get QUITTING as their error.
---@return boolean quitting
local function stop_if_quitting()
  if not quitting() then
    return false
  end
  M.state.phase = 'idle'
  flush(QUITTING)
  return true
end

local function start_host()
  if stop_if_quitting() then
    return
  end
  M.register()
  local ok, channel = pcall(vim.fn['remote#host#Require'], NAME)
  if not ok or channel == 0 then
    fail(string.format('autodoc: the Python host (%s) did not start: %s; see :checkhealth autodoc',
      M.state.python.prog, M.state.start_error or tostring(channel)))
    return
  end
  M.state.channel = channel
  -- Define AutodocRequest on the channel now (it would otherwise appear on its first call), for
  -- anyone calling it from Vimscript; rpc.lua notifies the channel directly.
  pcall(vim.fn['remote#define#FunctionOnChannel'], channel, M.method, 0, 'AutodocRequest', vim.empty_dict())
  M.state.phase = 'ready'
  flush(nil)
end

--- Check `candidate` (cached per interpreter), then call `done(error_or_nil)` on the main loop.
---@param candidate autodoc.PythonCandidate
---@param done fun(err: string|nil)
local function check(candidate, done)
  if checked[candidate.prog] ~= nil then
    done(checked[candidate.prog] or nil)
    return
  end
  if vim.fn.executable(candidate.prog) ~= 1 then
    checked[candidate.prog] = 'not found or not executable'
    done(checked[candidate.prog])
    return
  end
  vim.system({ candidate.prog, '-c', CHECK }, { text = true }, vim.schedule_wrap(function(result)
    local lines = vim.split(vim.trim(result.stderr or ''), '\n')
    if result.code == 0 then
      checked[candidate.prog] = false
    else
      checked[candidate.prog] = lines[#lines] ~= '' and lines[#lines] or ('exit code ' .. result.code)
    end
    done(checked[candidate.prog] or nil)
  end))
end

--- Try the candidates in order; start the host with the first that can import autodoc_core and pynvim.
local function choose()
  M.state.phase = 'checking'
  local candidates = M.candidates()
  M.state.tried = candidates
  local index = 0
  local function next_candidate()
    if stop_if_quitting() then
      return
    end
    index = index + 1
    local candidate = candidates[index]
    if not candidate then
      fail(M.missing_message())
      return
    end
    check(candidate, function(err)
      candidate.error = err
      if err then
        next_candidate()
      else
        M.state.python = candidate
        start_host()
      end
    end)
  end
  next_candidate()
end

--- The candidates checked now, synchronously (for :checkhealth): each with its error, or none if usable.
---@return autodoc.PythonCandidate[] tried, autodoc.PythonCandidate|nil chosen
function M.survey()
  local tried = M.candidates()
  local chosen
  for _, candidate in ipairs(tried) do
    if vim.fn.executable(candidate.prog) ~= 1 then
      candidate.error = 'not found or not executable'
    else
      local result = vim.system({ candidate.prog, '-c', CHECK }, { text = true }):wait(30000)
      local lines = vim.split(vim.trim(result.stderr or ''), '\n')
      candidate.error = result.code ~= 0 and (lines[#lines] ~= '' and lines[#lines] or 'exit code ' .. result.code)
        or nil
    end
    chosen = chosen or (not candidate.error and candidate or nil)
  end
  return tried, chosen
end

--- Call `callback(nil)` once the host runs, or `callback(message)` if it cannot start.
---@param callback fun(err: string|nil)
function M.ensure(callback)
  local phase = M.state.phase
  if phase == 'ready' then
    callback(nil)
  elseif phase == 'failed' then
    callback(M.state.error)
  elseif phase == 'idle' and quitting() then
    callback(QUITTING)
  else
    table.insert(waiting, callback)
    if phase == 'idle' then
      choose()
    end
  end
end

--- A gone file's lines as the index stores them (a preview of a hit whose folder is gone), asked while Neovim
--- waits (a few milliseconds: only of an engine already open); nil when there are none or no host runs.
---@param workspace string
---@param path string relative to the workspace's root
---@return string[]|nil
function M.stored_lines(workspace, path)
  local channel = M.state.channel
  if not channel or channel <= 0 then
    return nil
  end
  local ok, lines = pcall(vim.rpcrequest, channel, M.plugin_path .. ':function:AutodocStoredLines', { workspace, path })
  return ok and type(lines) == 'table' and lines or nil
end

--- Send a notification to the plugin's AutodocRequest (the host must be ready).
---@param args any[]
function M.notify(args)
  vim.rpcnotify(M.state.channel, M.method, args)
end

--- Forget a failure and every check (after :AutodocInstall), so the next request tries again.
function M.retry()
  if M.state.phase ~= 'failed' then
    return
  end
  checked = {}
  M.state = { phase = 'idle', tried = {} }
  vim.fn['remote#host#Register'](NAME, '*', M.factory) -- a fresh host entry: the failed one is never retried
end

return M
