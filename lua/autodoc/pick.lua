--- require('autodoc').pick(): open a search in any of the five views, for users and other plugins (a chat
--- plugin's slash command lists hits and takes the chosen ones).
local M = {}

M.VIEWS = {
  builtin = 'autodoc.picker',
  telescope = 'autodoc.sources.telescope',
  ['fzf-lua'] = 'autodoc.sources.fzf_lua',
  snacks = 'autodoc.sources.snacks',
  ['mini.pick'] = 'autodoc.sources.mini_pick',
}

---@class autodoc.PickOptions
---@field view string|nil 'builtin' (default), 'telescope', 'fzf-lua', 'snacks' or 'mini.pick'
---@field query string|nil pre-fills the prompt
---@field workspace string|nil the workspace searched when the prompt names none (`@name`)
---@field scope string|string[]|nil the workspaces searched when the prompt names none: a name, a list of names,
---   '*' (every one), or '@a @b' as typed; default: setup's scope (:help autodoc-scope)
---@field on_choose fun(hits: autodoc.Hit[], session: autodoc.Session)|nil the chosen hits (the marked ones,
---   else the one under the cursor; the built-in picker chooses one), in place of opening the first.
---   A hit has path (relative to session.root), line_start, line_end, breadcrumb, relevance, via.

--- Open a search picker.
---@param opts autodoc.PickOptions|nil
function M.open(opts)
  opts = opts or {}
  local view = opts.view or 'builtin'
  local module = M.VIEWS[view]
  if not module then
    require('autodoc.state').notify(string.format("no picker view '%s' (builtin, telescope, fzf-lua, snacks, mini.pick)",
      tostring(view)), vim.log.levels.ERROR)
    return
  end
  if view == 'builtin' then
    require(module).open({ query = opts.query, workspace = opts.workspace, scope = opts.scope,
      on_choose = opts.on_choose })
  else
    require(module).search({ query = opts.query, workspace = opts.workspace, scope = opts.scope,
      on_choose = opts.on_choose })
  end
end

return M
