--- AutoDoc as a CodeCompanion extension: the tools autodoc_search, autodoc_related, autodoc_read,
--- autodoc_documents and autodoc_workspaces (the group @{autodoc}; `tools = { 'search', ... }` offers fewer),
--- the slash command /autodoc and the editor context #{autodoc}, all answered by the editor's own engine.
---
---   require('codecompanion').setup({ extensions = { autodoc = { opts = { require_approval = false } } } })
---
--- CodeCompanion loads this file only when the extension is configured; AutoDoc never requires CodeCompanion.
local agents = require('autodoc.agents')
local tools = require('codecompanion._extensions.autodoc.tools')

local Extension = {}

Extension.defaults = {
  require_approval = false, -- the tools only read; true asks before each call
  provider = nil, -- the view /autodoc opens, as pick() names it: nil or 'builtin', 'telescope', 'fzf-lua', ...
  max_tokens = nil, -- the search and related tools' default text budget (the MCP default when nil)
  tools = nil, -- the engine tools to offer, e.g. { 'search', 'related' } (default: every one)
}

---@param chat table CodeCompanion.Chat
---@param hits table[]
---@param root string
local function add_sections(chat, hits, root)
  for _, hit in ipairs(hits) do
    local text, id = agents.section_context(root, hit)
    chat:add_context({ content = text }, 'autodoc', id, { path = root .. '/' .. hit.path })
  end
end

---@param opts table
local function slash_command(opts)
  return {
    description = 'Insert sections of the knowledge base chosen in the AutoDoc picker',
    callback = function(chat)
      agents.choose_hits(function(hits, root)
        vim.schedule(function()
          add_sections(chat, hits, root)
          if chat.ui and chat.ui.winnr and vim.api.nvim_win_is_valid(chat.ui.winnr) then
            vim.api.nvim_set_current_win(chat.ui.winnr)
          end
        end)
      end, { provider = opts.provider })
    end,
    opts = { contains_code = true },
  }
end

local function editor_context()
  return {
    description = 'Share the knowledge-base section under the cursor, with its related sections',
    callback = function(context)
      local buffer_context = context.Chat and context.Chat.buffer_context
      return agents.cursor_context(buffer_context and buffer_context.bufnr)
    end,
    opts = { contains_code = true },
  }
end

--- What the group tells the model: the tools, the workspaces (when known) and how to cite.
---@return string
local function group_prompt()
  local names = agents.workspace_names()
  local where = #names > 0 and string.format(' (its workspaces: %s)', table.concat(names, ', ')) or ''
  return 'I am giving you ${tools} to answer from my knowledge base' .. where .. '; cite path:line_start-line_end'
end

---@param opts table|nil the `opts` of `extensions.autodoc` in CodeCompanion's setup
function Extension.setup(opts)
  opts = vim.tbl_extend('force', Extension.defaults, opts or {})
  local config = require('codecompanion.config')
  local chat = config.interactions.chat
  for name, tool in pairs(tools.definitions(opts)) do
    chat.tools[name] = tool
  end
  chat.tools.groups = chat.tools.groups or {}
  chat.tools.groups.autodoc = {
    description = "AutoDoc: search the user's Markdown knowledge base and find what it says about a file",
    prompt = group_prompt(),
    tools = tools.names(opts),
    opts = { collapse_tools = true },
  }
  -- The workspaces may be known only once the engine has started: a new chat names those of its start.
  vim.api.nvim_create_autocmd('User', {
    pattern = 'CodeCompanionChatCreated',
    group = vim.api.nvim_create_augroup('autodoc.codecompanion', { clear = true }),
    callback = function() chat.tools.groups.autodoc.prompt = group_prompt() end,
  })
  chat.slash_commands.autodoc = slash_command(opts)
  config.interactions.shared.editor_context.autodoc = editor_context()
end

Extension.exports = {
  search = function(args, callback) agents.call('search', args, callback) end,
  related = function(args, callback) agents.call('related', args, callback) end,
}

return Extension
