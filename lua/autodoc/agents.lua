--- AutoDoc for the coding agents that live in Neovim (CodeCompanion, avante.nvim): the knowledge base's
--- search and related sections as tools, answered by the editor's own engine (the host and index the picker
--- uses; no second process, no second model). The hits' texts, their token budget and the plain-text answer
--- are the MCP tools' own (the engine's `agent.tool` method runs them), so the three routes say the same.
---
--- Every failure is an answer the model reads (`is_error` and a text saying what to do), never a Lua error.
local autodoc = require('autodoc')
local rpc = require('autodoc.rpc')
local schemas = require('autodoc.agent_tools') -- generated from the MCP tools' definitions
local state = require('autodoc.state')

local M = {}

--- The tools an agent gets unless told otherwise (`tools = { ... }` in the extension's options): every one.
M.TOOLS = vim.tbl_map(function(spec) return spec.tool end, schemas)

---@class autodoc.AgentAnswer
---@field is_error boolean
---@field text string what the model reads
---@field result table|nil the structured answer (hits with text, stages, notes)

---@param text string
---@return autodoc.AgentAnswer
local function failed(text)
  return { is_error = true, text = text }
end

--- The workspace a call is about when the model names none: the one holding the last edited file, else the
--- first configured, else the engine's only one (the engine says which there are when it cannot tell).
---@return string|nil
function M.default_workspace()
  local alt = vim.fn.bufnr('#')
  for _, buf in ipairs({ vim.api.nvim_get_current_buf(), alt }) do
    local name = buf > 0 and vim.api.nvim_buf_is_valid(buf) and vim.api.nvim_buf_get_name(buf) or ''
    local found = name ~= '' and autodoc.workspaces_of(name)[1]
    if found then
      return found[1]
    end
  end
  local configured = (autodoc.config.workspaces[1] or {}).name
  if configured and autodoc.workspaces[configured] then
    return configured
  end
end

--- The workspace names an agent may give, as the engine knows them (else as configured), sorted.
---@return string[]
function M.workspace_names()
  local names = vim.tbl_keys(autodoc.workspaces)
  if #names == 0 then
    names = vim.tbl_map(function(ws) return ws.name end, autodoc.config.workspaces or {})
  end
  table.sort(names)
  return names
end

--- Give every string a `workspace` argument may be (a name, or each name of a list) the `names` as its enum.
---@param schema table
---@param names string[]
local function name_workspaces(schema, names)
  if schema.type == 'string' then
    schema.enum = names
  elseif schema.type == 'array' and schema.items then
    name_workspaces(schema.items, names)
  end
  for _, alternative in ipairs(schema.anyOf or schema.oneOf or {}) do
    name_workspaces(alternative, names)
  end
end

--- The agent tools named in `wanted` (default M.TOOLS) as the MCP tools define them, each with the workspace
--- names of this moment as the `workspace` argument's enum: { name, tool, title, description, parameters }.
---@param wanted string[]|nil engine tool names
---@return table[]
function M.tools(wanted)
  wanted = wanted or M.TOOLS
  local names = M.workspace_names()
  local specs = {}
  for _, spec in ipairs(schemas) do
    if vim.tbl_contains(wanted, spec.tool) then
      spec = vim.deepcopy(spec)
      local workspace = spec.parameters.properties.workspace
      if workspace and #names > 0 then
        name_workspaces(workspace, names)
      end
      table.insert(specs, spec)
    end
  end
  return specs
end

--- { engine tool name = the agent's name for it } for the tools in `wanted`: what a tool error may point to.
---@param wanted string[]|nil
---@return table<string, string>
function M.offered(wanted)
  local offered = {}
  for _, spec in ipairs(schemas) do
    if vim.tbl_contains(wanted or M.TOOLS, spec.tool) then
      offered[spec.tool] = spec.name
    end
  end
  return offered
end

--- A tool about one workspace (read, documents), not a scope that is every workspace when left out.
---@param tool string
---@return boolean
local function takes_one_workspace(tool)
  local spec = vim.iter(schemas):find(function(one) return one.tool == tool end)
  local workspace = spec and spec.parameters.properties.workspace
  return workspace ~= nil and workspace.type == 'string'
end

--- A model's arguments as the engine takes them: JSON nulls (its "not given") left out; for hosts whose
--- parameters are strings (avante), an array given as "a, b" split (a name or a list: split when it holds a
--- comma) and an object given as JSON decoded.
---@param spec table one of M.tools()
---@param args table|nil
---@param max_tokens integer|nil the text budget for hits when the model gives none
---@return table
function M.arguments(spec, args, max_tokens)
  local properties = spec.parameters.properties
  local out = {}
  for key, value in pairs(args or {}) do
    local kind = properties[key] and (properties[key].type or properties[key].anyOf and 'one or several')
    value = rpc.value(value) -- a JSON null: left out
    if kind == 'one or several' and type(value) == 'string' and value:find(',') then
      value = vim.split(value, '[,%s]+', { trimempty = true })
    elseif kind == 'array' and type(value) == 'string' then
      value = vim.split(value, '[,%s]+', { trimempty = true })
    elseif kind == 'object' and type(value) == 'string' then
      local ok, decoded = pcall(vim.json.decode, value)
      value = ok and decoded or value -- not JSON: the engine says what it wants
    end
    out[key] = value
  end
  if (spec.tool == 'search' or spec.tool == 'related') and out.max_tokens == nil then
    out.max_tokens = max_tokens
  end
  return out
end

--- Run the MCP tool `tool` ('search', 'related', 'read', ...) with `args` on the editor's engine. `offered`
--- (M.offered) words a failure's fix for the tools the agent has.
---@param tool string
---@param args table
---@param callback fun(answer: autodoc.AgentAnswer)
---@param offered table<string, string>|nil
function M.call(tool, args, callback, offered)
  if state.phase ~= 'ready' then
    local why = state.phase == 'failed' and state.error
      or "AutoDoc's engine is still starting (opening its index); call again in a few seconds"
    if state.phase ~= 'starting' and state.phase ~= 'failed' then
      autodoc.when_ready(function() end, function() end)
    end
    callback(failed(string.format('%s failed: %s', tool, why)))
    return
  end
  args = vim.deepcopy(args or {})
  if takes_one_workspace(tool) and (rpc.value(args.workspace) == nil or args.workspace == '') then
    args.workspace = M.default_workspace()
  end
  args = next(args) and args or vim.empty_dict() -- no arguments is an object, not a list
  rpc.request('agent.tool', { tool, args, { tools = offered or M.offered() } }, function(err, answer)
    if err then
      callback(failed(string.format('%s failed: %s', tool, rpc.describe(err))))
    else
      callback({ is_error = answer.is_error, text = answer.text, result = rpc.value(answer.result) })
    end
  end)
end

--- `call`, waiting for its answer (at most `timeout_ms`, default 15 s): for hosts whose callbacks must
--- return the text (an editor context is read as the message is sent).
---@param tool string
---@param args table
---@param timeout_ms integer|nil
---@param offered table<string, string>|nil
---@return autodoc.AgentAnswer
function M.call_sync(tool, args, timeout_ms, offered)
  local answer
  M.call(tool, args, function(a) answer = a end, offered)
  vim.wait(timeout_ms or 15000, function() return answer ~= nil end, 10)
  return answer or failed(string.format('%s failed: no answer from the engine within %d ms', tool, timeout_ms or 15000))
end

--- A chosen hit as chat context: its path and line span, breadcrumb, and the section's lines as on disk.
---@param root string the workspace root
---@param hit table a hit of the picker (path, line_start, line_end, breadcrumb)
---@return string text, string id
function M.section_context(root, hit)
  local span = string.format('%s:%d-%d', hit.path, hit.line_start, hit.line_end)
  local ok, lines = pcall(vim.fn.readfile, root .. '/' .. hit.path)
  local body = ok and table.concat(vim.list_slice(lines, hit.line_start, hit.line_end), '\n')
    or '(the file could not be read: it was moved or deleted since it was indexed)'
  local text = string.format('<autodoc_section path="%s" lines="%d-%d">\n%s\n\n```markdown\n%s\n```\n</autodoc_section>',
    hit.path, hit.line_start, hit.line_end, hit.breadcrumb or hit.title or '', body)
  return text, '<autodoc>' .. span .. '</autodoc>'
end

--- The section under the cursor of `buf` (the last buffer before the chat), with what else the knowledge base
--- says about it, as text for the model.
---@param buf integer|nil
---@return string
function M.cursor_context(buf)
  buf = buf and vim.api.nvim_buf_is_valid(buf) and buf or vim.api.nvim_get_current_buf()
  local file = vim.api.nvim_buf_get_name(buf)
  local found = file ~= '' and autodoc.workspaces_of(file)[1]
  if not found then
    return string.format('(AutoDoc: %s is not in a knowledge base workspace, so it has no section to share)',
      file ~= '' and vim.fn.fnamemodify(file, ':~:.') or 'the buffer')
  end
  local line = 1
  for _, win in ipairs(vim.fn.win_findbuf(buf)) do
    line = vim.api.nvim_win_get_cursor(win)[1]
    break
  end
  local answer = M.call_sync('related', { workspace = found[1], path = found[2], line = line })
  if answer.is_error then
    return answer.text
  end
  local section = answer.result and rpc.value(answer.result.section)
  local about = string.format('The user is at %s line %d', found[2], line)
  if section then
    local lines = vim.api.nvim_buf_get_lines(buf, section.line_start - 1, section.line_end, false)
    about = string.format('%s, in the section %s (%s:%d-%d):\n\n```markdown\n%s\n```',
      about, section.breadcrumb, found[2], section.line_start, section.line_end, table.concat(lines, '\n'))
  end
  return about .. '\n\nWhat else the knowledge base says about it:\n' .. answer.text
end

--- Let the user choose hits in a picker; `on_choose(hits, root)` gets them (several when several were marked).
--- The one place that knows how a picker hands its chosen hits back.
---@param on_choose fun(hits: table[], root: string)
---@param opts { provider: string|nil, query: string|nil, workspace: string|nil }|nil
function M.choose_hits(on_choose, opts)
  opts = opts or {}
  local workspace = opts.workspace or M.default_workspace()
  local function chosen(hits, session)
    local name = session and session:single_workspace() or workspace
    on_choose(hits, session and session.root or autodoc.workspaces[name] or '')
  end
  -- the pickers' one entry point: every view, each with multi-select
  autodoc.pick({ view = opts.provider or 'builtin',
    query = opts.query, workspace = workspace, on_choose = chosen })
end

--- The agent tools as avante.nvim `custom_tools` entries (autodoc.avante).
---@param opts { max_tokens: integer|nil, tools: string[]|nil }|nil
---@return table[]
function M.avante_tools(opts)
  return require('autodoc.avante').tools(opts)
end

return M
