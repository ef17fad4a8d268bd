--- Long work made visible: a progress message updated in place while a workspace indexes or its vectors
--- fill (count, rate, time left), a short line for statuslines, and a User AutodocProgress event for each
--- update. Neovim 0.12 has progress messages (nvim_echo with kind='progress' and an id); older versions get
--- one echo per update, not kept in :messages. A message the user must read holds the messages back until
--- the next key (autodoc.screen); the line and the event follow every update.
local rpc = require('autodoc.rpc')
local screen = require('autodoc.screen')

local M = {}

---@class autodoc.WorkProgress
---@field index_id integer|string|nil the index run's progress message
---@field embed_id integer|string|nil the vector fill's progress message
---@field indexing boolean an index run is under way
---@field embedding string the fill's part of status() ('' when not filling)
---@field fill_seen { at: integer, embedded: integer }|nil when this editor first saw the fill, and its count then

---@type table<string, autodoc.WorkProgress>
M.workspaces = {}

local has_progress_messages = vim.fn.has('nvim-0.12') == 1

local function redraw_statuslines()
  pcall(vim.cmd.redrawstatus) -- so a statusline showing status() follows; refused in a few states only
end

--- 1234567 -> "1,234,567"
---@param number integer
---@return string
function M.thousands(number)
  local text = tostring(math.floor(number))
  local grouped = text:reverse():gsub('(%d%d%d)', '%1,'):reverse()
  return (grouped:gsub('^,', ''))
end

--- 75 -> "1:15", 4000 -> "1:06:40"
---@param seconds number
---@return string
function M.duration(seconds)
  seconds = math.floor(seconds + 0.5)
  local hours, minutes = math.floor(seconds / 3600), math.floor(seconds % 3600 / 60)
  if hours > 0 then
    return string.format('%d:%02d:%02d', hours, minutes, seconds % 60)
  end
  return string.format('%d:%02d', minutes, seconds % 60)
end

---@param ws string
---@return autodoc.WorkProgress
local function entry(ws)
  M.workspaces[ws] = M.workspaces[ws] or { indexing = false, embedding = '' }
  return M.workspaces[ws]
end

---@param prefix string what Neovim shows before the text, e.g. 'autodoc:  54% '
---@return integer the cells the message area's last row leaves the text
local function room(prefix)
  return screen.last_row_cells() - 1 - vim.fn.strdisplaywidth(prefix)
end

--- `text` in the cells the message area's last row gives it after `prefix` (longer raises the hit-enter prompt:
--- autodoc.screen): its last ` · ` parts go first (the time, then the rate), then the middle of what is left.
---@param text string
---@param prefix string what Neovim shows before it, e.g. 'autodoc:  54% '
---@return string
function M.fit(text, prefix)
  local cells = room(prefix)
  local parts = vim.split(text, ' · ', { plain = true })
  while #parts > 1 and vim.fn.strdisplaywidth(table.concat(parts, ' · ')) > cells do
    table.remove(parts)
  end
  return require('autodoc.session.text').shorten_middle(table.concat(parts, ' · '), math.max(cells, 1))
end

--- The first of `texts` (fullest first) that fits the last row after `prefix`, else the last one fitted (M.fit).
---@param texts string[]
---@param prefix string
---@return string
function M.fit_first(texts, prefix)
  for _, text in ipairs(texts) do
    if vim.fn.strdisplaywidth(text) <= room(prefix) then
      return text
    end
  end
  return M.fit(texts[#texts], prefix)
end

--- Show or update the message `work[field]` names; a finished one is kept in :messages, and forgotten here.
---@param work autodoc.WorkProgress
---@param field 'index_id'|'embed_id'
---@param texts string[] the message's forms, fullest first
---@param status 'running'|'success'|'failed'
---@param percent integer|nil
local function show(work, field, texts, status, percent)
  local running = status == 'running'
  if not has_progress_messages then
    vim.api.nvim_echo({ { 'autodoc: ' .. M.fit_first(texts, 'autodoc: ') } }, not running, {})
    return
  end
  local opts = { kind = 'progress', title = 'autodoc', status = status, percent = percent, id = work[field] }
  local shown = M.fit_first(texts, 'autodoc: ' .. (percent and string.format('%3d%% ', percent) or ''))
  local id = vim.api.nvim_echo({ { shown } }, not running, opts)
  work[field] = running and id or nil
end

--- An update of `ws`'s index run or fill: shown now or once a kept message was read (autodoc.screen), and
--- announced as User AutodocProgress either way (with the whole text).
---@param ws string
---@param field 'index_id'|'embed_id'
---@param text string|string[] the text, or its forms from the fullest to the shortest
---@param status 'running'|'success'|'failed'
---@param percent integer|nil
local function echo(ws, field, text, status, percent)
  local work = entry(ws)
  local texts = type(text) == 'table' and text or { text }
  text = texts[1]
  local shown = screen.progress(ws .. ' ' .. field, function() show(work, field, texts, status, percent) end,
    status ~= 'running')
  vim.api.nvim_exec_autocmds('User', { pattern = 'AutodocProgress', modeline = false, data = {
    workspace = ws, work = field == 'index_id' and 'indexing' or 'embedding', text = text, status = status,
    percent = percent, shown = shown,
  } })
end

--- A workspace's index run started.
---@param ws string
function M.indexing(ws)
  local work = entry(ws)
  work.indexing = true
  redraw_statuslines()
  echo(ws, 'index_id', ws .. ': indexing files', 'running', nil)
end

--- The text of an index run's update: "kb: indexing 812/2,000 files · 35/s · 0:34 left".
---@param ws string
---@param run table workspace.status's `indexing`
---@return string
function M.indexing_text(ws, run)
  if run.phase == 'scanning' then
    return string.format('%s: scanning · %s files', ws, M.thousands(run.scanned))
  end
  if run.phase ~= 'writing' then
    return ws .. ': indexing · links and deletions'
  end
  local text = string.format('%s: indexing %s/%s files', ws, M.thousands(run.written), M.thousands(run.to_write))
  if type(run.rate) == 'number' and run.rate > 0 then
    text = text .. string.format(' · %.0f/s', run.rate)
  end
  if type(run.eta_seconds) == 'number' then -- null (vim.NIL) until the rate is known
    text = text .. ' · ' .. M.duration(run.eta_seconds) .. ' left'
  end
  return text
end

--- A workspace.status answer while an index run is under way: update its message in place.
---@param ws string
---@param run table workspace.status's `indexing`
function M.indexing_update(ws, run)
  local work = entry(ws)
  if not work.indexing then
    return
  end
  local percent = run.phase == 'writing' and run.to_write > 0 and math.floor(100 * run.written / run.to_write) or nil
  echo(ws, 'index_id', M.indexing_text(ws, run), 'running', percent)
end

--- A workspace's index run ended with `report` (workspace.index's answer).
---@param ws string
---@param report table|nil nil when it failed
function M.indexed(ws, report)
  local work = entry(ws)
  work.indexing = false
  redraw_statuslines()
  if not report then
    echo(ws, 'index_id', ws .. ': indexing failed', 'failed', nil)
  else
    echo(ws, 'index_id', M.report_texts(ws, report), 'success', 100)
  end
end

--- The text of an index report: "kb: 32 files scanned, 8 added, 2 changed, 1 skipped, 4 files with problems
--- (:AutodocStatus lists them) (0.3 s)"; counts of nothing are left out.
---@param ws string
---@param report table workspace.index's answer
---@return string
function M.report_text(ws, report)
  return M.report_texts(ws, report)[1]
end

--- An index report's text, then shorter forms for a narrow message row: "kb: 32 scanned, 8 added, 4 with
--- problems (:AutodocStatus)", "kb: 8 added, 4 problems (:AutodocStatus)" (the files read left out), and
--- "kb: 8 added, 4 problems".
---@param ws string
---@param report table workspace.index's answer
---@return string[]
function M.report_texts(ws, report)
  local scanned = report.scanned or 0
  local changes = {}
  for _, key in ipairs({ 'added', 'changed', 'renamed', 'deleted', 'skipped' }) do
    if (report[key] or 0) > 0 then
      table.insert(changes, string.format('%s %s', M.thousands(report[key]), key))
    end
  end
  local problems = tonumber(report.files_with_problems) -- the workspace's, as :AutodocStatus counts them
    or require('autodoc.status').files_of(type(report.problems) == 'table' and report.problems or nil)
  local function text(files, problems_said, seconds)
    local parts = vim.list_extend(files and { files } or {}, changes)
    if problems > 0 then
      table.insert(parts, problems_said)
    end
    return string.format('%s: %s%s', ws, table.concat(#parts > 0 and parts or { files }, ', '), seconds or '')
  end
  local count = M.thousands(problems)
  return {
    text(string.format('%s %s scanned', M.thousands(scanned), scanned == 1 and 'file' or 'files'),
      string.format('%s with problems (:AutodocStatus lists them)', problems == 1 and '1 file' or count .. ' files'),
      string.format(' (%.1f s)', report.seconds or 0)),
    text(M.thousands(scanned) .. ' scanned', count .. ' with problems (:AutodocStatus)'),
    text(#changes == 0 and M.thousands(scanned) .. ' scanned' or nil, count .. ' problems (:AutodocStatus)'),
    text(#changes == 0 and M.thousands(scanned) .. ' scanned' or nil, count .. ' problems'),
  }
end

--- The text of an embedding update: "kb: 812/2,000 embedded · 35.2/s · 0:34 left".
---@param ws string
---@param embedder table workspace.status's `embedder`
---@param paused boolean
---@return string
function M.embedding_text(ws, embedder, paused)
  local text = string.format('%s: %s/%s embedded', ws, M.thousands(embedder.embedded), M.thousands(embedder.total))
  if paused then
    return text .. ' · paused'
  end
  local progress = embedder.progress or {}
  if (progress.rate or 0) > 0 then
    text = text .. string.format(' · %.1f/s', progress.rate)
  end
  if rpc.value(progress.eta_seconds) then
    text = text .. ' · ' .. M.duration(progress.eta_seconds) .. ' left'
  end
  return text
end

--- The text of a fill's end: "kb: 2,000/2,000 embedded · 35.1/s · done in 0:57", its pace and time since this
--- editor first saw it fill (the count alone when it saw none of it).
---@param ws string
---@param embedder table workspace.status's `embedder`
---@param seen { at: integer, embedded: integer }|nil
---@return string
function M.filled_text(ws, embedder, seen)
  local text = string.format('%s: %s/%s embedded', ws, M.thousands(embedder.embedded), M.thousands(embedder.total))
  local seconds = seen and (vim.uv.hrtime() - seen.at) / 1e9 or 0
  local filled = seen and embedder.embedded - seen.embedded or 0
  if seconds <= 0 or filled <= 0 then
    return text
  end
  return text .. string.format(' · %.1f/s · done in %s', filled / seconds, M.duration(seconds))
end

--- A workspace.status answer while (or once) vectors fill: update the message and the status line.
---@param ws string
---@param status table workspace.status's answer
function M.embedding(ws, status)
  local embedder = status.embedder
  if not rpc.value(embedder) then
    return
  end
  local work = entry(ws)
  local filling = status.semantic == 'partial' or status.semantic == 'switching'
  if filling and embedder.total == 0 then
    return -- the model is being probed: nothing counted yet
  elseif filling then
    local percent = embedder.total > 0 and math.floor(100 * embedder.embedded / embedder.total) or 0
    work.embedding = string.format('%s/%s embedded%s', M.thousands(embedder.embedded),
      M.thousands(embedder.total), status.embedding_paused and ' (paused)' or '')
    echo(ws, 'embed_id', M.embedding_text(ws, embedder, status.embedding_paused), 'running', percent)
    redraw_statuslines()
  elseif work.embedding ~= '' then -- it was filling: say it is done, once
    echo(ws, 'embed_id', M.filled_text(ws, embedder, work.fill_seen), 'success', 100)
  end
  work.fill_seen = filling and (work.fill_seen or { at = vim.uv.hrtime(), embedded = embedder.embedded }) or nil
  if not filling and work.embedding ~= '' then
    work.embedding = ''
    redraw_statuslines()
  end
end

--- For statuslines: what is running, e.g. "kb: 812/2,000 embedded"; '' when idle.
---@return string
function M.line()
  local parts = {}
  for ws, work in pairs(M.workspaces) do
    local doing = vim.tbl_filter(function(part) return part ~= '' end,
      { work.indexing and 'indexing' or '', work.embedding })
    if #doing > 0 then
      table.insert(parts, ws .. ': ' .. table.concat(doing, ', '))
    end
  end
  table.sort(parts)
  return table.concat(parts, ', ')
end

return M
