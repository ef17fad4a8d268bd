--- The search session (autodoc.session) as an fzf-lua picker (:AutodocPick fzf-lua). A live picker: fzf only
--- selects, each typed query reloads fzf's list from the session's answer. fzf cannot replace lines a reload
--- already wrote, so when the session changes (a fuller answer, a refusal, another workspace), fzf is told to
--- reload again through its --listen HTTP port; the reload then lists the newest answer at once. The list's
--- first line (an fzf header line) names the workspace, the stages and a refusal; `<Tab>` marks several hits.
local sources = require('autodoc.sources')

local M = {}

---@param session autodoc.Session
---@param write fun(line: string|nil) fzf-lua's writer for one reload; nil closes it
---@param width integer|nil
local function write_answer(session, write, width)
  local title, status = require('autodoc.sources').header(session)
  write('0\t' .. title .. '  ' .. status) -- the header line (--header-lines=1)
  session.listed = {}
  local ansi = require('fzf-lua.utils').ansi_from_hl
  for index, item in ipairs(sources.items(session, width)) do
    session.listed[index] = item.hit
    local label = item.label or ''
    write(index .. '\t' .. (label ~= '' and ansi('AutodocWorkspace', label) .. item.text:sub(#label + 1) or item.text))
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

---@param session autodoc.Session
---@return table<string, table> fzf-lua actions for the session's keys
local function key_actions(session)
  local actions = {}
  sources.each_key(session, function(key, fn)
    local fzf_key = M.fzf_key(key)
    if fzf_key then
      actions[fzf_key] = { fn = fn, exec_silent = true }
    end
  end)
  return actions
end

---@param session autodoc.Session
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

--- The cells a row has: fzf's window, less its pointer, marker and scroll bar, and the builtin preview beside.
---@return integer|nil
local function width()
  local ok, winobj = pcall(function() return require('fzf-lua').utils.fzf_winobj() end)
  local win = ok and winobj and winobj.fzf_winid
  if not win or not vim.api.nvim_win_is_valid(win) then
    return nil
  end
  return vim.api.nvim_win_get_width(win) - 4
end

---@param session autodoc.Session
---@param opts table fzf-lua options
local function open(session, opts)
  local port = free_port()
  local waiting ---@type { prompt: string, write: fun(line: string|nil) }|nil
  local reload_command
  local prompt_title = session:title()
  session.on_update = function()
    if waiting and waiting.prompt == session.prompt and session:answered() then
      local write = waiting.write
      waiting = nil
      write_answer(session, write, width())
    elseif reload_command then
      if session:title() ~= prompt_title then
        prompt_title = session:title()
        post(port, 'change-prompt:' .. prompt_title .. '> ')
      end
      post(port, 'reload:' .. reload_command)
    end
  end
  local contents = function(args) -- fzf-lua passes fzf's {q} as args[1]
    return function(write)
      local query = (type(args) == 'table' and args[1] or args) or ''
      if query ~= session.prompt then
        session:typed()
        session:ask(query)
      end
      if session:answered() then
        write_answer(session, write, width())
      else
        waiting = { prompt = query, write = write }
      end
    end
  end
  local function chosen(selected)
    local hits = {}
    for _, line in ipairs(selected or {}) do
      table.insert(hits, (session.listed or {})[tonumber(line:match('^(%d+)\t'))])
    end
    return hits
  end
  local actions = vim.tbl_extend('force', key_actions(session), {
    default = function(selected) sources.choose(session, chosen(selected)) end,
  })
  local _, command = require('fzf-lua').fzf_live(contents, vim.tbl_deep_extend('force', {
    prompt = prompt_title .. '> ',
    query = session.initial_query,
    exec_empty_query = true,
    previewer = previewer(session),
    actions = actions,
    fzf_opts = { ['--listen'] = port, ['--delimiter'] = '\t', ['--with-nth'] = '2..', ['--header-lines'] = 1,
      ['--multi'] = true },
  }, opts))
  reload_command = command
end

--- Open the picker (fzf-lua and the fzf binary must be installed).
---@param opts table|nil fzf-lua options, merged over ours, and autodoc.SourceOptions (query, workspace, related,
---   on_choose)
function M.search(opts)
  opts = opts or {}
  local own = { query = opts.query, workspace = opts.workspace, scope = opts.scope, related = opts.related,
    on_choose = opts.on_choose }
  local fzf_opts = vim.deepcopy(opts)
  for key in pairs(own) do
    fzf_opts[key] = nil
  end
  sources.start('fzf-lua', own, function(session) open(session, fzf_opts) end)
end

return M
