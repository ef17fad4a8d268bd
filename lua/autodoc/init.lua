--- AutoDoc for Neovim: setup, workspaces and indexing on save.
local rpc = require('autodoc.rpc')
local config = require('autodoc.config')

local M = {}

M.defaults = config.defaults

---@type autodoc.Config
M.config = vim.deepcopy(M.defaults)
M.workspaces = {}
local ready = false
local on_ready = {}

local function notify(message, level)
  vim.notify(message, level or vim.log.levels.INFO, { title = 'autodoc' })
end

--- Run `fn` once the engine is open (setup answered).
---@param fn fun()
function M.when_ready(fn)
  if ready then
    fn()
  else
    table.insert(on_ready, fn)
  end
end

local function absolute(path)
  return vim.fs.normalize(vim.fn.fnamemodify(vim.fn.expand(path), ':p')):gsub('/$', '')
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

local watching = {}

--- Poll a workspace while its vectors fill; fire User AutodocSemanticReady once they are complete,
--- so an open picker refreshes by itself.
---@param ws string
function M.watch_semantic(ws)
  if watching[ws] then
    return
  end
  watching[ws] = true
  local function poll()
    rpc.request('workspace.status', { ws }, function(err, result)
      if err or not result then
        watching[ws] = nil
        return
      end
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

--- Index one workspace (all when `name` is nil); lexical first, vectors fill in the background.
---@param name string|nil
---@param callback fun(workspace: string, report: table)|nil
---@param paths string[]|nil only these files, relative to the root
function M.index(name, callback, paths)
  local names = name and { name } or vim.tbl_keys(M.workspaces)
  for _, ws in ipairs(names) do
    rpc.request('workspace.index', { ws, { wait = 'lexical', paths = paths } }, function(err, result)
      if err then
        notify(rpc.describe(err), vim.log.levels.ERROR)
        return
      end
      if callback then
        callback(ws, result)
      end
      vim.api.nvim_exec_autocmds('User', { pattern = 'AutodocIndexed', data = { workspace = ws } })
      if result.semantic == 'partial' or result.semantic == 'switching' then
        M.watch_semantic(ws)
      end
    end)
  end
end

--- Notify a workspace's documents, chunks and semantic state.
---@param name string|nil default: the first workspace
function M.status(name)
  local ws = name or next(M.workspaces)
  if not ws then
    notify('no workspace: add one in setup({ workspaces = ... })', vim.log.levels.WARN)
    return
  end
  rpc.request('workspace.status', { ws }, function(err, result)
    if err then
      notify(rpc.describe(err), vim.log.levels.ERROR)
      return
    end
    notify(string.format('%s: %d documents, %d chunks, semantic %s', ws, result.documents, result.chunks,
      result.semantic))
  end)
end

--- The workspace whose root holds `file`, and the file's path relative to it.
---@param file string
---@return string|nil workspace, string|nil relative_path
function M.workspace_of(file)
  file = absolute(file)
  for name, root in pairs(M.workspaces) do
    if file:sub(1, #root + 1) == root .. '/' then
      return name, file:sub(#root + 2)
    end
  end
end

--- Check `opts`, open the engine and add the configured workspaces.
---@param opts autodoc.Config|table|nil
function M.setup(opts)
  M.config = config.resolve(opts)
  local log = vim.fn.stdpath('log') .. '/autodoc.log'
  rpc.request('plugin.setup', { { db = M.config.db, log = log } }, function(err)
    if err then
      notify(rpc.describe(err), vim.log.levels.ERROR)
      return
    end
    ready = true
    for _, ws in ipairs(M.config.workspaces) do
      M.add_workspace(ws.name, ws.path)
    end
    for _, fn in ipairs(on_ready) do
      fn()
    end
    on_ready = {}
  end)
  if M.config.index_on_save then
    local group = vim.api.nvim_create_augroup('autodoc', { clear = true })
    vim.api.nvim_create_autocmd('BufWritePost', {
      group = group,
      pattern = { '*.md', '*.markdown' },
      callback = function(event)
        local ws, relpath = M.workspace_of(event.match)
        if ws then
          M.index(ws, nil, { relpath })
        end
      end,
    })
  end
end

return M
