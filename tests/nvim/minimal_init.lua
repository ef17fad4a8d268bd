-- Minimal init for tests: this checkout on the runtimepath, the test's Python as the host,
-- and the workspace named by AUTODOC_TEST_KB.
vim.opt.runtimepath:prepend(vim.env.AUTODOC_ROOT)
vim.g.python3_host_prog = vim.env.AUTODOC_PYTHON
vim.opt.swapfile = false
vim.opt.shadafile = 'NONE'
vim.cmd('runtime plugin/autodoc.lua')
if vim.env.AUTODOC_TEST_KB and vim.env.AUTODOC_TEST_KB ~= '' then
  require('autodoc').setup({
    db = vim.env.AUTODOC_DB,
    workspaces = { { name = 'kb', path = vim.env.AUTODOC_TEST_KB } },
  })
end
