--- The picker's types (LuaLS annotations only): hits, answers and the open picker's state.

---@alias autodoc.PickerMode 'search'|'documents'|'folders'|'related'

---@class autodoc.Hit
---@field path string relative to the workspace root (absolute for a folder)
---@field line_start integer
---@field line_end integer
---@field breadcrumb string
---@field relevance number|nil
---@field via string[]|nil the stages that found it
---@field superseded boolean|nil
---@field folder boolean|nil
---@field workspace string|nil its workspace's name (its file: autodoc.session.scope.file)

---@class autodoc.Answer
---@field hits autodoc.Hit[]
---@field semantic string|nil 'ready'|'partial'|'switching'|'off'
---@field rank table|nil { state, model, error }
---@field stages table|nil { requested, performed, skipped }
---@field query table|nil { terms = string[] }
---@field scope table|nil { asked, workspaces = string[] } what the search covered
---@field workspaces table<string, table>|nil per workspace searched: { root, hits, semantic, folder, note }
---@field counted string|nil what its rows are, for its count ('document', 'folder'; nil: 'hit')
---@field more boolean|nil there are more rows than listed (the list stopped at its limit: '30+ documents')

---@class autodoc.PickerState the open picker's windows and what they show; what is listed is its session's
---@field mode autodoc.PickerMode
---@field origin_win integer the window to return to
---@field session autodoc.Session the list's: prompt, scope, stages, answers, message, notice, on_choose
---@field drawn autodoc.Answer|nil the session's answer the list shows (nil while a message is shown)
---@field footer string|nil the notice the list's footer shows
---@field title_rest string|nil what the list's title had no room for (the footer shows it without a notice)
---@field footer_drawn string|nil the footer as drawn (its highlight group and text)
---@field moved boolean|nil the user moved the selection since the query changed
---@field previewed string|nil what the preview shows (render's preview key)
---@field preview_tick integer|nil previews asked so far; of those asked together only the last is drawn
---@field last_keystroke integer|nil
---@field timer autodoc.Later|nil the search that waits for typing to pause
---@field toggle_spans table<string, integer[]>|nil column spans of the checkboxes
---@field prompt_buf integer
---@field prompt_win integer
---@field list_buf integer
---@field list_win integer
---@field toggles_buf integer
---@field toggles_win integer
---@field preview_buf integer
---@field preview_win integer

return {}
