--- What the editor knows of the engine: the configuration, its phase, the workspaces it holds and the index
--- runs under way. The other modules read and change it; `require('autodoc')` shows it to users and tests.
local config = require('autodoc.config')
local screen = require('autodoc.screen')

local M = {}

---@type autodoc.Config
M.config = vim.deepcopy(config.defaults)
M.workspaces = {} ---@type table<string, string> name -> root, as the engine knows them
---@type 'idle'|'starting'|'ready'|'failed'
M.phase = 'idle'
M.error = nil ---@type string|nil why the engine could not open
M.indexing = {} ---@type table<string, integer> index runs asked for and not answered yet, per workspace

--- Say `message` as autodoc's (most come prefixed from rpc.describe; every one says whose it is). Errors,
--- warnings and, with `opts.keep`, answers to commands stay on the screen until the next key (autodoc.screen).
---@param message string
---@param level integer|nil vim.log.levels.*, INFO by default
---@param opts { keep: boolean }|nil
function M.notify(message, level, opts)
  if not message:find('^autodoc: ') then -- with its space: a message may begin with a name such as autodoc-kb
    message = 'autodoc: ' .. message
  end
  level = level or vim.log.levels.INFO
  screen.say(message, level, level >= vim.log.levels.WARN or (opts or {}).keep == true)
end

return M
