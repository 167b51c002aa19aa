-- Argo CD health of an ate.dev SandboxConfig: where its staged rollout
-- stands (api/v1alpha1/rollout_types.go).
--
-- The orchestrator writes kstatus conditions (Ready, Progressing, Stalled,
-- all three with one reason and message) and status.observedGeneration;
-- they are read first, as Flux reads them, so Argo CD and Flux agree. A
-- status without conditions (an orchestrator from before them) is read
-- from status.rollout.phase alone.
--
-- Argo CD runs a health.lua from argocd-cm without Lua's string and math
-- libraries (unless resource.customizations.useOpenLibs is set): this
-- script only compares and concatenates.

local hs = {}

local function condition(type)
  if obj.status.conditions == nil then
    return nil
  end
  for _, c in ipairs(obj.status.conditions) do
    if c.type == type then
      return c
    end
  end
  return nil
end

-- "step 2 of 4: " before a message, as the conditions' messages read.
local function stepOf(rollout)
  if rollout.step ~= nil and rollout.step > 0 and obj.spec.rollout ~= nil and obj.spec.rollout.steps ~= nil then
    return "step " .. tostring(rollout.step) .. " of " .. tostring(#obj.spec.rollout.steps) .. ": "
  end
  return ""
end

-- No status at all: the orchestrator has not looked at the config yet.
if obj.status == nil or next(obj.status) == nil then
  hs.status = "Progressing"
  hs.message = "Waiting for the controller to report the config's status"
  return hs
end

-- A spec the status does not describe yet (a live rollout's
-- observedGeneration is the generation it has taken in).
local observed = obj.status.observedGeneration
if observed ~= nil and obj.metadata.generation ~= nil and observed < obj.metadata.generation then
  hs.status = "Progressing"
  hs.message = "Waiting for the controller to observe generation " .. tostring(obj.metadata.generation) ..
    " (the status describes " .. tostring(observed) .. ")"
  return hs
end

local rollout = obj.status.rollout or {}
local ready = condition("Ready")
local message, phase
if ready ~= nil then
  -- The conditions' reason is "Rollout" and the phase, or NoRollout or
  -- RolloutPending; their message already says the step. They are turned
  -- into the phase they stand for, which the rest maps.
  local stalled = condition("Stalled")
  message = ready.message
  if stalled ~= nil and stalled.status == "True" then
    phase, message = "Aborted", stalled.message
    if stalled.reason == "RolloutHalted" then
      phase = "Halted"
    elseif stalled.reason == "RolloutRolledBack" then
      phase = "RolledBack"
    end
  elseif ready.status == "True" then
    phase = "Completed" -- no live rollout: completed, superseded, stopped or none
  elseif ready.reason == "RolloutPaused" then
    phase = "Paused"
  elseif ready.reason == "RolloutAwaitingApproval" then
    phase = "AwaitingApproval"
  else
    phase = "Progressing" -- Progressing, Baking, AwaitingClusters, or not started yet (RolloutPending)
  end
else
  phase = rollout.phase
  message = rollout.message
  if message == nil or message == "" then
    message = "rollout " .. tostring(phase)
  end
  message = stepOf(rollout) .. message
end
if message == nil then
  message = ""
end

if phase == nil or phase == "" then
  hs.status = "Healthy"
  hs.message = "No staged rollout"
elseif phase == "Completed" or phase == "Superseded" or phase == "Stopped" then
  hs.status = "Healthy"
  hs.message = message
elseif phase == "Progressing" or phase == "Baking" or phase == "AwaitingClusters" then
  hs.status = "Progressing"
  hs.message = message
elseif phase == "Paused" then
  -- The rollout's message says what holds it and how to go on: a resume
  -- for a pause request, spec.rollout.paused for the spec's pause, a step
  -- to add for a rollout held after its last step.
  hs.status = "Suspended"
  hs.message = message
elseif phase == "AwaitingApproval" then
  hs.status = "Suspended"
  hs.message = message .. " (to go on: `kubectl ate rollout promote " .. obj.metadata.name ..
    "`, or the promote action)"
elseif phase == "Halted" then
  -- A halt's message is the failure; an abort's already names its retry.
  hs.status = "Degraded"
  hs.message = message .. " (once fixed: `kubectl ate rollout resume " .. obj.metadata.name ..
    "`, or the resume action)"
elseif phase == "Aborted" or phase == "RolledBack" then
  -- Both messages already name the retry.
  hs.status = "Degraded"
  hs.message = message
else
  hs.status = "Unknown"
  hs.message = "Unknown rollout phase " .. tostring(phase)
end
return hs
