--- The picker's highlight groups, each a default a user (or a colorscheme) can override:
---   AutodocSelection   the selected hit in the list
---   AutodocSection     the hit's line span in the preview
---   AutodocMatch       the query's words in the preview
---   AutodocSuperseded  a superseded document's hit in the list
---   AutodocNotice      a warning shown in the picker until the next keystroke
---   AutodocWorkspace   a row's workspace label, when a search covers several workspaces
--- Each default links to the first group of its candidates that the colorscheme makes visible both with
--- and without 'termguicolors' (the default colorscheme's CursorLine has gui colours only: with
--- 'notermguicolors' a selection linked to it showed nothing), else to plain reverse video.
local M = {}

local REVERSE = { reverse = true }
---@type table<string, { candidates: string[], fallback: vim.api.keyset.highlight }>
local CANDIDATES = {
  AutodocSelection = { candidates = { 'CursorLine', 'Visual', 'PmenuSel' }, fallback = REVERSE },
  AutodocSection = { candidates = { 'Visual', 'CursorLine', 'PmenuSel' }, fallback = REVERSE },
  AutodocMatch = { candidates = { 'Search', 'IncSearch', 'CurSearch' }, fallback = { bold = true, underline = true } },
  AutodocSuperseded = { candidates = {}, fallback = { link = 'Comment' } }, -- the row also says '(superseded)'
  AutodocNotice = { candidates = { 'WarningMsg', 'ErrorMsg' }, fallback = { bold = true } },
  AutodocWorkspace = { candidates = { 'Directory', 'Identifier', 'Special' }, fallback = { bold = true } },
}
M.groups = vim.tbl_keys(CANDIDATES)
table.sort(M.groups)

---@param attrs table an attribute map of nvim_get_hl
---@return boolean
local function marks_cells(attrs)
  return attrs.reverse or attrs.underline or attrs.undercurl or attrs.standout or attrs.bold or false
end

--- Whether `name` changes how a cell looks in the gui-colour mode and in the terminal-colour mode.
---@param name string
---@return boolean
function M.visible_in_both_modes(name)
  local hl = vim.api.nvim_get_hl(0, { name = name, link = false })
  local gui = hl.bg ~= nil or hl.fg ~= nil or marks_cells(hl)
  local cterm = hl.ctermbg ~= nil or hl.ctermfg ~= nil or marks_cells(hl.cterm or {})
  return gui and cterm
end

--- Define every group that nobody has defined yet (`default`: a user's own definition wins).
function M.define()
  for group, choice in pairs(CANDIDATES) do
    local spec = vim.tbl_extend('force', choice.fallback, { default = true })
    for _, candidate in ipairs(choice.candidates) do
      if M.visible_in_both_modes(candidate) then
        spec = { link = candidate, default = true }
        break
      end
    end
    vim.api.nvim_set_hl(0, group, spec)
  end
end

--- Define the groups now and again after every colorscheme (`:colorscheme` clears them).
function M.setup()
  M.define()
  vim.api.nvim_create_autocmd('ColorScheme', {
    group = vim.api.nvim_create_augroup('autodoc-highlights', { clear = true }),
    callback = M.define,
  })
end

return M
