-- AutoDoc: register the Python remote plugin in a host of its own (no :UpdateRemotePlugins, no
-- g:python3_host_prog needed: lua/autodoc/host.lua picks the interpreter) and define the commands.
-- Nothing starts here: the host starts on the first request (setup() or a command).
if vim.g.loaded_autodoc or vim.fn.has('nvim-0.10') == 0 then
  return
end
vim.g.loaded_autodoc = 1

require('autodoc.host').register()
require('autodoc.highlights').setup()

-- `:help autodoc` needs doc/tags: plugin managers make it, a plain clone or a runtimepath entry has none (and
-- after a `git pull` that adds help, an old one lacks the new tags).
local doc = require('autodoc.host').root .. '/doc'
local help, tags = vim.uv.fs_stat(doc .. '/autodoc.txt'), vim.uv.fs_stat(doc .. '/tags')
if help and (not tags or tags.mtime.sec < help.mtime.sec) then
  pcall(vim.cmd.helptags, vim.fn.fnameescape(doc)) -- a read-only install stays as it is
end

local function command(name, fn, opts)
  vim.api.nvim_create_user_command(name, fn, opts)
end

--- The workspace names the editor knows of: the engine's, and setup()'s before the engine is open.
local function known_workspaces()
  local autodoc = require('autodoc')
  local names = vim.tbl_keys(autodoc.workspaces)
  for _, ws in ipairs((autodoc.config or {}).workspaces or {}) do
    if not autodoc.workspaces[ws.name] then
      table.insert(names, ws.name)
    end
  end
  return names
end

--- `@a @b rest` (or `@a,b`, `@*`): the workspaces to search, as typed, and the query. Words naming a workspace
--- that is none stay in the query as typed: the prompt shows them, the list says which name is none (:help
--- autodoc-scope-editor) and the user edits it there; `unknown` holds those words.
---@return string|nil scope, string query, string|nil unknown
local function scope_and_query(args)
  local words, rest = {}, args
  while rest:match('^@') do
    local word, after = rest:match('^(@%S*)%s*(.*)$')
    table.insert(words, word)
    rest = after
  end
  if #words == 0 then
    return nil, args
  end
  local scope = table.concat(words, ' ')
  if select(2, require('autodoc.session.scope').resolve(scope, known_workspaces())) then
    return nil, args, scope
  end
  return scope, rest
end

--- Once the engine is open, say (kept until the next key) why the typed words `unknown` name no workspace.
---@param unknown string|nil
local function say_unknown(unknown)
  if not unknown then
    return
  end
  require('autodoc').when_ready(function()
    local scope = require('autodoc.session.scope')
    local problem = select(2, scope.resolve(unknown, scope.names()))
    if problem then
      vim.schedule(function() require('autodoc.state').notify(problem, vim.log.levels.WARN) end)
    end
  end)
end

--- `@name` completions of the word being typed (after a comma too: `@kb,r`), and `@*`.
local function complete_workspace(lead)
  local head, typed = lead:match('^(@[^%s]-,?)([^,%s]*)$')
  if not head then
    return {}
  end
  local names = vim.tbl_keys(require('autodoc').workspaces)
  table.sort(names)
  if head == '@' then
    table.insert(names, '*')
  end
  local matching = vim.tbl_filter(function(name) return vim.startswith(name, typed) end, names)
  return vim.tbl_map(function(name) return head .. name end, matching)
end

command('AutodocSearch', function(cmd)
  local scope, query, unknown = scope_and_query(cmd.args)
  require('autodoc.picker').open({ query = query, scope = scope })
  say_unknown(unknown)
end, { nargs = '?', complete = complete_workspace,
  desc = 'AutoDoc: search the knowledge base ([@workspace ...] query; every workspace by default)' })

-- The same search in the pickers people already use (each only when installed; none is a dependency).
local function picker_sources()
  local sources = vim.tbl_filter(function(view) return view ~= 'builtin' end,
    vim.tbl_keys(require('autodoc.pick').VIEWS))
  table.sort(sources)
  return sources
end

command('AutodocPick', function(cmd)
  local name, rest = cmd.args:match('^(%S+)%s*(.*)$')
  if not vim.tbl_contains(picker_sources(), name) then
    require('autodoc.state').notify(':AutodocPick takes one of ' .. table.concat(picker_sources(), ', ')
      .. ', then related, or [@workspace] [query]', vim.log.levels.ERROR)
    return
  end
  if not pcall(require, name) then
    require('autodoc.state').notify(name .. ' is not installed', vim.log.levels.ERROR)
    return
  end
  if rest == 'related' then
    require('autodoc.related').pick(require('autodoc.pick').VIEWS[name]) -- those of the section under the cursor
  else
    local scope, query, unknown = scope_and_query(rest) -- as :AutodocSearch takes them
    require('autodoc').pick({ view = name, scope = scope, query = query })
    say_unknown(unknown)
  end
end, {
  nargs = '+',
  complete = function(lead, line) -- the source, then `related` or a workspace
    local before = #vim.split(line, '%s+', { trimempty = true }) - (lead == '' and 0 or 1)
    local words = before < 2 and picker_sources()
      or before == 2 and vim.list_extend({ 'related' }, complete_workspace('@')) or {}
    return vim.tbl_filter(function(word) return vim.startswith(word, lead) end, words)
  end,
  desc = 'AutoDoc: search ([@workspace] query, or the related sections) in telescope, fzf-lua, snacks or mini.pick',
})

command('AutodocRelated', function()
  require('autodoc.related').open()
end, { desc = 'AutoDoc: the sections related to the one under the cursor, in the picker' })
vim.keymap.set('n', '<Plug>(autodoc-related)', function() require('autodoc.related').open() end,
  { desc = 'AutoDoc: the sections related to the one under the cursor' })

command('AutodocRelatedLive', function()
  require('autodoc.related').live.toggle()
end, { desc = 'AutoDoc: a side list of the sections related to the one under the cursor, following it' })

local function register_mini_pick()
  if type(_G.MiniPick) == 'table' and type(_G.MiniPick.registry) == 'table' then
    _G.MiniPick.registry.autodoc = function() require('autodoc.sources.mini_pick').search() end -- :Pick autodoc
    _G.MiniPick.registry.autodoc_related = function() -- :Pick autodoc_related
      require('autodoc.related').pick('autodoc.sources.mini_pick')
    end
  end
end
if vim.v.vim_did_enter == 1 then
  register_mini_pick() -- loaded lazily (a plugin manager's cmd/keys), after VimEnter
else
  vim.api.nvim_create_autocmd('VimEnter', {
    group = vim.api.nvim_create_augroup('autodoc-sources', { clear = true }),
    once = true,
    callback = register_mini_pick,
  })
end

command('AutodocOpen', function(cmd)
  local scope, query, unknown = scope_and_query(cmd.args) -- as :AutodocSearch takes them
  require('autodoc.picker').open({ mode = 'documents', query = query, scope = scope })
  say_unknown(unknown)
end, { nargs = '?', complete = complete_workspace,
  desc = 'AutoDoc: open a document by title, alias or path ([@workspace ...] text; every workspace by default)' })

command('AutodocWorkspaceAdd', function(cmd)
  if #cmd.fargs == 2 then
    require('autodoc').when_ready(function()
      require('autodoc').add_workspace(cmd.fargs[1], cmd.fargs[2])
    end)
  else
    require('autodoc.picker').open({ mode = 'folders', query = cmd.fargs[1] })
  end
end, { nargs = '*', complete = 'dir', desc = 'AutoDoc: add a workspace (a folder picker, or NAME PATH)' })

command('AutodocWorkspaceRemove', function(cmd)
  require('autodoc').when_ready(function()
    require('autodoc').remove_workspace(cmd.args, cmd.bang)
  end)
end, {
  nargs = 1,
  bang = true,
  complete = function(lead)
    return vim.tbl_map(function(name) return name:sub(2) end, complete_workspace('@' .. lead))
  end,
  desc = 'AutoDoc: remove a workspace from the index (! also one setup() configures)',
})

command('AutodocIndex', function(cmd)
  require('autodoc').when_ready(function()
    require('autodoc').index(cmd.args ~= '' and cmd.args or nil)
  end)
end, { nargs = '?', desc = 'AutoDoc: re-index a workspace (all when none is named)' })

command('AutodocStatus', function(cmd)
  require('autodoc').when_ready(function()
    require('autodoc').show_status(cmd.args ~= '' and cmd.args or nil)
  end)
end, { nargs = '?', desc = 'AutoDoc: show a workspace status' })

command('AutodocEmbed', function(cmd)
  require('autodoc').when_ready(function()
    require('autodoc').embedding(cmd.args)
  end)
end, {
  nargs = 1,
  complete = function() return { 'pause', 'resume' } end,
  desc = 'AutoDoc: pause or resume the background embedding',
})

command('AutodocInstall', function()
  require('autodoc.install').run()
end, { desc = "AutoDoc: build the plugin's Python environment (make install)" })

-- Every file, Markdown picked by autodoc.markdown_file: autocmd patterns are case-sensitive, and `NOTES.MD` is
-- Markdown to the indexer.
vim.api.nvim_create_autocmd('BufWritePost', {
  group = vim.api.nvim_create_augroup('autodoc-save', { clear = true }),
  callback = function(event)
    if require('autodoc.markdown_file').is_markdown(event.match) then
      require('autodoc').on_save(event.match)
    end
  end,
})

local open_buffers = vim.api.nvim_create_augroup('autodoc-open-buffers', { clear = true })
-- Every buffer, as on save above.
vim.api.nvim_create_autocmd({ 'BufEnter', 'BufWinEnter' }, {
  group = open_buffers,
  desc = 'AutoDoc: while a workspace fills, embed the documents open in buffers first',
  callback = function(event)
    require('autodoc.focus').entered(event.buf)
  end,
})
vim.api.nvim_create_autocmd('BufWipeout', {
  group = open_buffers,
  desc = 'AutoDoc: forget a wiped buffer',
  callback = function(event)
    require('autodoc.focus').wiped(event.buf)
  end,
})
vim.api.nvim_create_autocmd('User', {
  group = open_buffers,
  pattern = { 'AutodocIndexed', 'AutodocSemanticReady' },
  callback = function(event)
    require('autodoc.focus').semantic_changed(event.match, event.data)
  end,
})

vim.api.nvim_create_autocmd('FocusGained', {
  group = vim.api.nvim_create_augroup('autodoc-focus', { clear = true }),
  desc = 'AutoDoc: look for files changed while Neovim was in the background',
  callback = function()
    require('autodoc').scan()
  end,
})

vim.keymap.set('n', '<Plug>(autodoc-search)', function()
  require('autodoc.picker').open({})
end, { desc = 'AutoDoc: search' })

vim.keymap.set('n', '<Plug>(autodoc-search-word)', function()
  require('autodoc.picker').open({ query = vim.fn.expand('<cword>') })
end, { desc = 'AutoDoc: search the word under the cursor' })

vim.keymap.set('x', '<Plug>(autodoc-search-selection)', function()
  local lines = vim.fn.getregion(vim.fn.getpos('v'), vim.fn.getpos('.'), { type = vim.fn.mode() })
  vim.api.nvim_feedkeys(vim.keycode('<Esc>'), 'nx', false)
  require('autodoc.picker').open({ query = vim.trim(table.concat(lines, ' ')) })
end, { desc = 'AutoDoc: search the selected text' })
