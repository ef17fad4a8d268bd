--- What a session lists, one strategy per list: a function from (session, prompt, tick) to the request that
--- answers the prompt. `Session:ask` sends it, keeps the answer while its tick is the newest, and hands it to the
--- view; the strategy only says what to ask.
---   search        :AutodocSearch and every picker source: search.stream (lexical first, then every stage)
---   related       a picker on the sections related to `session.related`, narrowed by the prompt
---   documents     :AutodocOpen: the documents of the prompt's workspaces by title, alias or path (doc.list)
---   folders       :AutodocWorkspaceAdd: folders completed from the prompt (no engine request)
---   related_live  :AutodocRelatedLive: the sections related to `session.related`, the section under the cursor
local autodoc = require('autodoc')
local state = require('autodoc.state')
local stages = require('autodoc.stages')
local text = require('autodoc.session.text')
local scope_of = require('autodoc.session.scope')
local documents = require('autodoc.session.documents')

local M = {}

---@class autodoc.SessionRequest
---@field method string|nil the engine's method; nil: `fetch`, `answer` or `message` is the whole list
---@field fetch (fun(done: fun(err: table|nil, answer: table|nil)))|nil asks what makes the list (several requests:
---   several workspaces' documents) and calls `done` once
---@field params (table|fun(): table)|nil a function is called once the session searches `scope`: the stages a
---   search asks for are those its workspaces can run, learnt anew when the scope changes
---@field lane string|nil the host's lane (default: the view's name and the method)
---@field streams boolean|nil the engine answers a partial (lexical) answer first
---@field shape (fun(answer: table): autodoc.Answer)|nil the engine's answer as the list (default: as it is)
---@field answer autodoc.Answer|nil the list, known without asking
---@field message string|nil shown in place of hits: nothing is asked
---@field query string|nil the prompt as asked (a search's without its `@workspace` words)
---@field scope autodoc.Scope|nil the workspaces searched
---@field related autodoc.RelatedSource|nil the section the sections listed are related to (the side list's)

---@alias autodoc.SessionStrategy fun(session: autodoc.Session, prompt: string, tick: integer): autodoc.SessionRequest

---@param session autodoc.Session
---@return table the search options every stage-run asks with
local function options(session)
  return { limit = autodoc.config.limit, stages = stages.requested(session.stages, session.available),
    snippets = false } -- no view shows snippets: none are made
end

--- The prompt's scope and query, or the message that says why nothing is searched.
---@param session autodoc.Session
---@param prompt string
---@return autodoc.Scope|nil scope, string query, string|nil message
local function scoped(session, prompt)
  local scope, query, problem, named = scope_of.parse(prompt, session.scope, scope_of.names())
  problem = problem or not named and session.scope_problem or nil
  if problem or #scope_of.searched(scope) == 0 then
    return nil, query, problem or state.error or text.NO_WORKSPACE
  end
  return scope, query, nil
end

---@type autodoc.SessionStrategy
function M.search(session, prompt)
  local scope, query, message = scoped(session, prompt)
  if message then
    return { message = message, query = query }
  end
  if query:match('^%s*$') then
    return { scope = scope, query = query, answer = { hits = {}, semantic = 'off', rank = {}, empty_prompt = true } }
  end
  -- search.stream: the lexical answer first (a partial), then the full one; a partial never follows its final.
  return { scope = scope, query = query, method = 'search.stream', streams = true,
    params = function() return { scope_of.wire(scope), query, options(session) } end }
end

---@type autodoc.SessionStrategy
function M.related(session, prompt)
  local scope, query, message = scoped(session, prompt)
  if message then
    return { message = message, query = query }
  end
  -- the prompt narrows the related sections; they are asked afresh each time
  return { scope = scope, query = query, method = 'search.related',
    params = function() return scope_of.related_params(scope, session.related, options(session)) end,
    shape = function(answer) return text.filtered(answer, query) end }
end

--- :AutodocOpen: the documents of the prompt's scope (`@name`, `@a @b`, `@*`, `<M-w>`, as a search's) by title,
--- alias or path: one workspace's doc.list, or several workspaces' merged (autodoc.session.documents).
---@type autodoc.SessionStrategy
function M.documents(session, prompt)
  local scope, query, message = scoped(session, prompt)
  if message then
    return { message = message, query = query }
  end
  local names, limit = scope_of.searched(scope), autodoc.config.limit
  if #names > 1 then
    return { scope = scope, query = query, fetch = documents.fetch_all(session, names, query, limit) }
  end
  return { scope = scope, query = query, method = 'doc.list', lane = 'documents',
    params = { names[1], query, { limit = limit + 1 } },
    shape = function(listed) return documents.answer(listed, names[1], limit) end }
end

---@type autodoc.SessionStrategy
function M.folders(_, prompt)
  return { query = prompt, answer = require('autodoc.picker.finder').folders(prompt) }
end

--- The side list's: the sections related to the one `section()` says the cursor is in, or why there is none (the
--- list has no prompt); the stages are the saved ones.
---@param section fun(): autodoc.RelatedSource|nil, string|nil
---@return autodoc.SessionStrategy
function M.related_live(section)
  return function()
    local source, why = section()
    if not source then
      return { message = why }
    end
    return { related = source, method = 'search.related', lane = 'related-live',
      params = scope_of.related_params(scope_of.related_default(source), source,
        { limit = autodoc.config.limit, stages = stages.requested(stages.load(), {}), snippets = false }) }
  end
end

return M
