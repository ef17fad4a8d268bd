--- AutoDoc as a CodeCompanion extension: the tools autodoc_search and autodoc_related (the group @{autodoc}),
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
  provider = nil, -- the picker /autodoc opens: nil or 'autodoc' (built in), or 'telescope'
  max_tokens = nil, -- the tools' default text budget (the MCP default when nil)
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
    prompt = 'I am giving you ${tools} to answer from my knowledge base; cite path:line_start-line_end',
    tools = { 'autodoc_search', 'autodoc_related' },
    opts = { collapse_tools = true },
  }
  chat.slash_commands.autodoc = slash_command(opts)
  config.interactions.shared.editor_context.autodoc = editor_context()
end

Extension.exports = {
  search = function(args, callback) agents.call('search', args, callback) end,
  related = function(args, callback) agents.call('related', args, callback) end,
}

return Extension
