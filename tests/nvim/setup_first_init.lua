-- A new user's init.lua: the plugin on the runtimepath, setup() first (before plugin/ is sourced),
-- a mapping, and no g:python3_host_prog. The test's Python comes through g:autodoc_python.
vim.opt.runtimepath:prepend(vim.env.AUTODOC_ROOT)
vim.opt.swapfile = false
vim.opt.shadafile = 'NONE'
vim.g.autodoc_python = vim.env.AUTODOC_PYTHON
local workspaces = { { name = 'kb', path = vim.env.AUTODOC_TEST_KB } }
if vim.env.AUTODOC_TEST_RFCS then -- a second workspace, for a search of every workspace
  table.insert(workspaces, { name = 'rfcs', path = vim.env.AUTODOC_TEST_RFCS })
end
require('autodoc').setup({ db = vim.env.AUTODOC_DB, workspaces = workspaces })
vim.keymap.set('n', '<leader>/', '<Plug>(autodoc-search)')
