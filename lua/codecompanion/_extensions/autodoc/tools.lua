--- The CodeCompanion tools autodoc_search, autodoc_related, autodoc_read, autodoc_documents and
--- autodoc_workspaces: function tools made from the MCP tools' definitions (autodoc.agent_tools, generated), with
--- the workspace names as the `workspace` argument's enum; one command asks the editor's engine
--- (autodoc.agents) and hands its text to the model; a failure is a tool error it reads.
local agents = require('autodoc.agents')

local M = {}

---@param spec table one of agents.tools()
---@param offered table<string, string> the tools this chat has (agents.offered)
---@param opts table the extension's options
local function tool(spec, offered, opts)
  return {
    name = spec.name,
    cmds = {
      function(_, args, cmd_opts)
        agents.call(spec.tool, agents.arguments(spec, args, opts.max_tokens), function(answer)
          cmd_opts.output_cb({ status = answer.is_error and 'error' or 'success', data = answer.text })
        end, offered)
      end,
    },
    schema = {
      type = 'function',
      ['function'] = { name = spec.name, description = spec.description, parameters = spec.parameters },
    },
    output = {
      success = function(self, stdout, meta)
        local text = vim.iter(stdout):flatten():join('\n')
        meta.tools.chat:add_tool_output(self, text, string.format('AutoDoc %s: %s', spec.tool, text:match('^[^\n]*')))
      end,
      error = function(self, stderr, meta)
        local text = vim.iter(stderr):flatten():join('\n')
        meta.tools.chat:add_tool_output(self, text, 'AutoDoc ' .. text:match('^[^\n]*'))
      end,
      prompt = function(self)
        return string.format('Let the agent ask AutoDoc (%s %s)?', spec.tool, vim.inspect(self.args))
      end,
    },
  }
end

--- The tools' entries for CodeCompanion's `interactions.chat.tools`. Each is made when a chat resolves it, so
--- its workspace enum holds the workspaces of that moment.
---@param opts table the extension's options (`tools`: the engine tools to offer, default every one)
---@return table<string, table>
function M.definitions(opts)
  local offered = agents.offered(opts.tools)
  local entries = {}
  for _, spec in ipairs(agents.tools(opts.tools)) do
    entries[spec.name] = {
      description = spec.title,
      callback = function()
        return tool(agents.tools({ spec.tool })[1], offered, opts)
      end,
      opts = { require_approval_before = opts.require_approval == true },
    }
  end
  return entries
end

--- The names of the tools `definitions` makes, in order.
---@param opts table
---@return string[]
function M.names(opts)
  return vim.tbl_map(function(spec) return spec.name end, agents.tools(opts.tools))
end

return M
