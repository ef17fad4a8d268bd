--- Which workspace a search session searches, and what the engine says of it (workspace.status): the stages it
--- can run and whether its folder is there.
local autodoc = require('autodoc')
local rpc = require('autodoc.rpc')

local M = {}

--- Workspace names in order.
---@return string[]
function M.names()
  local names = vim.tbl_keys(autodoc.workspaces)
  table.sort(names)
  return names
end

--- The workspace searched when none is named: the first configured, else the first by name.
---@return string|nil
function M.default()
  local configured = (autodoc.config.workspaces[1] or {}).name
  if configured and autodoc.workspaces[configured] then
    return configured
  end
  return M.names()[1]
end

--- A title's short form of what is wrong with the workspace's folder: "folder gone · 60 documents still
--- searched" (the engine's root_problem is a sentence too long for a title); nil when nothing is.
---@param status table workspace.status's answer
---@return string|nil
function M.folder_problem(status)
  if not rpc.value(status.root_problem) then
    return nil
  end
  return string.format('folder %s · %s still searched', rpc.value(status.folder) or 'unusable',
    require('autodoc.status').count(status.documents, 'document'))
end

--- Ask the engine which stages `workspace` can run and whether its folder is there (`root_problem`).
---@param session autodoc.Session
---@param workspace string
function M.learn(session, workspace)
  session.available, session.rank_model, session.root_problem = {}, nil, nil
  session:request('workspace.status', { workspace }, function(err, status)
    if err or not status or session.searched ~= workspace or session.closed then
      return
    end
    session.available.semantic = status.semantic ~= 'off'
    session.available.rerank = status.ranker ~= nil and status.ranker ~= vim.NIL
    session.rank_model = session.available.rerank and status.ranker.model ~= vim.NIL and status.ranker.model or nil
    session.root_problem = M.folder_problem(status)
    session.on_update(session)
  end)
end

return M
