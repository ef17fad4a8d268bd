--- :AutodocInstall: build the plugin's own Python environment (`make install` in the plugin folder,
--- which creates .venv: nothing goes into the system Python) as a job, its output shown as progress.
local host = require('autodoc.host')

local M = {}

---@class autodoc.Progress
---@field id integer|string|nil the message being updated in place
---@field title string

--- Show or update a progress message in place (Neovim 0.12 progress messages; a plain echo before).
---@param progress autodoc.Progress
---@param text string
---@param status 'running'|'success'|'failed'
---@param percent integer|nil
function M.progress(progress, text, status, percent)
  local ok, id = pcall(vim.api.nvim_echo, { { text } }, status ~= 'running', {
    id = progress.id, kind = 'progress', title = progress.title, status = status, percent = percent,
  })
  if ok then
    progress.id = id
  else
    vim.api.nvim_echo({ { progress.title .. ': ' .. text } }, status ~= 'running', {})
  end
end

--- Run `make install` in the plugin's folder; on success the host is tried again on the next request.
---@param on_exit fun(code: integer)|nil
function M.run(on_exit)
  local progress = { title = 'autodoc install' }
  if vim.fn.executable('make') ~= 1 then
    M.progress(progress, 'make is not installed; run `python3 -m venv .venv && .venv/bin/pip install -e .` in '
      .. host.root, 'failed')
    return
  end
  M.progress(progress, 'make install in ' .. host.root, 'running', 0)
  local output = {}
  local function on_output(_, data)
    if not data then
      return
    end
    for _, line in ipairs(vim.split(data, '\n', { trimempty = true })) do
      table.insert(output, line)
      vim.schedule(function() M.progress(progress, line, 'running') end)
    end
  end
  vim.system({ 'make', 'install' }, { cwd = host.root, text = true, stdout = on_output, stderr = on_output },
    vim.schedule_wrap(function(result)
      if result.code == 0 then
        M.progress(progress, 'done: ' .. host.root .. '/.venv', 'success', 100)
        host.retry()
      else
        M.progress(progress, 'failed (' .. result.code .. '): ' .. (output[#output] or ''), 'failed')
      end
      if on_exit then
        on_exit(result.code)
      end
    end))
end

return M
