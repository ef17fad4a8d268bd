--- What the picker sources share (telescope, fzf-lua, snacks, mini.pick): each is a view over a search
--- session (autodoc.session), which owns the workspace, the stages, the refusals, the answers and their
--- staleness, and related mode. Here: starting a session for a source, its keys, its items, the preview of a
--- hit's section, and what choosing hits does.
local autodoc = require('autodoc')
local config = require('autodoc.config')
local stages = require('autodoc.stages')
local session_core = require('autodoc.session')

local M = {}

---@class autodoc.SourceOptions
---@field query string|nil pre-fills the prompt
---@field workspace string|nil the workspace searched when the prompt names none (`scope` wins)
---@field scope string|string[]|nil the workspaces searched when the prompt names none: a name, a list, '*', or
---   '@a @b' as typed (default: setup's scope)
---@field related autodoc.RelatedSource|nil list the sections related to this one
---@field on_choose fun(hits: autodoc.Hit[], session: autodoc.Session)|nil called with the chosen hits
---   (every marked one, else the one under the cursor) in place of jumping to the first

--- Call `bind(key, fn, name)` for every key the session answers in a source: the stage toggles (`name`: the
--- stage) and the next workspace (`name`: 'next_workspace'). A key may come as a list.
---@param session autodoc.Session
---@param bind fun(key: string, fn: fun(), name: string, index: integer)
function M.each_key(session, bind)
  for _, name in ipairs(stages.names) do
    for index, key in ipairs(config.key_list(autodoc.config.keys['toggle_' .. name])) do
      bind(key, function() session:toggle(name) end, name, index)
    end
  end
  for index, key in ipairs(config.key_list(autodoc.config.keys.next_workspace)) do
    bind(key, function() session:next_workspace() end, 'next_workspace', index)
  end
end

--- Start a session for `source`, then `open(session, opts)` once the engine is open; until then (and when it
--- cannot open) the reason is said.
---@param source string
---@param opts autodoc.SourceOptions|nil
---@param open fun(session: autodoc.Session)
function M.start(source, opts, open)
  opts = opts or {}
  local session = session_core.new({ source = source, scope = opts.scope or opts.workspace, related = opts.related,
    on_choose = opts.on_choose })
  session.initial_query = opts.query
  session:start(function()
    if #session_core.names() == 0 then
      autodoc.state.notify(require('autodoc.session.text').NO_WORKSPACE, vim.log.levels.WARN)
      return
    end
    open(session)
  end, function(message)
    autodoc.state.notify(message, vim.log.levels.ERROR)
  end)
end

---@param session autodoc.Session
---@param hit autodoc.Hit
---@return string
function M.file(session, hit)
  return session:file(hit)
end

--- The session's answer as picker items `{ text, hit, label }` fitted to `width` (`label`: the row's first
--- characters, its workspace, drawn in AutodocWorkspace; '' when one workspace is searched); in place of hits,
--- one item saying why there are none (an error, a refusal of the prompt, the engine's reason).
--- `extend(item, hit)` adds a picker's own fields.
---@param session autodoc.Session
---@param width integer|nil
---@param extend fun(item: table, hit: autodoc.Hit)|nil
---@return table[]
function M.items(session, width, extend)
  if session.message then
    return { { text = session.message } }
  end
  local items = {}
  for index, hit in ipairs(session:hits()) do
    items[index] = { text = session:row(hit, width), hit = hit, label = session:label(hit, width) }
    if extend then
      extend(items[index], hit)
    end
  end
  local reason = require('autodoc.session.text').no_hits_reason(session.answer)
  if reason then
    items[1] = { text = '0 hits: ' .. reason }
  end
  return items
end

--- The title and the state line a source shows: `AutoDoc · kb` and `[x] Lexical  [x] Semantic · 2 hits`; a
--- refusal comes first, so a narrow title still shows it.
---@param session autodoc.Session
---@return string title, string status
function M.header(session)
  local status = session:status()
  if session.notice then
    return session:title(), status .. '  ' .. session:toggles()
  end
  return session:title(), session:toggles() .. (status ~= '' and '  · ' .. status or '')
end

--- The hit's file as preview lines.
---@param session autodoc.Session
---@param hit autodoc.Hit
---@return string[]
function M.preview_lines(session, hit)
  return require('autodoc.picker.render').preview_lines(hit, session:file(hit))
end

--- Highlight the hit's section and the query words in `buf` (which holds the preview lines), and put
--- `win` (if given) on the section once it shows `buf`.
---@param session autodoc.Session
---@param hit autodoc.Hit
---@param buf integer
---@param win integer|nil
function M.mark_section(session, hit, buf, win)
  local words = session.answer and session.answer.query and session.answer.query.terms or {}
  session.previewed = { hit = hit, buf = buf, win = win }
  require('autodoc.picker.render').show_section(buf, win, hit, words)
end

--- Fill `buf` with the hit's file, its section highlighted, and put `win` (if given) on it.
---@param session autodoc.Session
---@param hit autodoc.Hit
---@param buf integer
---@param win integer|nil
function M.preview(session, hit, buf, win)
  vim.bo[buf].modifiable = true
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, M.preview_lines(session, hit))
  vim.bo[buf].filetype = 'markdown'
  M.mark_section(session, hit, buf, win)
end

--- The chosen hits: the session's on_choose gets them all; else the first is opened on its line span.
---@param session autodoc.Session
---@param hits autodoc.Hit[]
---@param how 'edit'|'vsplit'|'split'|'tab'|nil
function M.choose(session, hits, how)
  session:close()
  if #hits == 0 then
    return
  end
  if session.on_choose then
    session.on_choose(hits, session)
    return
  end
  local hit = hits[1]
  require('autodoc.picker.actions').jump(M.file(session, hit), hit.line_start, hit.line_end, how)
end

return M
