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

---@class autodoc.PickerState
---@field mode autodoc.PickerMode
---@field workspace string|nil the workspace the picker was opened on, if one
---@field asked_scope string|string[]|nil the scope it was opened with (read once the engine is open)
---@field opened_from string the file of the buffer it was opened from (setup's scope 'current')
---@field scope autodoc.Scope|nil the documents list's scope when the prompt names none (a search's: its session's)
---@field searched autodoc.Scope|nil what the documents list's newest ask covered
---@field root string that workspace's root, '' until known
---@field origin_win integer the window to return to
---@field session autodoc.Session|nil a search's (modes 'search' and 'related'): workspace, stages, answers
---@field on_choose fun(hits: autodoc.Hit[], session: autodoc.Session)|nil
---@field drawn autodoc.Answer|nil the session's answer the list shows
---@field hits autodoc.Hit[]
---@field answer autodoc.Answer|nil the answer shown
---@field words string[]|nil query words marked in the preview
---@field message string|nil shown in place of hits (an error, or why nothing is searched)
---@field notice string|nil a warning in the list's footer, until the next keystroke
---@field query string|nil
---@field moved boolean|nil the user moved the selection since the query changed
---@field seq integer the documents and folders lists' asks; an answer to an older one is dropped
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
