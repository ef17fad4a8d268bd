-- `make run`: this checkout as the plugin (its .venv runs the Python host, found by itself),
-- and the bundled knowledge base (doc/kb) as workspace "autodoc-kb". Opens the picker.
local root = vim.env.AUTODOC_ROOT
vim.opt.runtimepath:prepend(root)
vim.cmd('runtime plugin/autodoc.lua')
require('autodoc').setup({
  db = root .. '/.run/autodoc.db',
  workspaces = { { name = 'autodoc-kb', path = root .. '/doc/kb' } },
})
vim.keymap.set('n', '<leader>/', '<Plug>(autodoc-search)')
vim.cmd('edit ' .. vim.fn.fnameescape(root .. '/doc/kb/README.md'))
vim.schedule(function()
  vim.cmd('AutodocSearch why did we pick an embedded relational store')
end)
