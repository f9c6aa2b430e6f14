-- wrk script: sends the requests of a file in turn and counts GraphQL errors sent with status 200.
-- Usage: wrk ... -s bench/graphql.lua URL -- REQUESTS_FILE [statuses] [traced]
-- Each line of REQUESTS_FILE is "POST <path> <json body>" or "GET <path>".
-- done() prints one line: "BENCH {json}" with requests, latency percentiles and error counts.
-- With "statuses", answers are not read into Lua (no response callback: wrk then parses no
-- header nor body for the script, about 12 us of its CPU less per 19 KB answer) and only wrk's
-- own count of statuses of 400 and above is kept ("bodies_checked": false, no GraphQL error
-- counted).
-- With "traced", each request carries a traceparent of its own (as a client tracing every call
-- sends): the same query, never the same request twice.

local threads = {}

function setup(thread)
  table.insert(threads, thread)
end

function init(args)
  requests, parts, index, graphql_errors, bad_status = {}, {}, 0, 0, 0
  local flags = {}
  for i = 2, #args do
    flags[args[i]] = true
  end
  checking, traced = not flags["statuses"], flags["traced"]
  if not checking then
    response = nil  -- read by wrk after init: no answer is handed to the script
  end
  for line in io.lines(args[1]) do
    local method, path, body = line:match("^(%u+) (%S+) ?(.*)$")
    local headers = {}
    if method == "POST" then
      headers["Content-Type"] = "application/json"
    else
      body = nil
    end
    table.insert(requests, wrk.format(method, path, headers, body))
    table.insert(parts, {method, path, headers, body})
  end
end

function request()
  index = index % #requests + 1
  if traced then
    local method, path, headers, body = unpack(parts[index])
    sent = (sent or 0) + 1
    headers["traceparent"] = string.format("00-%032d-%016d-01", sent, sent)
    return wrk.format(method, path, headers, body)
  end
  return requests[index]
end

function response(status, headers, body)
  if status == 200 then
    if body:find('"errors":', 1, true) then
      graphql_errors = graphql_errors + 1
    end
  elseif status ~= 304 then
    bad_status = bad_status + 1
  end
end

function done(summary, latency, requests)
  local errors, bad = 0, 0
  local e = summary.errors
  for _, thread in ipairs(threads) do
    errors = errors + thread:get("graphql_errors")
    bad = bad + thread:get("bad_status")
  end
  local checked = threads[1]:get("checking")
  if not checked then
    bad = e.status
  end
  io.write(string.format(
    'BENCH {"requests":%d,"duration_us":%d,"p50_us":%d,"p90_us":%d,"p99_us":%d,' ..
    '"max_us":%d,"graphql_errors":%d,"bad_status":%d,"socket_errors":%d,"bodies_checked":%s}\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(90),
    latency:percentile(99), latency.max, errors, bad,
    e.connect + e.read + e.write + e.timeout, tostring(checked)))
end
