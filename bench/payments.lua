-- wrk script of bench/payments: POST .../payments with a unique Idempotency-Key.
--
--   wrk ... -s bench/payments.lua http://127.0.0.1:PORT -- TARGETS RUN_TAG [DELAY_MS]
--
-- TARGETS holds one line per account: "<path> <access token> <beneficiaryId>".
-- Each request picks a line at random (one line: the hot-account mode). Keys are
-- RUN_TAG (8 hex digits, new every run), the thread and a per-thread counter, so
-- no two requests of a run share a key. DELAY_MS > 0 paces each connection.
-- done() prints one line "BENCH {json}" that bench/payments_bench.py reads.

local threads = {}
local next_thread = 1

function setup(thread)
  thread:set("thread_id", next_thread)
  next_thread = next_thread + 1
  table.insert(threads, thread)
end

local targets = {}
local counter = 0
local run_tag = "00000000"
local delay_ms = 0
non2xx = 0
sample = ""

function init(args)
  for line in io.lines(args[1]) do
    local path, token, beneficiary = line:match("^(%S+) (%S+) (%S+)$")
    table.insert(targets, {
      path = path,
      headers = { ["Authorization"] = "Bearer " .. token, ["Content-Type"] = "application/json" },
      body = '{"amount": "1.00", "reference": "Bench", "beneficiaryId": "' .. beneficiary .. '"}',
    })
  end
  run_tag = args[2]
  delay_ms = tonumber(args[3] or "0")
  math.randomseed(os.time() + thread_id * 7919)
end

function request()
  counter = counter + 1
  local target = targets[math.random(#targets)]
  target.headers["Idempotency-Key"] = string.format("%s-%04x-4000-8000-%012x", run_tag, thread_id, counter)
  return wrk.format("POST", target.path, target.headers, target.body)
end

function delay()
  return delay_ms
end

function response(status, headers, body)
  if status < 200 or status > 299 then
    non2xx = non2xx + 1
    if sample == "" then
      sample = status .. " " .. body
    end
  end
end

function done(summary, latency, requests)
  local failed = 0
  local first = ""
  for _, thread in ipairs(threads) do
    failed = failed + thread:get("non2xx")
    if first == "" then
      first = thread:get("sample")
    end
  end
  local errors = summary.errors
  io.write(string.format(
    'BENCH {"requests": %d, "duration_us": %d, "p50_us": %d, "p99_us": %d, "non2xx": %d, ' ..
      '"socket_errors": %d, "timeouts": %d}\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99), failed,
    errors.connect + errors.read + errors.write, errors.timeout))
  if first ~= "" then
    io.write("SAMPLE " .. first:gsub("\n", " ") .. "\n")
  end
end
