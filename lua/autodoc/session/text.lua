--- What a search session says, as text every view draws the same: a hit's row fitted to a width, the title,
--- the stage checkboxes and the line under the list (a refusal, why there are no hits, or the answer's summary).
local stages = require('autodoc.stages')

local M = {}

M.NO_WORKSPACE = "autodoc: no workspace yet; add one with :AutodocWorkspaceAdd or "
  .. "setup({ workspaces = { { name = 'kb', path = '~/kb' } } })"
--- The engine's reason for a query it could not search (stages.skipped), said in place of "0 hits".
local NO_WORDS = 'the query has no words to search for'
-- A search of several workspaces names one whose folder is not there (autodoc_core.search.scope._problems).
local FOLDER_PROBLEM = '^%S+: folder .*, its hits come from its index$'

--- The display cells of `text` (printable ASCII, most rows, is counted without asking Neovim).
---@param text string
---@return integer
local function cells(text)
  return text:find('[^\32-\126]') and vim.api.nvim_strwidth(text) or #text
end
M.cells = cells

--- `text` cut to `width` display cells in the middle, keeping more of its end (a breadcrumb's last part
--- names the section itself). Linear in the text: each row of every list is drawn with it.
---@param text string
---@param width integer
---@return string
function M.shorten_middle(text, width)
  if cells(text) <= width then
    return text
  end
  if width <= 1 then
    return width == 1 and '…' or ''
  end
  local head_cells = math.floor((width - 1) * 0.4)
  if not text:find('[^\32-\126]') then
    return text:sub(1, head_cells) .. '…' .. text:sub(#text - (width - 1 - head_cells) + 1)
  end
  local chars = {}
  for char in text:gmatch('[%z\1-\127\194-\244][\128-\191]*') do
    chars[#chars + 1] = char
  end
  local head, used = {}, 0
  for _, char in ipairs(chars) do
    local char_cells = #char == 1 and 1 or vim.api.nvim_strwidth(char)
    if used + char_cells > head_cells then
      break
    end
    used = used + char_cells
    head[#head + 1] = char
  end
  local tail, tail_used = {}, 0
  for index = #chars, 1, -1 do
    local char_cells = #chars[index] == 1 and 1 or vim.api.nvim_strwidth(chars[index])
    if tail_used + char_cells > width - 1 - used then
      break
    end
    tail_used = tail_used + char_cells
    table.insert(tail, 1, chars[index])
  end
  return table.concat(head) .. '…' .. table.concat(tail)
end

--- Fewer cells than this of a breadcrumb (`AD…ences`) say little: the badges take letters to give it more.
M.CRUMB_READABLE = 16

--- A stage badge's letter, when the badges are shortened (`[L+S]`; the legend is in :help autodoc-badges).
M.BADGE_LETTERS = { lexical = 'L', semantic = 'S', symbol = 'Y', rank = 'R', facet = 'F', link = 'K', title = 'T' }

---@param via string[]
---@param short boolean
---@return string
local function badges(via, short)
  local names = short and vim.tbl_map(function(name)
    return M.BADGE_LETTERS[name] or name:sub(1, 1):upper()
  end, via) or via
  return '  [' .. table.concat(names, '+') .. ']'
end

--- What follows `path`'s last slash (the whole path when it has none).
---@param path string
---@return string
local function file_name(path)
  local slash = path:match('^.*()/')
  return slash and path:sub(slash + 1) or path
end

--- `path` in `width` cells, its file name kept whole while it fits: the folders lose their middle first, then
--- go (`…name`, or the name alone), and only then does the name lose its middle.
---@param path string
---@param width integer
---@return string
local function shorten_path(path, width)
  local name = file_name(path)
  if #name == #path then
    return M.shorten_middle(path, width)
  end
  if cells(name) + 2 > width then -- no room for `…/`: the name, whole while it fits (it cut the name's middle)
    return cells(name) < width and '…' .. name or M.shorten_middle(name, width)
  end
  return M.shorten_middle(path:sub(1, #path - #name), width - cells(name)) .. name
end

--- One hit as a row: `path:start-end  breadcrumb  relevance  [stages]`, `(superseded)` after a hit the engine
--- demoted below its successor, and `label` (the hit's workspace, when several are searched) first. Given a
--- `width`, a row that would be wider loses the middle of its breadcrumb first; its stage badges shorten to
--- letters (`[L+S]`) before the breadcrumb gets fewer than CRUMB_READABLE cells (while that leaves it 8 at least);
--- then the breadcrumb goes, the badges shorten, the path loses its folders' middle, and the badges go before
--- the file name is cut: the label, the span, the relevance and the mark always show. `letters`: the badges in letters from the start (a list shows them alike,
--- M.letters). Returns the row and whether its badges are letters (or gone).
---@param hit autodoc.Hit
---@param width integer|nil the list's width in cells
---@param label string|nil
---@param letters boolean|nil
---@return string row, boolean letters
function M.row(hit, width, label, letters)
  if hit.folder then -- no span, relevance or stage: the folder and its Markdown files
    return string.format('%s  %s', hit.path, hit.breadcrumb), false
  end
  label = (label and label ~= '') and label .. ' ' or ''
  local span = string.format(':%d-%d', hit.line_start, hit.line_end)
  local relevance = string.format('  %.2f', tonumber(hit.relevance) or 0)
  local mark = hit.superseded == true and '  (superseded)' or ''
  local via = hit.via or {}
  local in_letters = badges(via, true) -- ASCII, a cell each
  local stages_text = letters and in_letters or badges(via, false)
  local path, crumb = hit.path, hit.breadcrumb or ''
  if width then
    local kept, path_cells = cells(label .. span .. relevance .. mark), cells(path)
    local function room() return width - kept - cells(stages_text) - path_cells - 2 end
    local room_in_letters = width - kept - #in_letters - path_cells - 2
    if crumb ~= '' and room() < math.min(cells(crumb), M.CRUMB_READABLE) and room_in_letters >= 8 then
      stages_text = in_letters -- the breadcrumb says which section it is: it outranks the badges' words
    end
    if room() >= 8 then
      crumb = M.shorten_middle(crumb, room())
    else -- no room for a breadcrumb worth reading: the path gets what is left, the badges give way first
      crumb = ''
      if kept + cells(stages_text) + path_cells > width then
        stages_text = in_letters
        if kept + #stages_text + cells(file_name(path)) > width then -- the badges go before the name is cut
          stages_text = ''
        end
        path = shorten_path(path, math.max(width - kept - #stages_text, 1))
      end
    end
  end
  local row = label .. path .. span .. (crumb ~= '' and '  ' .. crumb or '') .. relevance .. stages_text .. mark
  return row, #via > 0 and (stages_text == '' or stages_text == in_letters)
end

--- Whether a list of `hits` at `width` shows its badges in letters: when any row needs them, every row has them,
--- so that one list never mixes `[lexical+semantic]` and `[L+S]`.
---@param hits autodoc.Hit[]
---@param width integer|nil
---@param label_of fun(hit: autodoc.Hit): string
---@return boolean
function M.letters(hits, width, label_of)
  if not width then
    return false
  end
  for _, hit in ipairs(hits) do
    if select(2, M.row(hit, width, label_of(hit))) then
      return true
    end
  end
  return false
end

---@param session autodoc.Session
---@return string
function M.title(session)
  local kind = session.related and 'AutoDoc related' or 'AutoDoc'
  if session.message then -- nothing is searched: the message says why (a name that is no workspace)
    return kind
  end
  local title = kind .. ' · ' .. require('autodoc.session.scope').describe(session.searched or session.scope)
  if session.root_problem then
    title = title .. ' · ' .. session.root_problem
  end
  return title
end

---@param session autodoc.Session
---@return string
function M.toggles(session)
  local pieces = {}
  for _, name in ipairs(stages.names) do
    if session.available[name] ~= false then
      local label = stages.labels[name]
      if name == 'rerank' and session.rank_model then
        label = string.format('Rerank (%s)', session.rank_model)
      end
      table.insert(pieces, string.format('[%s] %s', session.stages[name] and 'x' or ' ', label))
    end
  end
  return table.concat(pieces, '  ')
end

--- Why `answer` has no hits, when the engine said (a query of punctuation only).
---@param answer autodoc.Answer|nil
---@return string|nil
function M.no_hits_reason(answer)
  if not answer or answer.empty_prompt or #answer.hits > 0 then
    return nil
  end
  local skipped = answer.stages and answer.stages.skipped
  for _, reason in pairs(type(skipped) == 'table' and skipped or {}) do
    if reason == NO_WORDS then
      return NO_WORDS
    end
  end
  -- Lexical alone says no reason; its parse does: no term, no facet, no stop word left out.
  local query = type(answer.query) == 'table' and answer.query or {}
  local function none(list) return type(list) ~= 'table' or #list == 0 end
  if type(query.dropped_stopwords) == 'table' and none(query.terms) and none(query.facets)
      and none(query.dropped_stopwords) then
    return NO_WORDS
  end
end

--- What the query's parse or the search of a scope says went wrong ("type:'adrr' matches no document; its
--- values here include 'adr', ...", "rfcs: not searched: ..."), the first of them and how many more; nil when
--- nothing did. A long paste's terms left out are said apart; a folder not there, when `folders_said`.
---@param answer autodoc.Answer
---@param folders_said boolean|nil the title says which folders are not there already
---@return string|nil
function M.first_problem(answer, folders_said)
  local problems = type(answer.query) == 'table' and answer.query.problems
  if type(problems) ~= 'table' then
    return nil
  end
  problems = vim.tbl_filter(function(p)
    return type(p) == 'string' and not p:find('^the query has ') and not (folders_said and p:find(FOLDER_PROBLEM))
  end, problems)
  if #problems == 0 then
    return nil
  end
  return problems[1] .. (#problems > 1 and string.format(' (and %d more)', #problems - 1) or '')
end

--- The answer in a few words: the rerank outcome, the semantic state, a reason for no hits, or the hit count.
--- `folders_said`: the title says which folders are gone already (the session's root_problem).
---@param answer autodoc.Answer
---@param folders_said boolean|nil
---@return string
function M.summary(answer, folders_said)
  local parts = {}
  local rank = answer.rank or {}
  local skipped = answer.stages and answer.stages.skipped or {}
  if rank.state == 'ranked' then
    table.insert(parts, 're-ranked by ' .. tostring(rank.model))
  elseif rank.state == 'error' then
    table.insert(parts, 'not re-ranked: ' .. tostring(rank.error))
  elseif rank.state ~= 'off' and type(skipped) == 'table' and skipped.rerank then
    table.insert(parts, 'not re-ranked: ' .. skipped.rerank) -- no ranker at all is no news
  end
  local performed = answer.stages and answer.stages.performed or {}
  local by_meaning = #answer.hits > 0 and vim.tbl_contains(performed, 'lexical')
  for _, hit in ipairs(answer.hits) do
    by_meaning = by_meaning and hit.via and #hit.via == 1 and hit.via[1] == 'semantic'
  end
  if by_meaning then
    table.insert(parts, 'no section has these words: by meaning only')
  end
  local requested = answer.stages and answer.stages.requested
  local semantic_asked = not requested or vim.tbl_contains(requested, 'semantic')
  if semantic_asked and require('autodoc.coverage').filling_any(answer) then
    table.insert(parts, require('autodoc.coverage').text(answer)) -- 'semantic 54%'; not news once off
  end
  local left_out = answer.query and tonumber(answer.query.terms_left_out) or 0
  if left_out > 0 then -- a pasted paragraph: most of it was not searched
    table.insert(parts, string.format('only the first %d of %d terms searched', #answer.query.terms,
      #answer.query.terms + left_out))
  end
  local problem = M.first_problem(answer, folders_said)
  local reason = M.no_hits_reason(answer) or (#answer.hits == 0 and problem) or nil
  if reason then
    table.insert(parts, '0 hits: ' .. reason)
  end
  if problem and problem ~= reason then -- `statu:accepted` (did you mean status:?) with hits all the same
    table.insert(parts, problem)
  end
  local noun = answer.counted or 'hit' -- what the list holds: hits, or :AutodocOpen's documents, folders
  local count = string.format('%d%s %s%s', #answer.hits, answer.more and '+' or '', noun,
    #answer.hits == 1 and not answer.more and '' or 's') -- '30+ documents': the list stopped at its limit
  local coming = M.still_to_come(answer)
  if coming then -- a list that is not final says so, whatever else is said
    table.insert(parts, 1, count .. ' so far, ' .. coming)
  elseif #answer.hits > 0 then -- first, so that a narrow title cut at its end keeps it
    table.insert(parts, 1, count)
  end
  return #parts > 0 and table.concat(parts, ' · ') or count
end

--- What a partial answer (a stream's lexical list) still waits for: 'semantic to come'; nil when final.
---@param answer autodoc.Answer
---@return string|nil
function M.still_to_come(answer)
  local pending = answer.partial == true and answer.stages and answer.stages.pending
  if type(pending) ~= 'table' or #pending == 0 then
    return nil
  end
  return table.concat(pending, ' and ') .. ' to come'
end

--- The line under the list: a refusal, else what stands in place of hits, else the answer's summary.
---@param session autodoc.Session
---@return string
function M.status(session)
  if session.notice then
    return session.notice
  end
  if session.message then
    return session.message
  end
  if session.answer and not session.answer.empty_prompt then
    return M.summary(session.answer, session.root_problem ~= nil)
  end
  return ''
end

--- The answer with only the hits whose path or breadcrumb holds every word typed (case-blind): in related
--- mode the prompt narrows the related sections, it asks nothing.
---@param answer autodoc.Answer
---@param prompt string|nil
---@return autodoc.Answer
function M.filtered(answer, prompt)
  local words = vim.split(vim.trim(prompt or ''):lower(), '%s+', { trimempty = true })
  if #words == 0 then
    return answer
  end
  local kept = vim.tbl_filter(function(hit)
    local haystack = (hit.path .. ' ' .. (hit.breadcrumb or '')):lower()
    for _, word in ipairs(words) do
      if not haystack:find(word, 1, true) then
        return false
      end
    end
    return true
  end, answer.hits)
  return vim.tbl_extend('force', answer, { hits = kept })
end

return M
