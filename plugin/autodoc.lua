-- AutoDoc: register the Python remote plugin in a host of its own (no :UpdateRemotePlugins
-- needed, as Neovim does for its legacy providers) and define the user commands.
if vim.g.loaded_autodoc or vim.fn.has('nvim-0.10') == 0 then
  return
end
vim.g.loaded_autodoc = 1

local root = vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h:h')
local plugin_path = root .. '/rplugin/python3/autodoc'
local ok, err = pcall(function()
  vim.fn['remote#host#RegisterClone']('autodoc', 'python3')
  vim.fn['remote#host#RegisterPlugin']('autodoc', plugin_path, {
    { type = 'function', name = 'AutodocRequest', sync = 0, opts = vim.empty_dict() },
  })
end)
if not ok and not tostring(err):find('already registered', 1, true) then
  vim.g.autodoc_registration_error = tostring(err)
end

vim.api.nvim_create_user_command('AutodocSearch', function(cmd)
  require('autodoc.picker').open({ query = cmd.args })
end, { nargs = '?', desc = 'AutoDoc: search the knowledge base' })

vim.api.nvim_create_user_command('AutodocOpen', function(cmd)
  require('autodoc.picker').open({ mode = 'documents', query = cmd.args })
end, { nargs = '?', desc = 'AutoDoc: open a document by title, alias or path' })

vim.api.nvim_create_user_command('AutodocWorkspaceAdd', function(cmd)
  if #cmd.fargs == 2 then
    require('autodoc').add_workspace(cmd.fargs[1], cmd.fargs[2])
  else
    require('autodoc.picker').open({ mode = 'folders', query = cmd.fargs[1] })
  end
end, { nargs = '*', complete = 'dir', desc = 'AutoDoc: add a workspace (a folder picker, or NAME PATH)' })

vim.api.nvim_create_user_command('AutodocIndex', function(cmd)
  require('autodoc').index(cmd.args ~= '' and cmd.args or nil)
end, { nargs = '?', desc = 'AutoDoc: re-index a workspace (all when none is named)' })

vim.api.nvim_create_user_command('AutodocStatus', function(cmd)
  require('autodoc').status(cmd.args ~= '' and cmd.args or nil)
end, { nargs = '?', desc = 'AutoDoc: show a workspace status' })

vim.keymap.set('n', '<Plug>(autodoc-search)', function()
  require('autodoc.picker').open({})
end, { desc = 'AutoDoc: search' })
