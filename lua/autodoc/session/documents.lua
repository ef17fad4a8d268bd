--- :AutodocOpen's list (autodoc.session.strategies.documents): a workspace's documents by title, alias or path
--- (doc.list) as hits spanning each file, and the lists of several workspaces merged into one answer.
local M = {}

--- doc.list's documents of `workspace` as hits.
---@param documents table[]
---@param workspace string
---@return autodoc.Hit[]
function M.hits(documents, workspace)
  local hits = {}
  for _, doc in ipairs(documents) do
    local aliases = #doc.aliases > 0 and ' (' .. table.concat(doc.aliases, ', ') .. ')' or ''
    table.insert(hits, { path = doc.path, line_start = 1, line_end = math.max(1, doc.line_count),
      breadcrumb = doc.title .. aliases, relevance = 1, via = { 'title' }, workspace = workspace,
      title = doc.title, aliases = doc.aliases })
  end
  return hits
end

---@param hits autodoc.Hit[]
---@param more boolean there are more documents than listed (the list stopped at its limit)
---@return autodoc.Answer
local function answer_of(hits, more)
  return { hits = hits, semantic = 'off', rank = { state = 'off' }, query = { terms = {} }, counted = 'document',
    more = more }
end

--- The answer listing doc.list's `documents` of `workspace` up to `limit` (asked for one more: whether there are
--- more than it lists).
---@param documents table[]
---@param workspace string
---@param limit integer
---@return autodoc.Answer
function M.answer(documents, workspace, limit)
  return answer_of(vim.list_slice(M.hits(documents, workspace), 1, limit), #documents > limit)
end

--- How a document matches `query`, as doc.list orders them: 0 its title or an alias is the query, 1 begins
--- with it, 2 holds it elsewhere.
---@param hit autodoc.Hit a document's
---@param query string
---@return integer
local function match_class(hit, query)
  local wanted = vim.trim(query):lower()
  local best = 2
  for _, name in ipairs(vim.list_extend({ hit.title or '' }, hit.aliases or {})) do
    name = name:lower()
    best = math.min(best, name == wanted and 0 or vim.startswith(name, wanted) and 1 or 2)
  end
  return best
end

--- Several workspaces' lists as one answer, in the engine's order (exact title or alias first, then prefixes,
--- then the rest), workspace by workspace within each; the answer names its workspaces and their roots (the
--- rows' labels, the files).
---@param lists table<string, autodoc.Hit[]> name -> that workspace's hits
---@param names string[] in the scope's order
---@param query string
---@param limit integer
---@return autodoc.Answer
function M.merged(lists, names, query, limit)
  local hits, order = {}, {}
  for place, name in ipairs(names) do
    for rank, hit in ipairs(lists[name]) do
      order[hit] = { match_class(hit, query), place, rank }
      table.insert(hits, hit)
    end
  end
  table.sort(hits, function(a, b)
    for i = 1, 3 do
      if order[a][i] ~= order[b][i] then
        return order[a][i] < order[b][i]
      end
    end
    return false
  end)
  local answer = answer_of(vim.list_slice(hits, 1, limit), #hits > limit)
  answer.scope, answer.workspaces = { workspaces = names }, {}
  for _, name in ipairs(names) do
    answer.workspaces[name] = { root = require('autodoc').workspaces[name] }
  end
  return answer
end

--- A request's `fetch` for the documents of the workspaces `names`: each one's doc.list (a lane each, asked at
--- once, for one more than `limit`: whether there are more), then one merged answer, or the first error.
---@param session autodoc.Session
---@param names string[]
---@param query string
---@param limit integer
---@return fun(done: fun(err: table|nil, answer: autodoc.Answer|nil))
function M.fetch_all(session, names, query, limit)
  return function(done)
    local lists, left, failed = {}, #names, false
    for _, name in ipairs(names) do
      session:request('doc.list', { name, query, { limit = limit + 1 } }, function(err, documents)
        if failed then
          return
        end
        if err or not documents then
          failed = true
          return done(err)
        end
        lists[name], left = M.hits(documents, name), left - 1
        if left == 0 then
          done(nil, M.merged(lists, names, query, limit))
        end
      end, nil, 'documents:' .. name)
    end
  end
end

return M
