--- The hybrid search as a mini.pick picker (:AutodocPick mini.pick, or :Pick autodoc: plugin/autodoc.lua adds
--- it to MiniPick.registry). The engine ranks, so `match` only asks the query; each answer (lexical, then
--- every stage) replaces the items.
local sources = require('autodoc.sources')

local M = {}

---@param session autodoc.SourceSession
---@return { text: string, hit: autodoc.Hit|nil }[]
local function items_of(session)
  return sources.items(session)
end

---@param session autodoc.SourceSession
---@return table<string, { char: string, func: fun() }> one mapping per key (mini.pick takes one char each)
local function stage_mappings(session)
  local mappings = {}
  sources.each_stage_key(session, function(name, key, flip, index)
    mappings['autodoc_' .. name .. (index > 1 and '_' .. index or '')] = { char = key, func = flip }
  end)
  return mappings
end

---@param session autodoc.SourceSession
local function open(session)
  local pick = require('mini.pick')
  local name = 'AutoDoc · ' .. session.workspace
  session.on_update = function()
    local opts = pick.is_picker_active() and pick.get_picker_opts()
    if opts and opts.source.name == name then -- never into another picker opened since
      pick.set_picker_items(items_of(session))
    end
  end
  M.session = session
  pick.start({
    source = {
      name = name,
      items = {},
      match = function(stritems)
        local prompt = table.concat(pick.get_picker_query() or {})
        sources.query(session, prompt)
        if prompt:match('^%s*$') and #stritems > 0 and not session.related then
          vim.schedule(function() pick.set_picker_items({}) end)
        end
        return vim.fn.range(1, #stritems) -- the engine's order, whatever the query
      end,
      preview = function(buf, item)
        if item.hit then
          sources.preview(session, item.hit, buf, pick.get_picker_state().windows.main)
        end
      end,
      choose = function(item)
        if item.hit then
          vim.schedule(function() sources.jump(session, item.hit) end) -- once the picker has closed
        end
      end,
    },
    mappings = stage_mappings(session),
  })
end

--- Open the picker (mini.pick must be installed; its setup() is called when nobody has).
function M.search()
  local pick = require('mini.pick')
  if not _G.MiniPick then
    pick.setup()
  end
  sources.start('mini.pick', function() end, open)
end

return M
