--- The agent tools as avante.nvim `custom_tools` entries (func(params, on_log, on_complete)), made from the MCP
--- tools' definitions (autodoc.agent_tools, generated) as CodeCompanion's are. avante's parameters are flat and
--- typed string, integer or boolean: an array is asked for as "a, b" and an object as JSON, and the workspace
--- names are listed in the argument's description.
local agents = require('autodoc.agents')

local M = {}

local AVANTE_TYPES = { string = 'string', integer = 'integer', number = 'number', boolean = 'boolean' }

---@param spec table one of agents.tools()
---@return table[] avante's `param.fields`
local function fields(spec)
  local required = spec.parameters.required or {}
  local list = {}
  for key, prop in pairs(spec.parameters.properties) do
    local description = prop.description or key
    if prop.type == 'array' then
      description = description .. ' (comma-separated)'
    elseif prop.type == 'object' then
      description = description .. ' (as JSON)'
    elseif prop.anyOf then
      description = description .. ' (several comma-separated)'
    end
    local names = prop.enum or (prop.anyOf and prop.anyOf[1].enum)
    if key == 'workspace' and names then
      description = description .. '; one of ' .. table.concat(names, ', ')
    end
    table.insert(list, { name = key, description = description, type = AVANTE_TYPES[prop.type] or 'string',
      optional = not vim.tbl_contains(required, key) })
  end
  table.sort(list, function(a, b) return a.name < b.name end)
  return list
end

---@param spec table
---@param offered table<string, string>
---@param opts table
local function entry(spec, offered, opts)
  return {
    name = spec.name,
    description = spec.description,
    param = { type = 'table', fields = fields(spec) },
    returns = { { name = 'result', description = 'the answer as text', type = 'string' },
      { name = 'error', description = 'what went wrong and what to do', type = 'string', optional = true } },
    -- avante documents func(params, on_log, on_complete); later versions pass func(params, opts) with
    -- opts.on_complete. Without either, the answer is returned (waited for).
    func = function(params_in, second, third)
      local on_complete = type(second) == 'table' and second.on_complete or third
      local args = agents.arguments(spec, params_in, opts.max_tokens)
      if type(on_complete) ~= 'function' then
        local answer = agents.call_sync(spec.tool, args, nil, offered)
        return not answer.is_error and answer.text or nil, answer.is_error and answer.text or nil
      end
      agents.call(spec.tool, args, function(answer)
        on_complete(not answer.is_error and answer.text or nil, answer.is_error and answer.text or nil)
      end, offered)
    end,
  }
end

--- The tools (`opts.tools`: the engine tools to offer, default every one), with the workspaces of this moment.
---@param opts { max_tokens: integer|nil, tools: string[]|nil }|nil
---@return table[]
function M.tools(opts)
  opts = opts or {}
  local offered = agents.offered(opts.tools)
  return vim.tbl_map(function(spec) return entry(spec, offered, opts) end, agents.tools(opts.tools))
end

return M
