--- What the engine says of the workspaces a search session searches (workspace.status): the stages they can run
--- and whether their folders are there; and the workspace searched first when setup() names none.
local autodoc = require('autodoc')
local rpc = require('autodoc.rpc')

local M = {}

--- The workspace searched when none is named: the first configured, else the first by name.
---@return string|nil
function M.default()
  local configured = (autodoc.config.workspaces[1] or {}).name
  if configured and autodoc.workspaces[configured] then
    return configured
  end
  return require('autodoc.session.scope').names()[1]
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

--- Ask the engine which stages the workspaces `names` can run (a stage shows when one of them can) and whether
--- their folders are there (`root_problem`, each named when there are several).
---@param session autodoc.Session
---@param names string[]
function M.learn(session, names)
  session.available, session.rank_model, session.root_problem = {}, nil, nil
  local asked, problems = session.searched, {}
  for _, workspace in ipairs(names) do
    session:request('workspace.status', { workspace }, function(err, status)
      if err or not status or session.searched ~= asked or session.closed then
        return
      end
      local available = session.available
      available.semantic = available.semantic == true or status.semantic ~= 'off'
      local ranker = rpc.value(status.ranker) ~= nil
      available.rerank = available.rerank == true or ranker
      if ranker and rpc.value(status.ranker.model) then
        session.rank_model = session.rank_model or status.ranker.model
      end
      local problem = M.folder_problem(status)
      if problem then
        table.insert(problems, #names > 1 and workspace .. ': ' .. problem or problem)
        session.root_problem = table.concat(problems, ' · ')
      end
      session.on_update(session)
    end)
  end
end

return M
