--- The CodeCompanion tools autodoc_search and autodoc_related: function tools whose one command asks the
--- editor's engine (autodoc.agents) and hands its text to the model; a failure is a tool error it reads.
local agents = require('autodoc.agents')

local M = {}

local WORKSPACE = { type = 'string', description = 'Workspace name; default: the one holding the file being edited' }

local SEARCH = {
  description = "Search the user's Markdown knowledge base (design notes, ADRs, references). Each hit is the "
    .. 'matching section with its own text, path, breadcrumb and line span: cite it as path:line_start-line_end. '
    .. 'Query: plain words (stemmed), "an exact phrase", prefix*, field:value front-matter filters. Stages: '
    .. 'lexical (words), semantic (meaning), rerank; leave them out to run all available. Hit texts share '
    .. 'max_tokens (cut at line ends). While the semantic index is still filling, the first line says how many '
    .. 'sections it covers so far.',
  properties = {
    query = { type = 'string', description = 'words, "phrases", prefix*, field:value facets' },
    workspace = WORKSPACE,
    limit = { type = 'integer', description = 'hits to return (1-50, default 5)' },
    stages = { type = 'array', items = { type = 'string', enum = { 'lexical', 'semantic', 'rerank' } },
      description = 'which stages to run (default: all available)' },
    max_tokens = { type = 'integer', description = 'token budget for all hit texts together (default 2000)' },
  },
  required = { 'query' },
}

local RELATED = {
  description = 'What else the knowledge base says about one of its files, or about the section holding a '
    .. 'line of it: sections of other documents found by meaning, by distinctive words and by links, with their '
    .. 'text. Use it when working on or next to a Markdown file of the workspace.',
  properties = {
    path = { type = 'string', description = 'relative to the workspace root, e.g. adr/0002-store.md' },
    workspace = WORKSPACE,
    line = { type = 'integer', description = 'a line of the section to relate (default: the whole document)' },
    limit = { type = 'integer', description = 'hits to return (1-50, default 5)' },
    max_tokens = { type = 'integer', description = 'token budget for all hit texts together (default 2000)' },
  },
  required = { 'path' },
}

--- The arguments as the engine takes them: JSON nulls (a model's "not given") left out.
---@param args table|nil
---@param max_tokens integer|nil
---@return table
local function cleaned(args, max_tokens)
  local out = {}
  for key, value in pairs(args or {}) do
    if value ~= vim.NIL then
      out[key] = value
    end
  end
  out.max_tokens = out.max_tokens or max_tokens
  if type(out.stages) == 'string' then -- avante's parameters are strings: "lexical, semantic"
    out.stages = vim.split(out.stages, '[,%s]+', { trimempty = true })
  end
  return out
end

---@param name string the tool's name for the model
---@param engine_tool string the MCP tool that answers it
---@param spec table
---@param opts table the extension's options
local function tool(name, engine_tool, spec, opts)
  return {
    name = name,
    cmds = {
      function(_, args, cmd_opts)
        agents.call(engine_tool, cleaned(args, opts.max_tokens), function(answer)
          cmd_opts.output_cb({ status = answer.is_error and 'error' or 'success', data = answer.text })
        end)
      end,
    },
    schema = {
      type = 'function',
      ['function'] = {
        name = name,
        description = spec.description,
        parameters = { type = 'object', properties = spec.properties, required = spec.required,
          additionalProperties = false },
      },
    },
    output = {
      success = function(self, stdout, meta)
        local text = vim.iter(stdout):flatten():join('\n')
        meta.tools.chat:add_tool_output(self, text, string.format('AutoDoc %s: %s', engine_tool, text:match('^[^\n]*')))
      end,
      error = function(self, stderr, meta)
        local text = vim.iter(stderr):flatten():join('\n')
        meta.tools.chat:add_tool_output(self, text, 'AutoDoc ' .. text:match('^[^\n]*'))
      end,
      prompt = function(self)
        return string.format('Let the agent ask AutoDoc (%s %s)?', engine_tool, vim.inspect(self.args))
      end,
    },
  }
end

--- The tools' entries for CodeCompanion's `interactions.chat.tools`.
---@param opts table the extension's options
---@return table<string, table>
function M.definitions(opts)
  local entries = {}
  for name, def in pairs({ autodoc_search = { 'search', SEARCH }, autodoc_related = { 'related', RELATED } }) do
    entries[name] = {
      description = def[2].description:match('^[^.]*'),
      callback = function() return tool(name, def[1], def[2], opts) end,
      opts = { require_approval_before = opts.require_approval == true },
    }
  end
  return entries
end

--- The same two tools as avante.nvim `custom_tools` entries (func(params, on_log, on_complete)).
---@param opts table|nil { max_tokens = integer }
---@return table[]
function M.avante(opts)
  opts = opts or {}
  local list = {}
  for _, def in ipairs({ { 'autodoc_search', 'search', SEARCH }, { 'autodoc_related', 'related', RELATED } }) do
    local params = {}
    for key, prop in pairs(def[3].properties) do
      table.insert(params, { name = key, description = prop.description,
        type = prop.type == 'array' and 'string' or prop.type, -- no arrays: stages as "lexical,semantic"
        optional = not vim.tbl_contains(def[3].required, key) })
    end
    table.sort(params, function(a, b) return a.name < b.name end)
    table.insert(list, {
      name = def[1],
      description = def[3].description,
      param = { type = 'table', fields = params },
      returns = { { name = 'result', description = 'the hits with their text', type = 'string' },
        { name = 'error', description = 'what went wrong and what to do', type = 'string', optional = true } },
      -- avante documents func(params, on_log, on_complete); later versions pass func(params, opts) with
      -- opts.on_complete. Without either, the answer is returned (waited for).
      func = function(params_in, second, third)
        local on_complete = type(second) == 'table' and second.on_complete or third
        local args = cleaned(params_in, opts.max_tokens)
        if type(on_complete) ~= 'function' then
          local answer = agents.call_sync(def[2], args)
          return not answer.is_error and answer.text or nil, answer.is_error and answer.text or nil
        end
        agents.call(def[2], args, function(answer)
          on_complete(not answer.is_error and answer.text or nil, answer.is_error and answer.text or nil)
        end)
      end,
    })
  end
  return list
end

return M
