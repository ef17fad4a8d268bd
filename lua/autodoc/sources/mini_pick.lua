--- The search session (autodoc.session) as a mini.pick picker (:AutodocPick mini.pick, or :Pick autodoc:
--- plugin/autodoc.lua adds it to MiniPick.registry). The engine ranks, so `match` only asks the query; each
--- answer (lexical, then every stage) replaces the items. The footer names the workspace, the stages and a
--- refusal; `<M-CR>` chooses the marked hits (`<C-x>` marks).
local sources = require('autodoc.sources')

local M = {}

---@param session autodoc.Session
---@return table<string, { char: string, func: fun() }> one mapping per key (mini.pick takes one char each)
local function mappings(session)
  local list = {}
  sources.each_key(session, function(key, fn, name, index)
    list['autodoc_' .. name .. (index > 1 and '_' .. index or '')] = { char = key, func = fn }
  end)
  return list
end

---@param pick table mini.pick
---@return integer|nil the cells a row has in the list window
local function width(pick)
  local win = pick.is_picker_active() and pick.get_picker_state().windows.main
  return win and vim.api.nvim_win_is_valid(win) and vim.api.nvim_win_get_width(win) - 1 or nil
end

--- The footer's text: mini.pick cuts a long one at its start, so the title (a folder's problem may be long)
--- loses its middle here, and the state, at the end, always shows.
---@param session autodoc.Session
---@return string
local function footer(session)
  local title, status = sources.header(session)
  local text = require('autodoc.session.text')
  local win = width(require('mini.pick'))
  local room = win and win - text.cells(status) - 14 -- mini.pick's counts take the footer's right end
  local problem = session.root_problem or ''
  local head = title:sub(1, #title - #problem) -- 'AutoDoc · name · ', kept whole
  if room then
    problem = text.shorten_middle(problem, math.max(room - text.cells(head), 20))
  end
  return head .. problem .. '  ' .. status
end

--- Is mini.pick showing the preview (its `<Tab>`) in place of the list?
---@param pick table mini.pick
---@return boolean
local function previewing(pick)
  local state = pick.get_picker_state()
  return vim.api.nvim_win_get_buf(state.windows.main) == state.buffers.preview
end

--- mini.pick shows its list whenever items are set (then says MiniPickMatch): a preview the user opened is opened
--- again, on the new current item, by mini.pick's own toggle key, so that the user's next toggle closes it. The
--- key goes before any the user typed meanwhile (typed while the preview showed). `reopen()` arms it for the
--- next items set.
---@param pick table mini.pick
---@return fun() reopen
local function keep_preview(pick)
  local armed = false
  local group = vim.api.nvim_create_augroup('autodoc-mini-pick-preview', { clear = true })
  vim.api.nvim_create_autocmd('User', { group = group, pattern = 'MiniPickMatch', callback = function()
    local key = armed and pick.is_picker_active() and pick.get_picker_opts().mappings.toggle_preview
    armed = false
    if key and key ~= '' then
      vim.api.nvim_feedkeys(vim.keycode(key), 'ni', false) -- not typed: it reads no kept message
    end
  end })
  vim.api.nvim_create_autocmd('User', { group = group, pattern = 'MiniPickStop', once = true, callback = function()
    vim.api.nvim_del_augroup_by_id(group)
  end })
  return function() armed = true end
end

---@param session autodoc.Session
local function open(session)
  local pick = require('mini.pick')
  local name = footer(session)
  local reopen_preview
  local still_wanted = false -- the preview was open when the list emptied (a new scope, a new query)
  session.on_update = function()
    local opts = pick.is_picker_active() and pick.get_picker_opts()
    if not opts or opts.source.name ~= name then -- never into another picker opened since
      return
    end
    local previewed = reopen_preview and (previewing(pick) or still_wanted)
    name = footer(session)
    pick.set_picker_opts({ source = { name = name } }) -- which matches again: the list shows
    local items = sources.items(session, width(pick))
    -- mini.pick previews nothing without a hit: the wish waits for the list that has one
    local has_hit = vim.iter(items):any(function(item) return item.hit ~= nil end)
    still_wanted = previewed and not has_hit
    if previewed and has_hit then
      reopen_preview()
    end
    pick.set_picker_items(items)
  end
  local function chosen(items)
    return vim.tbl_map(function(item) return item.hit end, vim.tbl_filter(function(item) return item.hit end, items))
  end
  -- mini.pick draws the current row in MiniPickMatchCurrent, a link to CursorLine, which has gui colours only:
  -- without 'termguicolors' no row looked selected. In this picker's window it is AutoDoc's selection instead.
  vim.api.nvim_create_autocmd('User', { pattern = 'MiniPickStart', once = true, callback = function()
    local win = pick.get_picker_state().windows.main
    vim.wo[win].winhighlight = 'MiniPickMatchCurrent:AutodocSelection'
    reopen_preview = keep_preview(pick)
  end })
  if session.initial_query and session.initial_query ~= '' then
    vim.schedule(function() pick.set_picker_query(vim.split(session.initial_query, '')) end)
  end
  pick.start({
    source = {
      name = name,
      items = {},
      match = function(stritems)
        local prompt = table.concat(pick.get_picker_query() or {})
        if prompt ~= session.prompt then
          session:typed()
          session:ask(prompt)
        end
        return vim.fn.range(1, #stritems) -- the engine's order, whatever the query
      end,
      show = function(buf, items, query)
        pick.default_show(buf, items, query)
        local ns = vim.api.nvim_create_namespace('autodoc-mini-pick-labels')
        vim.api.nvim_buf_clear_namespace(buf, ns, 0, -1)
        for row, item in ipairs(items) do
          if item.label and item.label ~= '' then
            vim.api.nvim_buf_set_extmark(buf, ns, row - 1, 0, { end_col = #item.label, hl_group = 'AutodocWorkspace',
              priority = 250 })
          end
        end
      end,
      preview = function(buf, item)
        if item.hit then
          sources.preview(session, item.hit, buf, pick.get_picker_state().windows.main)
        end
      end,
      choose = function(item)
        vim.schedule(function() sources.choose(session, chosen({ item })) end) -- once the picker has closed
      end,
      choose_marked = function(items)
        vim.schedule(function() sources.choose(session, chosen(items)) end)
      end,
    },
    mappings = mappings(session),
  })
end

--- Open the picker (mini.pick must be installed; its setup() is called when nobody has).
---@param opts autodoc.SourceOptions|nil
function M.search(opts)
  local pick = require('mini.pick')
  if not _G.MiniPick then
    pick.setup()
  end
  sources.start('mini.pick', opts, open)
end

return M
