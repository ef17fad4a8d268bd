--- The hybrid search as an fzf-lua picker (:AutodocPick fzf-lua). A live picker: fzf only selects, each
--- typed query reloads fzf's list from the engine's answer. fzf cannot replace lines a reload already
--- wrote, so when a fuller answer arrives for the query on screen (every stage after lexical), fzf is told
--- to reload again through its --listen HTTP port; the reload then lists the newest answer at once.
local sources = require('autodoc.sources')

local M = {}

---@param session autodoc.SourceSession
---@param write fun(line: string|nil) fzf-lua's writer for one reload; nil closes it
local function write_answer(session, write)
  local answer = session.answer
  session.listed = answer and answer.hits or {}
  if answer and answer.error then
    write('0\t' .. answer.error)
  end
  for index, hit in ipairs(session.listed) do
    write(index .. '\t' .. sources.display(hit))
  end
  write(nil)
end

--- A free TCP port on 127.0.0.1 for fzf's --listen.
---@return integer
local function free_port()
  local probe = assert(vim.uv.new_tcp())
  probe:bind('127.0.0.1', 0)
  local port = probe:getsockname().port
  probe:close()
  return port
end

--- POST `action` to the fzf listening on `port` (answered or refused, the socket is closed).
---@param port integer
---@param action string
local function post(port, action)
  local client = assert(vim.uv.new_tcp())
  local function close()
    if not client:is_closing() then
      client:close()
    end
  end
  client:connect('127.0.0.1', port, function(err)
    if err then
      close()
      return
    end
    client:write(string.format('POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: %d\r\n\r\n%s', #action, action))
    client:read_start(function(read_err, data)
      if read_err or not data then
        close()
      end
    end)
  end)
end

--- `<M-l>` -> `alt-l`, `<C-x>` -> `ctrl-x` (nil for keys fzf cannot bind).
---@param key string
---@return string|nil
function M.fzf_key(key)
  local modifier, rest = key:match('^<([MmAaCc])%-(.+)>$')
  if not modifier then
    return nil
  end
  return (modifier:lower() == 'c' and 'ctrl-' or 'alt-') .. rest:lower()
end

---@param session autodoc.SourceSession
---@return table<string, table> fzf-lua actions flipping the stages
local function stage_actions(session)
  local actions = {}
  sources.each_stage_key(session, function(_, key, flip)
    local fzf_key = M.fzf_key(key)
    if fzf_key then
      actions[fzf_key] = { fn = flip, exec_silent = true }
    end
  end)
  return actions
end

---@param session autodoc.SourceSession
---@return table a fzf-lua builtin previewer class showing the hit's section
local function previewer(session)
  local base = require('fzf-lua.previewer.builtin').base
  local Section = base:extend()
  function Section:new(o, opts, fzf_win)
    Section.super.new(self, o, opts, fzf_win)
    setmetatable(self, Section)
    return self
  end
  function Section:populate_preview_buf(entry)
    local hit = (session.listed or {})[tonumber(entry:match('^(%d+)\t'))]
    if not hit then
      return
    end
    local buf = self:get_tmp_buffer()
    vim.api.nvim_buf_set_lines(buf, 0, -1, false, sources.preview_lines(session, hit))
    vim.bo[buf].filetype = 'markdown'
    self:set_preview_buf(buf)
    sources.mark_section(session, hit, buf, self.win.preview_winid)
  end
  return Section
end

---@param session autodoc.SourceSession
---@param opts table fzf-lua options
local function open(session, opts)
  local port = free_port()
  local waiting ---@type { prompt: string, write: fun(line: string|nil) }|nil
  local reload_command
  M.session = session
  session.on_update = function()
    if waiting and waiting.prompt == session.prompt then
      local write = waiting.write
      waiting = nil
      write_answer(session, write)
    elseif reload_command then
      post(port, 'reload:' .. reload_command)
    end
  end
  local contents = function(args) -- fzf-lua passes fzf's {q} as args[1]
    return function(write)
      local query = (type(args) == 'table' and args[1] or args) or ''
      sources.query(session, query)
      if session.prompt == query and (session.answer or query:match('^%s*$')) then
        write_answer(session, write)
      else
        waiting = { prompt = query, write = write }
      end
    end
  end
  local actions = vim.tbl_extend('force', stage_actions(session), {
    default = function(selected)
      local hit = (session.listed or {})[tonumber((selected[1] or ''):match('^(%d+)\t'))]
      if hit then
        sources.jump(session, hit)
      end
    end,
  })
  local _, command = require('fzf-lua').fzf_live(contents, vim.tbl_deep_extend('force', {
    prompt = 'AutoDoc · ' .. session.workspace .. '> ',
    exec_empty_query = true,
    previewer = previewer(session),
    actions = actions,
    fzf_opts = { ['--listen'] = port, ['--delimiter'] = '\t', ['--with-nth'] = '2..' },
  }, opts))
  reload_command = command
end

--- Open the picker (fzf-lua and the fzf binary must be installed).
---@param opts table|nil fzf-lua options, merged over ours
function M.search(opts)
  sources.start('fzf-lua', function() end, function(session) open(session, opts or {}) end)
end

return M
