-- The tests' own count of the requests the editor sends to the host (the product keeps none): how many of each
-- method were sent, and which still wait for their answer (every request is answered: a dropped one as
-- cancelled). Each test init runs this file before setup(); read it with tests.nvim.requests_sent and
-- tests.nvim.outstanding.
local rpc = require('autodoc.rpc')
local host = require('autodoc.host')

local sent, waiting = {}, {}
_G.autodoc_requests = { sent = sent, waiting = waiting }

local notify = host.notify
host.notify = function(args) -- { id, method, params, lane }: a request goes to the host
  sent[args[2]] = (sent[args[2]] or 0) + 1
  waiting[args[1]] = true
  return notify(args)
end

local resolve = rpc._resolve
rpc._resolve = function(id, ...) -- the host answered request `id`
  waiting[id] = nil
  return resolve(id, ...)
end

local fail_pending = rpc.fail_pending
rpc.fail_pending = function(...) -- the host exited: every request waiting failed
  for id in pairs(waiting) do
    waiting[id] = nil
  end
  return fail_pending(...)
end
