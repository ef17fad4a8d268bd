--- Related sections: what else the knowledge base says about the section under the cursor (search.related).
--- :AutodocRelated opens the picker on them (preview, stage toggles, jump, splits, quickfix); :AutodocPick
--- {source} related (and :Telescope autodoc related) the same in the other pickers; :AutodocRelatedLive keeps
--- a side list that follows the cursor from section to section. A picker in related mode is a search session
--- (autodoc.session) given the section: it asks search.related afresh for each prompt and stage set.
local autodoc = require('autodoc')

local M = {}

---@class autodoc.RelatedSource
---@field workspace string
---@field root string
---@field path string relative to the root
---@field line integer

--- The workspace holding `buf`'s file (the deepest root, for nested workspaces), and the file's path in it.
---@param buf integer
---@param line integer
---@return autodoc.RelatedSource|nil, string|nil why not
function M.here(buf, line)
  local name = vim.api.nvim_buf_get_name(buf)
  if name == '' then
    return nil, 'autodoc: this buffer has no file, so it has no related sections'
  end
  local file = vim.uv.fs_realpath(name) or vim.fs.normalize(name)
  local workspace = require('autodoc.session.scope').holding(file)
  if not workspace then
    return nil, string.format('autodoc: %s is in no workspace (:AutodocWorkspaceAdd adds its folder)',
      vim.fn.fnamemodify(name, ':~:.'))
  end
  local root = autodoc.workspaces[workspace]
  return { workspace = workspace, root = root, path = file:sub(#root + 2), line = line }
end

--- The section under the cursor, or nil after saying why there is none.
---@return autodoc.RelatedSource|nil
local function under_cursor()
  local source, why = M.here(vim.api.nvim_get_current_buf(), vim.api.nvim_win_get_cursor(0)[1])
  if not source then
    autodoc.state.notify(why, vim.log.levels.WARN)
  end
  return source
end

-- -- the built-in picker ------------------------------------------------------------------------

--- :AutodocRelated, <Plug>(autodoc-related): the picker on the sections related to the one under the cursor.
function M.open()
  autodoc.when_ready(function()
    local source = under_cursor()
    if source then
      require('autodoc.picker').open({ mode = 'related', related = source })
    end
  end)
end

-- -- the other pickers (telescope, fzf-lua, snacks, mini.pick) ----------------------------------------

--- :AutodocPick {source} related, :Telescope autodoc related: source `module` on the section under the cursor
--- (its `opts.related`, which every source hands to its session).
---@param module string e.g. 'autodoc.sources.telescope'
---@param opts table|nil the picker's own options
function M.pick(module, opts)
  autodoc.when_ready(function()
    local source = under_cursor()
    if source then
      require(module).search(vim.tbl_extend('force', opts or {}, { related = source }))
    end
  end)
end

-- -- the live side list -------------------------------------------------------------------------------

M.live = require('autodoc.related_live')

return M
