--- One list in the editor (a search, most often), whatever picker shows it: the workspaces it covers
--- (autodoc.session.scope: every one by default, `@name` words before the query, `<M-w>` for the next scope), the
--- stages and what those workspaces can run, the refusals, the answers and whether they are still wanted, and
--- related mode. The built-in picker and the telescope, fzf-lua, snacks and mini.pick sources are views over it:
--- they hand it the prompt and keys, and draw what it holds when `on_update` says so.
---
--- What a session lists is its strategy (autodoc.session.strategies: search, related, documents, folders,
--- related_live): the request that answers a prompt. Whether an answer is still wanted is decided here alone:
--- every ask takes a new `tick`, the editor's one staleness counter, and an answer to an older tick (or to a
--- closed session) is dropped, as mini.pick's querytick does.
local autodoc = require('autodoc')
local rpc = require('autodoc.rpc')
local state = require('autodoc.state')
local stages = require('autodoc.stages')
local text = require('autodoc.session.text')
local workspace_of = require('autodoc.session.workspace')
local scope_of = require('autodoc.session.scope')
local strategies = require('autodoc.session.strategies')

local M = {}

---@alias autodoc.SessionLevel 'none'|'partial'|'final' nothing yet, the lexical answer, every stage's answer

---@class autodoc.Session
---@field source string the view: 'builtin', 'telescope', 'fzf-lua', 'snacks', 'mini.pick', 'related-live'
---@field strategy autodoc.SessionStrategy what it lists: the request that answers a prompt
---@field background boolean|nil a side list (related-live): not picker_state's, no AutodocResults, not asked
---   again when the index changes
---@field scope autodoc.Scope|nil what is searched when the prompt names no workspace
---@field asked_scope string|string[]|nil the scope the session was opened with (read once the engine is open)
---@field opened_from string the file of the buffer the session was opened from (setup's scope 'current')
---@field scope_problem string|nil why that scope cannot be searched (a name that is no workspace)
---@field searched autodoc.Scope|nil what the newest ask searched
---@field root string the folder of the one workspace searched or listed ('' when several are)
---@field root_problem string|nil why a searched folder cannot be read (the engine's workspace.status)
---@field stages table<string, boolean> the checked stages (saved across sessions)
---@field available table<string, boolean> false for a stage the workspace cannot run
---@field rank_model string|nil
---@field related autodoc.RelatedSource|nil set: the session lists the sections related to it
---@field prompt string|nil what the view's prompt held at the newest ask
---@field query string|nil that prompt without its `@workspace`
---@field answer autodoc.Answer|nil the newest answer to the newest ask
---@field level autodoc.SessionLevel how far the newest ask is answered
---@field message string|nil shown in place of hits (an error, or why nothing is asked)
---@field notice string|nil a refusal, shown until the next keystroke
---@field letters_known { answer: autodoc.Answer|nil, width: integer|nil, value: boolean }|nil Session:letters, once per answer and width
---@field tick integer every ask takes the next; answers to an older one are dropped
---@field asked_at integer|nil hrtime of the newest ask
---@field typed_at integer|nil hrtime of the keystroke behind it, when the view knows (its debounce)
---@field closed boolean
---@field started boolean|nil the engine is open for it (Session:start): asks before then wait for it
---@field previewed { hit: autodoc.Hit, buf: integer, win: integer|nil }|nil the hit a source previewed last
---@field on_choose fun(hits: autodoc.Hit[], session: autodoc.Session)|nil
---@field initial_query string|nil
---@field on_update fun(session: autodoc.Session) the view draws the session again
---@field prompt_now (fun(): string|nil)|nil what the view's prompt holds now, when the view can say
local Session = {}
Session.__index = Session

---@type autodoc.Session|nil the session opened last (picker_state)
M.current = nil

---@class autodoc.SessionOptions
---@field source string
---@field scope string|string[]|nil a name, a list of names, '*', or '@a @b' as typed (default: setup's scope)
---@field related autodoc.RelatedSource|nil
---@field strategy autodoc.SessionStrategy|nil default: related when `related` is given, else search
---@field background boolean|nil
---@field on_choose fun(hits: autodoc.Hit[], session: autodoc.Session)|nil
---@field on_update fun(session: autodoc.Session)|nil
---@field prompt_now (fun(): string|nil)|nil

--- When the workspace's files change or its embeddings finish filling, the open session asks its prompt again,
--- whatever view shows it. A scan that found nothing new does not: an idle picker asks nothing (a paid ranker
--- costs per search).
local function refresh_on_index_changes()
  vim.api.nvim_create_autocmd('User', {
    group = vim.api.nvim_create_augroup('autodoc-session', { clear = true }),
    pattern = { 'AutodocIndexed', 'AutodocSemanticReady' },
    callback = function(event)
      local session, data = M.current, event.data or {}
      local unchanged = event.match == 'AutodocIndexed' and data.report and not autodoc.changed_files(data.report)
      if session and not session.closed and session.prompt and not unchanged
          and (data.workspace == nil or session:covers(data.workspace)) then
        -- what the prompt holds now: a keystroke still waiting for typing to pause is asked with it
        session:ask(session.prompt_now and session.prompt_now() or session.prompt)
      end
    end,
  })
end

---@param opts autodoc.SessionOptions
---@return autodoc.Session
function M.new(opts)
  if not M.current and not opts.background then
    refresh_on_index_changes()
  end
  local self = setmetatable({ source = opts.source, asked_scope = opts.scope, related = opts.related, root = '',
    strategy = opts.strategy or (opts.related and strategies.related or strategies.search),
    background = opts.background, on_choose = opts.on_choose, opened_from = vim.api.nvim_buf_get_name(0),
    stages = stages.load(), available = {}, level = 'none', tick = 0, closed = false,
    on_update = opts.on_update or function() end, prompt_now = opts.prompt_now }, Session)
  if not opts.background then
    M.current = self
  end
  return self
end

--- Does the session list what workspace `name` holds (so its changes are asked again)?
---@param name string
---@return boolean
function Session:covers(name)
  return vim.tbl_contains(scope_of.searched(self.searched), name)
end

---@param method string
---@param params table
---@param callback fun(err: table|nil, result: any)
---@param on_partial fun(result: any)|nil
---@param lane string|nil default: the view's name and the method
function Session:request(method, params, callback, on_partial, lane)
  -- The lane lets the host stop an older search of this session at its next stage boundary.
  rpc.request(method, params, callback, lane or self.source .. ':' .. method, on_partial)
end

--- Is `tick` still the session's newest ask?
---@param tick integer
---@return boolean
function Session:wanted(tick)
  return tick == self.tick and not self.closed
end

--- Does the session search its workspaces with stages (search, related), not only list them (documents)?
---@param self autodoc.Session
---@return boolean
local function runs_stages(self)
  return self.strategy == strategies.search or self.strategy == strategies.related
end

---@param self autodoc.Session
---@param scope autodoc.Scope
local function search_in(self, scope)
  local names = scope_of.searched(scope)
  self.root = #names == 1 and autodoc.workspaces[names[1]] or ''
  if not vim.deep_equal(self.searched, scope) then
    self.searched = scope
    if runs_stages(self) then
      workspace_of.learn(self, names)
    end
  end
end

--- Whether some workspace of the answer has an embedding model: a search of several says the least ready state
--- ('off' when one of them has none), and each workspace's own in `workspaces`.
---@param answer autodoc.Answer
---@return boolean
local function can_embed(answer)
  for _, part in pairs(type(answer.workspaces) == 'table' and answer.workspaces or {}) do
    if type(part) == 'table' and type(part.semantic) == 'string' and part.semantic ~= 'off' then
      return true
    end
  end
  return answer.semantic ~= 'off'
end

---@param self autodoc.Session
---@param answer autodoc.Answer
---@param level autodoc.SessionLevel
local function take(self, answer, level)
  local answered = vim.uv.hrtime()
  for name, part in pairs(type(answer.workspaces) == 'table' and answer.workspaces or {}) do
    if autodoc.workspaces[name] == nil and type(part) == 'table' and type(part.root) == 'string' then
      autodoc.workspaces[name] = part.root -- added by another process: `@*` searched it, the title counts it
    end
  end
  self.answer, self.level, self.message = answer, level, nil
  if not answer.empty_prompt then -- an empty prompt asked nothing: it says nothing about the stages
    self.available.semantic = can_embed(answer)
    self.available.rerank = (answer.rank or {}).state ~= 'off'
    self.rank_model = answer.rank and rpc.value(answer.rank.model)
  end
  self.on_update(self)
  if self.background then
    return
  end
  local drawn = vim.uv.hrtime()
  local typed = self.typed_at or self.asked_at
  local ms = function(from, to) return (to - from) / 1e6 end
  -- User AutodocResults: an answer was handed to the view (:help autodoc-events), with where its time went.
  vim.api.nvim_exec_autocmds('User', { pattern = 'AutodocResults', data = { source = self.source, tick = self.tick,
    level = level, prompt = self.prompt, query = self.query, workspace = self:single_workspace(),
    scope = scope_of.searched(self.searched),
    stages = answer.stages and answer.stages.performed or {}, ms = ms(typed, drawn),
    debounce_ms = ms(typed, self.asked_at), wait_ms = ms(self.asked_at, answered),
    engine_ms = answer.timing and answer.timing.total or nil, render_ms = ms(answered, drawn) } })
end

--- Run `fn` on the next turn of the loop if `tick` is still wanted: a view that asked from inside its own
--- finder call is not redrawn from inside it.
---@param self autodoc.Session
---@param tick integer
---@param fn fun()
local function later(self, tick, fn)
  vim.schedule(function()
    if self:wanted(tick) then
      fn()
    end
  end)
end

--- What an ask that failed shows, in place of hits (while `tick` is still wanted).
---@param self autodoc.Session
---@param tick integer
---@return fun(err: table)
local function failed(self, tick)
  return function(err)
    if self:wanted(tick) then
      self.answer, self.message = nil, rpc.describe(err or {})
      self.on_update(self)
    end
  end
end

--- Ask what the view's prompt holds, as the strategy says (the same prompt again asks again: a toggle, an index
--- run).
---@param prompt string
---@param typed_at integer|nil hrtime of the keystroke behind it (a view that waits for typing to pause)
function Session:ask(prompt, typed_at)
  self.tick = self.tick + 1
  local tick = self.tick
  self.prompt, self.asked_at, self.typed_at = prompt, vim.uv.hrtime(), typed_at
  if not self.started then -- typed while the engine opens: start's `ready` asks it, against the workspaces there are
    return
  end
  local request = self.strategy(self, prompt, tick)
  self.query, self.answer, self.level, self.message = request.query, nil, 'none', request.message
  if request.message then
    later(self, tick, function() self.on_update(self) end)
    return
  end
  self.related = request.related or self.related
  if request.scope then
    search_in(self, request.scope)
  end
  if request.answer then
    later(self, tick, function() take(self, request.answer, 'final') end)
    return
  end
  local shape = request.shape or function(answer) return answer end
  local function done(err, answer)
    if not self:wanted(tick) then
      return
    end
    if err or not answer then
      return failed(self, tick)(err)
    end
    take(self, shape(answer), 'final')
  end
  if request.fetch then
    request.fetch(done)
    return
  end
  local params = type(request.params) == 'function' and request.params() or request.params
  self:request(request.method, params, done, request.streams and function(answer)
    if self:wanted(tick) then
      take(self, shape(answer), 'partial')
    end
  end or nil, request.lane)
end

--- Has the newest ask something to show: an answer (partial or final) or a message in place of hits?
---@return boolean
function Session:answered()
  return self.level ~= 'none' or self.message ~= nil
end

--- Ask the newest prompt again.
function Session:refresh()
  self:ask(self.prompt or '')
end

--- Say `refusal` on screen until the next keystroke (nil: clear it).
---@param refusal string|nil
function Session:refuse(refusal)
  self.notice = refusal
  self.on_update(self)
end

--- The view's prompt changed (a keystroke): the refusal shown is cleared, and answers to the asks before it are
--- no longer wanted (the built-in picker asks the new prompt once typing pauses: an answer to the text before
--- the keystroke, drawn meanwhile, would sit under a prompt it does not answer).
function Session:typed()
  self.notice = nil
  self.tick = self.tick + 1
end

--- Flip stage `name` and ask again; a flip that cannot be is refused on screen.
---@param name 'lexical'|'semantic'|'rerank'
---@return string|nil refusal
function Session:toggle(name)
  local refusal
  if self.available[name] == false then
    refusal = name == 'rerank' and 'autodoc: no ranker is configured: Rerank stays off'
      or 'autodoc: no embedding model: Semantic stays off'
  elseif not stages.toggle(self.stages, name) then
    refusal = stages.KEEP_A_FINDER
  end
  if refusal then
    self:refuse(refusal)
    return refusal
  end
  self.notice = nil
  self:refresh()
end

--- Search the next scope of `<M-w>`'s round (every workspace, then each by name) with the same query. A prompt
--- that names its workspaces (`@name`) keeps them: that is refused on screen.
---@return string|nil refusal
function Session:next_workspace()
  local names = scope_of.names()
  local refusal = scope_of.next_refusal(self.prompt or '', names)
  if refusal then
    self:refuse(refusal)
    return refusal
  end
  self.scope, self.scope_problem, self.notice = scope_of.next(self.scope, names), nil, nil
  self:refresh()
end

--- The session ends: answers still on their way are dropped.
function Session:close()
  self.closed = true
  self.tick = self.tick + 1
end

--- Open the engine, settle the workspace, then `ready(session)`; `failed(message)` when the engine cannot open.
---@param ready fun(session: autodoc.Session)
---@param on_failure fun(message: string)|nil
function Session:start(ready, on_failure)
  local function go()
    if self.closed then
      return
    end
    self.started = true
    if runs_stages(self) or self.strategy == strategies.documents then
      self:settle_scope() -- the folders and related-live lists have no scope
    end
    ready(self)
  end
  autodoc.when_ready(function()
    -- The workspaces another process added or removed since: a scope naming one this editor does not know waits
    -- for them; else they come while the first answer is made.
    local _, unknown = scope_of.resolve(self.asked_scope, scope_of.names())
    require('autodoc.workspaces').refresh(unknown and go or nil)
    if not unknown then
      go()
    end
  end, function(message)
    self.message = message
    if on_failure then
      on_failure(message)
    end
    self.on_update(self)
  end)
end

--- The engine is open: the scope the session was opened with, read against the workspaces there are (a name
--- that is none is said, kept on screen, and searches nothing until the scope changes), else setup()'s.
function Session:settle_scope()
  local scope, problem = scope_of.resolve(self.asked_scope, scope_of.names())
  if problem then
    state.notify(problem, vim.log.levels.WARN)
  elseif not scope and self.related then
    scope = scope_of.related_default(self.related)
  end
  self.scope, self.scope_problem = scope or not problem and scope_of.default(self.opened_from) or nil, problem
  if self.scope and #scope_of.searched(self.scope) > 0 then
    search_in(self, self.scope)
  end
end

--- The one workspace the newest ask searched (nil when it searched several).
---@return string|nil
function Session:single_workspace()
  local names = scope_of.searched(self.searched or self.scope)
  return #names == 1 and names[1] or nil
end

--- The file `hit` is (its workspace's root joined with its path).
---@param hit autodoc.Hit
---@return string
function Session:file(hit)
  return scope_of.file(hit, self.answer, self.root)
end

-- What views draw, in the session's words (autodoc.session.text).

--- `hit`'s workspace label ('' unless the answer searched several workspaces): a row's first cells.
---@param hit autodoc.Hit
---@param width integer|nil the row's width, when the view knows it (a wide row has room for a longer label)
---@return string
function Session:label(hit, width)
  return scope_of.label(hit, scope_of.label_cells(self.answer, width), scope_of.labelled(self.answer))
end

---@param hit autodoc.Hit
---@param width integer|nil
---@return string
function Session:row(hit, width)
  return (text.row(hit, width, self:label(hit, width), self:letters(width)))
end

--- Whether this answer's rows at `width` show their badges in letters (text.letters), worked out once for both.
---@param width integer|nil
---@return boolean
function Session:letters(width)
  local known = self.letters_known
  if not (known and known.answer == self.answer and known.width == width) then
    local hits = self.answer and self.answer.hits or {}
    known = { answer = self.answer, width = width,
      value = text.letters(hits, width, function(hit) return self:label(hit, width) end) }
    self.letters_known = known
  end
  return known.value
end

---@return string e.g. 'AutoDoc · kb', with the folder's problem when it has one
function Session:title()
  return text.title(self)
end

---@return string the stage checkboxes, e.g. '[x] Lexical  [x] Semantic'
function Session:toggles()
  return text.toggles(self)
end

---@return string the refusal, the message, why there are no hits, or the answer's summary
function Session:status()
  return text.status(self)
end

---@return autodoc.Hit[]
function Session:hits()
  return self.answer and self.answer.hits or {}
end

M.names = scope_of.names
M.default_workspace = workspace_of.default

--- What the open session shows, read-only (require('autodoc').picker_state()).
---@return table|nil
function M.state()
  return M.current and require('autodoc.session.state').of(M.current)
end

return M
