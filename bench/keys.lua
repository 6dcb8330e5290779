-- wrk script for `make bench` section 3: every request carries a new X-Key
-- value, so the server sees one distinct key per request.  The argument after
-- the URL is the number of requests per thread; a thread stops after that many
-- responses and, when a second argument names a path prefix, creates the file
-- PREFIX.TID so the caller can interrupt wrk (SIGINT prints the summary): a
-- stopped thread does not end wrk before its -d duration.  Thread ids keep the
-- keys of the threads apart.
local next_id = 0

function setup(thread)
   thread:set("tid", next_id)
   next_id = next_id + 1
end

function init(args)
   limit = tonumber(args[1]) or 500000
   marker = args[2]
   sent = 0
   done_count = 0
end

function request()
   sent = sent + 1
   return wrk.format(nil, nil, { ["X-Key"] = "k" .. tid .. "-" .. sent })
end

function response(status, headers, body)
   done_count = done_count + 1
   if done_count == limit then
      if marker then
         local f = io.open(marker .. "." .. tid, "w")
         if f then f:close() end
      end
      wrk.thread:stop()
   end
end
