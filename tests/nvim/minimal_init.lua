-- Minimal init for tests: this checkout on the runtimepath, the test's Python as the host,
-- and the workspace named by AUTODOC_TEST_KB.
vim.opt.runtimepath:prepend(vim.env.AUTODOC_ROOT)
vim.g.python3_host_prog = vim.env.AUTODOC_PYTHON
vim.opt.swapfile = false
vim.opt.shadafile = 'NONE'
vim.cmd('runtime plugin/autodoc.lua')
-- Tests wait for index runs to end (e.g. the start-up index, before they edit a file).
_G.autodoc_indexed = 0
vim.api.nvim_create_autocmd('User', {
  pattern = 'AutodocIndexed',
  callback = function()
    _G.autodoc_indexed = _G.autodoc_indexed + 1
  end,
})
-- ... and for the vectors to be complete (an open picker searches again when they are).
_G.autodoc_semantic_ready = 0
vim.api.nvim_create_autocmd('User', {
  pattern = 'AutodocSemanticReady',
  callback = function()
    _G.autodoc_semantic_ready = _G.autodoc_semantic_ready + 1
  end,
})
if vim.env.AUTODOC_TEST_KB and vim.env.AUTODOC_TEST_KB ~= '' then
  require('autodoc').setup({
    db = vim.env.AUTODOC_DB,
    workspaces = { { name = 'kb', path = vim.env.AUTODOC_TEST_KB } },
  })
end
