--- The search session (autodoc.session) as a snacks.picker source (:AutodocPick snacks). A live finder: the
--- engine ranks, so the matcher keeps the finder's order; each answer (lexical, then every stage) re-runs the
--- finder, which lists the session's answer for the prompt. The title names the workspace, the stages and a
--- refusal (snacks draws its toggles there too); `<Tab>` selects several hits.
local sources = require('autodoc.sources')

local M = {}

---@param session autodoc.Session
---@return table<string, fun()>, table<string, table>
local function keys(session)
  local actions, mappings = {}, {}
  sources.each_key(session, function(key, fn, name)
    actions['autodoc_' .. name] = fn
    mappings[key] = { 'autodoc_' .. name, mode = { 'i', 'n' } }
  end)
  return actions, mappings
end

---@param session autodoc.Session
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

---@param session autodoc.Session
---@return string
local function title(session)
  local name, status = sources.header(session)
  return name .. '  ' .. status
end

---@param session autodoc.Session
---@param opts table snacks picker options
local function open(session, opts)
  local actions, mappings = keys(session)
  local picker
  local function width()
    local win = picker and picker.list and picker.list.win
    return win and win:valid() and vim.api.nvim_win_get_width(win.win) - 2 or nil
  end
  picker = require('snacks').picker.pick(vim.tbl_deep_extend('force', {
    title = title(session),
    live = true,
    search = session.initial_query,
    finder = function(_, ctx)
      local prompt = ctx.filter.search
      if prompt ~= session.prompt then
        session:typed()
        session:ask(prompt)
      end
      return session.prompt == prompt and sources.items(session, width(), function(item, hit)
        item.file, item.pos, item.end_pos = sources.file(session, hit), { hit.line_start, 0 }, { hit.line_end, 0 }
      end) or {}
    end,
    format = function(item) -- the workspace label in its own highlight, then the rest of the row
      local label = item.label or ''
      if label == '' then
        return { { item.text } }
      end
      return { { label, 'AutodocWorkspace' }, { item.text:sub(#label + 1) } }
    end,
    preview = function(ctx) preview(session, ctx) end,
    confirm = function(p)
      local chosen = vim.tbl_filter(function(hit) return hit ~= nil end,
        vim.tbl_map(function(item) return item.hit end, p:selected({ fallback = true })))
      p:close()
      vim.schedule(function() sources.choose(session, chosen) end)
    end,
    actions = actions,
    win = { input = { keys = mappings }, list = { keys = mappings } },
  }, opts))
  session.on_update = function()
    if picker and not picker.closed then
      picker.title = title(session)
      picker:update_titles()
      picker:find({ refresh = true })
    end
  end
end

--- Open the picker (snacks.nvim must be installed).
---@param opts table|nil snacks picker options, and autodoc.SourceOptions (query, workspace, related, on_choose)
function M.search(opts)
  opts = opts or {}
  local own = { query = opts.query, workspace = opts.workspace, scope = opts.scope, related = opts.related,
    on_choose = opts.on_choose }
  local picker_opts = vim.deepcopy(opts)
  for key in pairs(own) do
    picker_opts[key] = nil
  end
  sources.start('snacks', own, function(session) open(session, picker_opts) end)
end

return M
