--- require('autodoc').picker_state(): what a search session shows, as a copy (:help autodoc-picker-state).
local M = {}

---@param session autodoc.Session
---@return table
function M.of(session)
  local asked = session.answer and session.answer.stages or {}
  local previewed = session.previewed
  return vim.deepcopy({ source = session.source, workspace = session:single_workspace(),
    scope = require('autodoc.session.scope').searched(session.searched or session.scope), root = session.root,
    root_problem = session.root_problem, prompt = session.prompt, query = session.query,
    stages = session.stages, available = session.available, level = session.level, tick = session.tick,
    performed = asked.performed or {}, requested = asked.requested, hits = session:hits(),
    notice = session.notice, message = session.message, title = session:title(), toggles = session:toggles(),
    status = session:status(), closed = session.closed,
    related = session.related and { path = session.related.path, line = session.related.line } or nil,
    previewed = previewed and { path = previewed.hit.path, line = previewed.hit.line_start, buf = previewed.buf,
      win = previewed.win } or nil })
end

return M
