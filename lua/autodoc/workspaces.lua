--- The workspace registry: adding workspaces (configured or by command), and which of them hold a file.
local rpc = require('autodoc.rpc')
local state = require('autodoc.state')
local indexing = require('autodoc.indexing')

local M = {}

--- The absolute path with its folders' symlinks resolved, as the engine stores roots (realpath), so a
--- root given through a symlink and the buffers opened through it compare equal. The last component
--- is kept as written when it does not exist yet (or is a file: a linked note keeps its own name).
---@param path string
---@return string
function M.absolute(path)
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
function M.add(name, path, callback)
  rpc.request('workspace.add', { name, M.absolute(path) }, function(err, result)
    if err then
      state.notify(rpc.describe(err), vim.log.levels.ERROR)
      return
    end
    state.workspaces[name] = result.root
    indexing.index(name, callback)
  end)
end

--- The configured workspaces the engine does not know yet: add and index them, then call `done`. Part of
--- opening the engine (autodoc.lifecycle), so its requests are sent at once rather than queued behind it.
---@param done fun()
function M.add_configured(done)
  local remaining = 1
  local function one_done()
    remaining = remaining - 1
    if remaining == 0 then
      done()
    end
  end
  for _, ws in ipairs(state.config.workspaces) do
    local root = M.absolute(ws.path)
    if state.workspaces[ws.name] ~= root then
      remaining = remaining + 1
      rpc.send('workspace.add', { ws.name, root }, function(err, result)
        if err then
          state.notify(rpc.describe(err), vim.log.levels.ERROR)
        else
          state.workspaces[ws.name] = result.root
          indexing.index(ws.name)
        end
        one_done()
      end)
    end
  end
  one_done()
end

--- Every workspace whose root holds `file` (nested roots hold it both), with the path relative to each.
---@param file string
---@return { [1]: string, [2]: string }[] pairs of workspace name and relative path
function M.of(file)
  file = M.absolute(file)
  local found = {}
  for name, root in pairs(state.workspaces) do
    if file:sub(1, #root + 1) == root .. '/' then
      table.insert(found, { name, file:sub(#root + 2) })
    end
  end
  return found
end

--- Re-index a written Markdown file when it lies under a workspace root (only once the engine is open:
--- saving a file never starts the Python host).
---@param file string
function M.on_save(file)
  if state.phase ~= 'ready' or not state.config.index_on_save then
    return
  end
  for _, found in ipairs(M.of(file)) do
    indexing.index(found[1], nil, { found[2] }, true) -- queued in the host behind a run under way, never a search
  end
end

return M
