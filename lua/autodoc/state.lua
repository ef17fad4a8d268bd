--- What the editor knows of the engine: the configuration, its phase, the workspaces it holds and the index
--- runs under way. The other modules read and change it; `require('autodoc')` shows it to users and tests.
local config = require('autodoc.config')

local M = {}

---@type autodoc.Config
M.config = vim.deepcopy(config.defaults)
M.workspaces = {} ---@type table<string, string> name -> root, as the engine knows them
---@type 'idle'|'starting'|'ready'|'failed'
M.phase = 'idle'
M.error = nil ---@type string|nil why the engine could not open
M.indexing = {} ---@type table<string, integer> index runs asked for and not answered yet, per workspace

--- Say `message` as autodoc's (most come prefixed from rpc.describe; every one says whose it is).
---@param message string
---@param level integer|nil vim.log.levels.*, INFO by default
function M.notify(message, level)
  if not message:find('^autodoc') then
    message = 'autodoc: ' .. message
  end
  vim.notify(message, level or vim.log.levels.INFO, { title = 'autodoc' })
end

return M
