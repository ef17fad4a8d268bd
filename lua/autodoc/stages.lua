--- Which stages the picker asks for: kept across openings and restarts in
--- stdpath('state')/autodoc/stages.json. One of lexical and semantic always stays on.
local M = {}

local NAMES = { 'lexical', 'semantic', 'rerank' }
M.names = NAMES
M.labels = { lexical = 'Lexical', semantic = 'Semantic', rerank = 'Rerank' }

local function file()
  return vim.fn.stdpath('state') .. '/autodoc/stages.json'
end

function M.load()
  local state = { lexical = true, semantic = true, rerank = true }
  local ok, lines = pcall(vim.fn.readfile, file())
  if ok and #lines > 0 then
    local decoded_ok, saved = pcall(vim.json.decode, table.concat(lines, '\n'))
    if decoded_ok and type(saved) == 'table' then
      for _, name in ipairs(NAMES) do
        if type(saved[name]) == 'boolean' then
          state[name] = saved[name]
        end
      end
    end
  end
  if not state.lexical and not state.semantic then
    state.lexical = true
  end
  return state
end

function M.save(state)
  vim.fn.mkdir(vim.fn.fnamemodify(file(), ':h'), 'p')
  vim.fn.writefile({ vim.json.encode(state) }, file())
end

--- Flip one stage; returns false (and changes nothing) when that would leave no retriever.
function M.toggle(state, name)
  local next_state = vim.deepcopy(state)
  next_state[name] = not next_state[name]
  if not next_state.lexical and not next_state.semantic then
    return false
  end
  state[name] = next_state[name]
  M.save(state)
  return true
end

--- The stages to request, given what is available (a hidden stage keeps its saved value).
function M.requested(state, available)
  local list = {}
  for _, name in ipairs(NAMES) do
    if state[name] and available[name] ~= false then
      table.insert(list, name)
    end
  end
  if #list == 0 or (not vim.tbl_contains(list, 'lexical') and not vim.tbl_contains(list, 'semantic')) then
    table.insert(list, 1, 'lexical')
  end
  return list
end

return M
