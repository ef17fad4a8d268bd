--- Text broken into rows of a width between words (a message in the picker's list, the float of a message that
--- stays on screen): Neovim's 'linebreak' also breaks after '@', '-' or '/' ('breakat' is global), and cut a
--- workspace's `@zh` in two.
local M = {}

--- `word` cut to rows of at most `width` cells (a path longer than the list).
---@param word string
---@param width integer
---@return string[]
local function cut_word(word, width)
  local rows, row = {}, ''
  for index = 0, vim.fn.strchars(word) - 1 do
    local char = vim.fn.strcharpart(word, index, 1)
    if row ~= '' and vim.fn.strdisplaywidth(row .. char) > width then
      table.insert(rows, row)
      row = ''
    end
    row = row .. char
  end
  table.insert(rows, row)
  return rows
end

--- `text`'s lines, each longer than `width` cells broken between words, a word longer than a row across rows (the
--- list does not wrap: its rows are hits, cut to fit); a line that fits stays as it is.
---@param text string
---@param width integer
---@return string[]
function M.between_words(text, width)
  local lines = {}
  for _, line in ipairs(vim.split(text, '\n')) do
    if vim.fn.strdisplaywidth(line) <= width then
      table.insert(lines, line)
    else
      local row = ''
      for word in line:gmatch('%S+') do
        if row ~= '' and vim.fn.strdisplaywidth(row .. ' ' .. word) > width then
          table.insert(lines, row)
          row = ''
        end
        local pieces = cut_word(row == '' and word or row .. ' ' .. word, width)
        vim.list_extend(lines, vim.list_slice(pieces, 1, #pieces - 1))
        row = pieces[#pieces]
      end
      table.insert(lines, row)
    end
  end
  return lines
end

return M
