--- :AutodocStatus: each workspace's documents, chunks and semantic state, and its files with problems in
--- the quickfix list.
local rpc = require('autodoc.rpc')
local progress = require('autodoc.progress')
local state = require('autodoc.state')

local M = {}

--- One line of a workspace's status: "kb: 30 documents, 3,111 chunks, semantic ready, 4 files with problems".
---@param ws string
---@param result table workspace.status's answer
---@return string
function M.text(ws, result)
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

---@param result table workspace.status's answer
---@param into table[] quickfix items
local function add_problems(result, into)
  for _, problem in ipairs(result.problems or {}) do
    table.insert(into, { filename = result.root .. '/' .. problem.path, lnum = 1,
      text = string.format('%s: %s', problem.kind, problem.reason), type = 'W' })
  end
end

--- The answer in one message, kept until the next key: one line per workspace, then where the files with
--- problems are (a message per workspace replaced the one before it).
---@param lines string[]
---@param problems table[] quickfix items
---@param failed boolean a workspace's status could not be read
local function say(lines, problems, failed)
  if #problems > 0 then
    vim.fn.setqflist({}, ' ', { title = 'autodoc: files with problems', items = problems })
    table.insert(lines, string.format('%d files with problems: in the quickfix list (:copen)', #problems))
  end
  state.notify(table.concat(lines, '\n'), failed and vim.log.levels.ERROR or vim.log.levels.INFO, { keep = true })
end

--- Say a workspace's documents, chunks and semantic state (every workspace's when `name` is nil).
---@param name string|nil
function M.show(name)
  local names = name and { name } or vim.tbl_keys(state.workspaces)
  table.sort(names)
  if #names == 0 then
    state.notify('no workspace: add one with :AutodocWorkspaceAdd or setup({ workspaces = ... })',
      vim.log.levels.WARN)
    return
  end
  local lines, problems, failed = {}, {}, false ---@type string[], table[], boolean
  local left = #names
  for i, ws in ipairs(names) do
    rpc.request('workspace.status', { ws }, function(err, result)
      left = left - 1
      if err then
        lines[i], failed = rpc.describe(err):gsub('^autodoc: ', ''), true
      else
        lines[i] = M.text(ws, result)
        add_problems(result, problems)
      end
      if left == 0 then
        say(lines, problems, failed)
      end
    end)
  end
end

return M
