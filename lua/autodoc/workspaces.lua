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

--- Read again the workspaces the database holds: another process (`autodoc --call workspace.add`, a second
--- editor) may have added or removed some since this editor opened it; `@name` and the titles count them.
---@param done fun()|nil called once known
function M.refresh(done)
  local asked = vim.deepcopy(state.workspaces) -- one added while the list is made is not in it, and stays
  rpc.request('workspace.list', {}, function(err, list)
    if not err and type(list) == 'table' then
      local held = {}
      for _, ws in ipairs(list) do
        held[ws.name] = ws.root
      end
      for name in pairs(asked) do
        if held[name] == nil then
          state.workspaces[name] = nil
        end
      end
      for name, root in pairs(held) do
        state.workspaces[name] = root
      end
    end
    if done then
      done()
    end
  end)
end

--- Warn about configured names that share one folder: each is indexed and searched on its own, twice the work
--- for the same documents, which is seldom what was meant.
---@param configured { name: string, root: string }[]
local function warn_shared_folders(configured)
  local names_of = {} ---@type table<string, string[]>
  local order = {} ---@type string[]
  for _, ws in ipairs(configured) do
    if not names_of[ws.root] then
      names_of[ws.root] = {}
      table.insert(order, ws.root)
    end
    table.insert(names_of[ws.root], "'" .. ws.name .. "'")
  end
  for _, root in ipairs(order) do
    if #names_of[root] > 1 then
      state.notify(string.format('setup() names the folder %s as the workspaces %s: each is indexed and searched '
        .. 'on its own; keep one of them in setup()', root, table.concat(names_of[root], ' and ')),
        vim.log.levels.WARN)
    end
  end
end

--- Add one configured workspace and index it. setup() is the user's configuration, so it wins over the database:
--- a name the database holds at another folder is moved to the configured one (its documents are read again
--- from there), and the screen says so.
---@param ws { name: string, root: string }
---@param done fun()
local function add_one_configured(ws, done)
  rpc.send('workspace.add', { ws.name, ws.root, { move = true } }, function(err, result)
    if err then
      local stays = state.workspaces[ws.name]
      state.notify(string.format("setup() workspace '%s': %s%s", ws.name, rpc.describe(err):gsub('^autodoc: ', ''),
        stays and string.format('; it stays at %s, which is searched', stays) or ''), vim.log.levels.ERROR)
    else
      state.workspaces[ws.name] = result.root
      local from = rpc.value(result.moved_from)
      if from then
        state.notify(string.format("workspace '%s' moved from %s to %s (as setup() configures it); indexing it "
          .. 'again', ws.name, from, result.root), vim.log.levels.WARN)
      end
      indexing.index(ws.name)
    end
    done()
  end)
end

--- Remove a workspace from the index: its documents, sections and vectors (its folder is not touched). One that
--- setup() configures would be added again when the engine next opens, so it is refused unless `force`.
---@param name string
---@param force boolean|nil
function M.remove(name, force)
  local unknown = indexing.unknown_workspace(name, 'to remove')
  if unknown then
    state.notify(unknown, vim.log.levels.ERROR)
    return
  end
  local configured = vim.tbl_contains(vim.tbl_map(function(ws) return ws.name end, state.config.workspaces), name)
  if configured and not force then
    state.notify(string.format("workspace '%s' is in setup({ workspaces }): Neovim adds it again when it next starts; "
      .. 'drop it there, then :AutodocWorkspaceRemove! %s', name, name), vim.log.levels.WARN)
    return
  end
  rpc.request('workspace.remove', { name }, function(err)
    if err then
      state.notify(rpc.describe(err), vim.log.levels.ERROR)
      return
    end
    state.workspaces[name] = nil
    state.notify(string.format("workspace '%s' removed from the index (its folder is untouched)", name),
      vim.log.levels.INFO, { keep = true })
  end)
end

--- The configured workspaces the engine does not know yet, or knows at another folder: add (or move) and index
--- them, then call `done`. Part of opening the engine (autodoc.lifecycle), so its requests are sent at once
--- rather than queued behind it.
---@param done fun()
function M.add_configured(done)
  local configured = vim.tbl_map(function(ws)
    return { name = ws.name, root = M.absolute(ws.path) }
  end, state.config.workspaces)
  warn_shared_folders(configured)
  local remaining = 1
  local function one_done()
    remaining = remaining - 1
    if remaining == 0 then
      done()
    end
  end
  for _, ws in ipairs(configured) do
    if state.workspaces[ws.name] ~= ws.root then
      remaining = remaining + 1
      add_one_configured(ws, one_done)
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
