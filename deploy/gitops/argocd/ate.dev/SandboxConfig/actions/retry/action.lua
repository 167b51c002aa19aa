-- Argo CD action "retry": a new request to the config's rollout, which
-- takes a halted, aborted or rolled-back rollout's current step again.
local annotation = "sandboxconfig.ate.dev/rollout-retry"

-- The rest is the same in every action.lua: Argo CD runs each one alone,
-- with nothing to share code from, so `make generate` writes each from
-- deploy/gitops/argocd/action.lua.tmpl.
--
-- The rollout acts on each new value of the annotation once, and takes the
-- greater of a pause and a resume made at once, so the value is a UTC time
-- of fixed width, "2006-01-02T15:04:05.000000000Z", which sorts in time
-- order, as `kubectl ate rollout` writes it. Argo CD's os.date has whole
-- seconds only: the nanoseconds count the requests made within a second,
-- the value being the first of this second above every request on the
-- config, so two clicks in one second are two requests, in order. Argo
-- CD's Lua has no string or math library here: comparison,
-- concatenation, # and % only.
local os = require("os")
local second = os.date("!%Y-%m-%dT%H:%M:%S.")
local function stamp(nanos)
  local digits = tostring(nanos)
  while #digits < 9 do
    digits = "0" .. digits
  end
  return second .. digits .. "Z"
end

if obj.metadata.annotations == nil then
  obj.metadata.annotations = {}
end
-- The latest request on the config of the format's width (others, such
-- as $(date +%s), sort below any such time).
local latest, latestName = nil, nil
for _, verb in ipairs({"pause", "resume", "promote", "promote-full", "abort", "retry"}) do
  local name = "sandboxconfig.ate.dev/rollout-" .. verb
  local v = obj.metadata.annotations[name]
  if type(v) == "string" and #v == #stamp(0) and (latest == nil or v > latest) then
    latest, latestName = v, name
  end
end

local nanos = 0
if latest ~= nil and latest >= stamp(0) then
  if latest >= stamp(999999999) then
    -- Written by a clock ahead of Argo CD's: a value of this second would
    -- sort before it and could lose to it.
    error(latestName .. " is " .. latest .. ", later than Argo CD's clock (" .. stamp(0) ..
      "): a request now would not sort after it; try again after that time", 0)
  end
  -- The least nanos whose stamp sorts after latest (fixed width: the
  -- strings compare as the numbers do).
  local lo, hi = 0, 999999999
  while lo < hi do
    local mid = (lo + hi) / 2
    mid = mid - mid % 1
    if stamp(mid) > latest then
      hi = mid
    else
      lo = mid + 1
    end
  end
  nanos = lo
end
obj.metadata.annotations[annotation] = stamp(nanos)
return obj
