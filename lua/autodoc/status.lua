--- :AutodocStatus: each workspace's documents, sections and semantic state, and its files with problems in
--- the quickfix list.
local rpc = require('autodoc.rpc')
local progress = require('autodoc.progress')
local screen = require('autodoc.screen')
local state = require('autodoc.state')

local M = {}

--- "1 document", "3,111 sections": the count with the thousands separator, the noun in the singular for one.
---@param number integer
---@param noun string
---@return string
function M.count(number, noun)
  return string.format('%s %s%s', progress.thousands(number), noun, number == 1 and '' or 's')
end

--- What is wrong with the workspace's folder, by the engine's `folder` state (its `root_problem` otherwise).
local folder_faults = {
  gone = 'folder %s is gone',
  ['not a folder'] = '%s is not a folder',
  unreadable = 'folder %s cannot be read',
  empty = 'folder %s is empty (a drive not mounted?)',
}

--- The files among `problems` (a file with two problems is one): what an index run's report counts too.
---@param problems table[]|nil workspace.status's `problems`
---@return integer
function M.files_of(problems)
  local paths = {}
  for _, problem in ipairs(problems or {}) do
    paths[problem.path] = true
  end
  return vim.tbl_count(paths)
end

---@param result table workspace.status's answer
---@return string|nil "4 files with problems", nil for none
local function file_problems(result)
  local files = M.files_of(result.problems)
  return files > 0 and M.count(files, 'file') .. ' with problems' or nil
end

--- What is wrong with a workspace's folder, short: "folder /x is gone"; nil when nothing is.
---@param result table workspace.status's answer
---@return string|nil
function M.folder_fault(result)
  if not rpc.value(result.root_problem) then
    return nil
  end
  local fault = folder_faults[result.folder]
  return fault and string.format(fault, result.root) or result.root_problem
end

--- What the index keeps of a workspace whose folder cannot be read: "8 documents, 26 sections kept in the index
--- and still searched".
---@param result table workspace.status's answer
---@return string
function M.kept_text(result)
  return result.documents > 0
    and string.format('%s, %s kept in the index and still searched', M.count(result.documents, 'document'),
      M.count(result.chunks, 'section'))
    or 'nothing indexed from it'
end

--- The line of a workspace whose folder cannot be read: the fault first, then what the index keeps of it.
---@param ws string
---@param result table workspace.status's answer
---@return string
local function folder_problem_text(ws, result)
  local problems = file_problems(result)
  return string.format('%s: %s (%s%s); restore it, or name its new folder in setup() (the workspace moves there)',
    ws, M.folder_fault(result), M.kept_text(result), problems and ', ' .. problems or '')
end

--- One line of a workspace's status: "kb: 30 documents, 3,111 sections, semantic ready, 4 files with problems";
--- when its folder cannot be read, that first: "kb: folder /x is gone (8 documents, 26 sections kept ...)".
---@param ws string
---@param result table workspace.status's answer
---@return string
function M.text(ws, result)
  if rpc.value(result.root_problem) then
    return folder_problem_text(ws, result)
  end
  local text = string.format('%s: %s, %s, semantic %s', ws, M.count(result.documents, 'document'),
    M.count(result.chunks, 'section'), result.semantic)
  if rpc.value(result.embedder) and result.semantic ~= 'ready' then
    text = text .. ' · ' .. progress.embedding_text(ws, result.embedder, result.embedding_paused):gsub('^[^:]*: ', '')
    local repeated = rpc.value(result.embedder.repeated_chunks) or 0
    if repeated > 0 then -- why the sections outnumber the texts to embed
      text = text .. string.format(' (%s repeating another section, sharing its vector)', M.count(repeated, 'section'))
    end
  end
  local problems = file_problems(result)
  return problems and text .. ', ' .. problems or text
end

---@param result table workspace.status's answer
---@param into table[] quickfix items
local function add_problems(result, into)
  for _, problem in ipairs(result.problems or {}) do
    local line = tonumber(tostring(problem.reason):match('line (%d+)')) -- 'malformed YAML ... at line 4: ...'
    table.insert(into, { filename = result.root .. '/' .. problem.path, lnum = line or 1,
      text = problem.kind == 'warning' and problem.reason or string.format('%s: %s', problem.kind, problem.reason),
      type = 'W' }) -- the W says warning
  end
end

--- The answer, kept until the next key: one line per workspace, then where the files with problems are (a
--- message per workspace replaced the one before it); in a float when the message area is too small for it.
---@param lines string[]
---@param problems table[] quickfix items
---@param level integer ERROR when a workspace's status could not be read, WARN when a folder cannot be read
local function say(lines, problems, level)
  if #problems > 0 then
    vim.fn.setqflist({}, ' ', { title = 'autodoc: files with problems', items = problems })
    local files = M.files_of(vim.tbl_map(function(item) return { path = item.filename } end, problems))
    table.insert(lines, string.format('%s with problems: in the quickfix list (:copen)', M.count(files, 'file')))
  end
  lines[1] = 'autodoc: ' .. lines[1]
  screen.say_lines(lines, level) -- in a float when it needs more rows than 'cmdheight': no hit-enter prompt
end

--- Say a workspace's documents, sections and semantic state (every workspace's when `name` is nil).
---@param name string|nil
function M.show(name)
  local names = name and { name } or vim.tbl_keys(state.workspaces)
  table.sort(names)
  if #names == 0 then
    state.notify('no workspace: add one with :AutodocWorkspaceAdd or setup({ workspaces = ... })',
      vim.log.levels.WARN)
    return
  end
  local lines, problems, level = {}, {}, vim.log.levels.INFO ---@type string[], table[], integer
  local left = #names
  for i, ws in ipairs(names) do
    rpc.request('workspace.status', { ws }, function(err, result)
      left = left - 1
      if err then
        lines[i], level = rpc.describe(err):gsub('^autodoc: ', ''), vim.log.levels.ERROR
      else
        lines[i] = M.text(ws, result)
        if M.folder_fault(result) then
          level = math.max(level, vim.log.levels.WARN)
        end
        add_problems(result, problems)
      end
      if left == 0 then
        say(lines, problems, level)
      end
    end)
  end
end

return M
