--- What every picker source shares (telescope, fzf-lua, snacks, mini.pick): a search session that
--- streams each query's stages (lexical first, replaced by the full answer; answers to an older
--- query dropped), the preview of a hit's section, and the jump to its line span.
local autodoc = require('autodoc')
local config = require('autodoc.config')
local stages = require('autodoc.stages')
local finder = require('autodoc.picker.finder')

local M = {}

---@class autodoc.SourceSession
---@field workspace string
---@field root string
---@field stages table<string, boolean> the checked stages, shared with the built-in picker
---@field prompt string|nil the newest query asked
---@field answer autodoc.Answer|nil the newest answer to `prompt`
---@field level integer 1: lexical only, 2: every stage
---@field shown { [1]: string, [2]: integer }[] (query, level) of every answer shown, in order (tests)
---@field on_update fun(session: autodoc.SourceSession)
---@field lane string
---@field previewed { hit: autodoc.Hit, buf: integer, win: integer|nil }|nil the hit last previewed, where
---@field related autodoc.RelatedSource|nil set: the session lists the sections related to it (autodoc.related)

--- The keys that flip stage `name`.
---@param name 'lexical'|'semantic'|'rerank'
---@return string[]
function M.stage_keys(name)
  return config.key_list(autodoc.config.keys['toggle_' .. name])
end

--- Call `bind(name, key, flip, index)` for every key of every stage (`index`: the key's place in its list).
---@param session autodoc.SourceSession
---@param bind fun(name: string, key: string, flip: fun(), index: integer)
function M.each_stage_key(session, bind)
  for _, name in ipairs(stages.names) do
    for index, key in ipairs(M.stage_keys(name)) do
      bind(name, key, function() M.toggle(session, name) end, index)
    end
  end
end

--- Open the engine, then call `open(session)`; `on_update(session)` runs for every answer shown.
---@param lane string requests of one source supersede each other only
---@param on_update fun(session: autodoc.SourceSession)
---@param open fun(session: autodoc.SourceSession)
function M.start(lane, on_update, open)
  local related = require('autodoc.related').take_pending() -- :AutodocPick {source} related
  autodoc.when_ready(function()
    local workspace = related and related.workspace or (autodoc.config.workspaces[1] or {}).name
    if not workspace or not autodoc.workspaces[workspace] then
      workspace = vim.tbl_keys(autodoc.workspaces)[1]
    end
    if not workspace then
      vim.notify('autodoc: no workspace yet; add one with :AutodocWorkspaceAdd', vim.log.levels.WARN)
      return
    end
    open({ workspace = workspace, root = autodoc.workspaces[workspace], stages = stages.load(), level = 0,
      shown = {}, on_update = on_update, lane = lane, related = related })
  end, function(message)
    vim.notify(message, vim.log.levels.ERROR)
  end)
end

--- Ask `prompt` (nothing when it is the query already asked).
---@param session autodoc.SourceSession
---@param prompt string
function M.query(session, prompt)
  if session.related then
    return require('autodoc.related').query(session, prompt)
  end
  if prompt == session.prompt then
    return
  end
  session.prompt = prompt
  session.answer = nil
  session.level = 0
  if prompt:match('^%s*$') then
    return
  end
  finder.stream({
    workspace = session.workspace,
    query = prompt,
    stages = stages.requested(session.stages, {}),
    limit = autodoc.config.limit,
    lane = session.lane,
    is_current = function() return session.prompt == prompt end,
    on_error = function(err)
      session.answer = { hits = {}, error = require('autodoc.rpc').describe(err) }
      session.on_update(session)
    end,
    on_answer = function(level, answer)
      session.answer = answer
      session.level = level
      table.insert(session.shown, { prompt, level })
      session.on_update(session)
    end,
  })
end

--- Flip a stage and ask the current query again.
---@param session autodoc.SourceSession
---@param name string
function M.toggle(session, name)
  if not stages.toggle(session.stages, name) then
    vim.notify('autodoc: keep Lexical or Semantic on: one must find the hits', vim.log.levels.WARN)
    return
  end
  local prompt = session.prompt
  session.prompt = nil
  M.query(session, prompt or '')
end

---@param session autodoc.SourceSession
---@param hit autodoc.Hit
---@return string
function M.file(session, hit)
  return session.root .. '/' .. hit.path
end

--- The session's answer as picker items `{ text, hit }` (the error alone when it failed); `extend(item, hit)`
--- adds a picker's own fields.
---@param session autodoc.SourceSession
---@param extend fun(item: table, hit: autodoc.Hit)|nil
---@return table[]
function M.items(session, extend)
  local answer = session.answer
  if answer and answer.error then
    return { { text = answer.error } }
  end
  local items = {}
  for index, hit in ipairs(answer and answer.hits or {}) do
    items[index] = { text = M.display(hit), hit = hit }
    if extend then
      extend(items[index], hit)
    end
  end
  return items
end

--- One hit as a picker line.
---@param hit autodoc.Hit
---@return string
function M.display(hit)
  return require('autodoc.picker.render').hit_line(hit)
end

--- The hit's file as preview lines.
---@param session autodoc.SourceSession
---@param hit autodoc.Hit
---@return string[]
function M.preview_lines(session, hit)
  return require('autodoc.picker.render').preview_lines(hit, session.root)
end

--- Highlight the hit's section and the query words in `buf` (which holds the preview lines), and put
--- `win` (if given) on the section once it shows `buf`.
---@param session autodoc.SourceSession
---@param hit autodoc.Hit
---@param buf integer
---@param win integer|nil
function M.mark_section(session, hit, buf, win)
  local words = session.answer and session.answer.query and session.answer.query.terms or {}
  session.previewed = { hit = hit, buf = buf, win = win }
  require('autodoc.picker.render').show_section(buf, win, hit, words)
end

--- Fill `buf` with the hit's file, its section highlighted, and put `win` (if given) on it.
---@param session autodoc.SourceSession
---@param hit autodoc.Hit
---@param buf integer
---@param win integer|nil
function M.preview(session, hit, buf, win)
  vim.bo[buf].modifiable = true
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, M.preview_lines(session, hit))
  vim.bo[buf].filetype = 'markdown'
  M.mark_section(session, hit, buf, win)
end

--- Open the hit's file on its first line, its whole span in view.
---@param session autodoc.SourceSession
---@param hit autodoc.Hit
---@param how 'edit'|'vsplit'|'split'|'tab'|nil
function M.jump(session, hit, how)
  require('autodoc.picker.actions').jump(M.file(session, hit), hit.line_start, hit.line_end, how)
end

return M
