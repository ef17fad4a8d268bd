--- Which stages the picker asks for: kept across openings and restarts in stdpath('state')/autodoc/stages.json.
--- The rule that one stage which finds hits stays on comes from the engine (autodoc.stage_rules, generated).
local rules = require('autodoc.stage_rules')

local M = {}

M.names = rules.names
M.labels = { lexical = 'Lexical', semantic = 'Semantic', rerank = 'Rerank' }

--- What a toggle that would turn the last finder off says.
M.KEEP_A_FINDER = 'autodoc: keep ' .. table.concat(vim.tbl_map(function(name) return M.labels[name] end,
  rules.finders), ' or ') .. ' on: one must find the hits'

--- Is one of the stages that find hits on in `on`?
---@param on table<string, boolean>
---@return boolean
local function finds(on)
  for _, name in ipairs(rules.finders) do
    if on[name] then
      return true
    end
  end
  return false
end

local function file()
  return vim.fn.stdpath('state') .. '/autodoc/stages.json'
end

function M.load()
  local state = { lexical = true, semantic = true, rerank = true }
  local ok, lines = pcall(vim.fn.readfile, file())
  if ok and #lines > 0 then
    local decoded_ok, saved = pcall(vim.json.decode, table.concat(lines, '\n'))
    if decoded_ok and type(saved) == 'table' then
      for _, name in ipairs(M.names) do
        if type(saved[name]) == 'boolean' then
          state[name] = saved[name]
        end
      end
    end
  end
  if not finds(state) then
    state[rules.finders[1]] = true
  end
  return state
end

function M.save(state)
  vim.fn.mkdir(vim.fn.fnamemodify(file(), ':h'), 'p')
  vim.fn.writefile({ vim.json.encode(state) }, file())
end

--- Flip one stage; returns false (and changes nothing) when that would leave no stage that finds hits.
function M.toggle(state, name)
  local flipped = vim.deepcopy(state)
  flipped[name] = not flipped[name]
  if not finds(flipped) then
    return false
  end
  state[name] = flipped[name]
  M.save(state)
  return true
end

--- The stages to request, given what is available (a hidden stage keeps its saved value).
function M.requested(state, available)
  local list, asked = {}, {}
  for _, name in ipairs(M.names) do
    if state[name] and available[name] ~= false then
      table.insert(list, name)
      asked[name] = true
    end
  end
  if not finds(asked) then
    table.insert(list, 1, rules.finders[1])
  end
  return list
end

return M
