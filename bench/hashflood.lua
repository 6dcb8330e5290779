-- wrk script for bench/run's hashflood section: every request carries an X-Key
-- value from the file named by the argument after the URL (one value a line),
-- taken in turn, each thread from its own starting point.  The requests are
-- formatted once, in init, so wrk's own cost per request is the same for one
-- key and for thousands.
local next_id = 0

function setup(thread)
   thread:set("tid", next_id)
   next_id = next_id + 1
end

function init(args)
   reqs = {}
   for line in io.lines(args[1]) do
      if line ~= "" then
         reqs[#reqs + 1] = wrk.format(nil, nil, { ["X-Key"] = line })
      end
   end
   if #reqs == 0 then
      reqs[1] = wrk.format(nil, nil, { ["X-Key"] = "none" })
   end
   at = (tid * 7919) % #reqs
end

function request()
   at = at + 1
   if at > #reqs then
      at = 1
   end
   return reqs[at]
end
