--- The hybrid search as a snacks.picker source (:AutodocPick snacks). A live finder: the engine ranks, so
--- the matcher keeps the finder's order; each answer (lexical, then every stage) re-runs the finder,
--- which lists the newest answer for the prompt.
local sources = require('autodoc.sources')

local M = {}

---@param session autodoc.SourceSession
---@return table[] snacks picker items
local function items_of(session)
  return sources.items(session, function(item, hit)
    item.file, item.pos, item.end_pos = sources.file(session, hit), { hit.line_start, 0 }, { hit.line_end, 0 }
  end)
end

---@param session autodoc.SourceSession
---@return table<string, fun()>, table<string, table>
local function stage_actions(session)
  local actions, mappings = {}, {}
  sources.each_stage_key(session, function(name, key, flip)
    actions['autodoc_' .. name] = flip
    mappings[key] = { 'autodoc_' .. name, mode = { 'i', 'n' } }
  end)
  return actions, mappings
end

---@param session autodoc.SourceSession
---@param ctx table snacks preview context
local function preview(session, ctx)
  ctx.preview:reset()
  if not ctx.item.hit then
    return
  end
  ctx.preview:set_lines(sources.preview_lines(session, ctx.item.hit))
  ctx.preview:highlight({ ft = 'markdown' })
  sources.mark_section(session, ctx.item.hit, ctx.preview.win.buf, ctx.preview.win.win)
end

---@param session autodoc.SourceSession
---@param opts table snacks picker options
local function open(session, opts)
  local actions, mappings = stage_actions(session)
  M.session = session
  M.picker = require('snacks').picker.pick(vim.tbl_deep_extend('force', {
    title = 'AutoDoc · ' .. session.workspace,
    live = true,
    finder = function(_, ctx)
      local prompt = ctx.filter.search
      sources.query(session, prompt)
      return session.prompt == prompt and items_of(session) or {}
    end,
    format = 'text',
    preview = function(ctx) preview(session, ctx) end,
    confirm = function(picker, item)
      picker:close()
      if item and item.hit then
        vim.schedule(function() sources.jump(session, item.hit) end)
      end
    end,
    actions = actions,
    win = { input = { keys = mappings }, list = { keys = mappings } },
  }, opts))
  session.on_update = function()
    if M.picker and not M.picker.closed then
      M.picker:find({ refresh = true })
    end
  end
end

--- Open the picker (snacks.nvim must be installed).
---@param opts table|nil snacks picker options, merged over ours
function M.search(opts)
  sources.start('snacks', function() end, function(session) open(session, opts or {}) end)
end

return M
