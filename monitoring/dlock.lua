-- dlock collect script for redis_exporter's --script option (tested with 1.45, Debian's
-- prometheus-redis-exporter): every dlock_* field of INFO dlock becomes one value of the
-- exporter's gauge redis_script_values{key="<name>"}, read on the node the exporter scrapes, so
-- a Redis Cluster is covered per node exactly as the exporter covers it (one target per node).
--
-- The exporter takes a flat array of name, value pairs, both strings (like HGETALL). It names
-- no metric type, so the names say it: counters end in _total (use rate() / increase()), the
-- rest are gauges. docs/monitoring.md lists them all.
--
-- Read-only and O(1): one INFO dlock call, which reads counters the module keeps anyway.

-- The counters of INFO dlock; any other numeric field is a gauge under its own name, so a field
-- a newer module adds shows up without a new script.
local counters = {
  grants = true, contended = true, releases = true, force_releases = true, extends = true,
  fences = true, expired_before_release = true, eviction_refusals = true, handoffs = true,
  wait_timeouts = true, revocations = true, refused_values = true, gates_revived = true,
}
-- Values of the one text field, each its own 0/1 gauge so an alert can test for one.
local guard_states = { "safe", "refusing", "allowed" }

local info = redis.call("INFO", "dlock")
local result = {}
local function put(name, value)
  table.insert(result, name)
  table.insert(result, tostring(value))
end

local found = false
for field, value in string.gmatch(info, "dlock_([%w_]+):([^\r\n]*)") do
  found = true
  local number = tonumber(value)
  if field == "quarantine_left_ms" and number then
    -- Prometheus measures time in seconds.
    put("dlock_quarantine_left_seconds", number / 1000)
  elseif counters[field] and number then
    put("dlock_" .. field .. "_total", value)
  elseif number then
    put("dlock_" .. field, value)
  elseif field == "eviction_guard" then
    for _, state in ipairs(guard_states) do
      put("dlock_eviction_guard_" .. state, state == value and 1 or 0)
    end
  else
    -- An unknown text field: a 1 under name_value, the value made a valid name.
    put("dlock_" .. field .. "_" .. string.gsub(value, "[^%w_]", "_"), 1)
  end
end
-- 0 on a node without the module: an alert can tell "not loaded" from "no traffic".
put("dlock_up", found and 1 or 0)
return result
