-- Minimal init for tests: this checkout on the runtimepath, the test's Python as the host,
-- and the workspace named by AUTODOC_TEST_KB.
vim.opt.runtimepath:prepend(vim.env.AUTODOC_ROOT)
vim.g.python3_host_prog = vim.env.AUTODOC_PYTHON
vim.opt.swapfile = false
vim.opt.shadafile = 'NONE'
vim.cmd('runtime plugin/autodoc.lua')
dofile(vim.env.AUTODOC_ROOT .. '/tests/nvim/requests.lua')
-- Tests wait for events by counting them: index runs that ended (e.g. the start-up index, before they edit a
-- file) and vectors that became complete (an open picker searches again when they are).
local function count(event, counter)
  _G[counter] = 0
  vim.api.nvim_create_autocmd('User', {
    pattern = event,
    callback = function()
      _G[counter] = _G[counter] + 1
    end,
  })
end
count('AutodocIndexed', 'autodoc_indexed')
count('AutodocSemanticReady', 'autodoc_semantic_ready')
if vim.env.AUTODOC_TEST_KB and vim.env.AUTODOC_TEST_KB ~= '' then
  require('autodoc').setup({
    db = vim.env.AUTODOC_DB,
    workspaces = { { name = 'kb', path = vim.env.AUTODOC_TEST_KB } },
  })
end
