-- Argo CD actions of an ate.dev SandboxConfig: the requests to its staged
-- rollout (api/v1alpha1/names.go). Each action sets its annotation
-- sandboxconfig.ate.dev/rollout-<action> to a new value, which the
-- rollout acts on once. An action is offered only where the rollout would
-- do something with it, by status.rollout.phase:
--
--   pause         Progressing, Baking, AwaitingApproval, AwaitingClusters
--                 (a promote or an abort does nothing for a rollout whose
--                 first step waits for other clusters)
--   resume        Halted, and Paused by a pause request (signalPaused): a
--                 pause of spec.rollout.paused is lifted in the spec (Git),
--                 and a rollout held after its last step needs a step
--   promote       Paused, AwaitingApproval, Baking
--   promote-full  Progressing, Paused, AwaitingApproval, Baking
--   abort         Progressing, Paused, AwaitingApproval, Baking, Halted
--   retry         Halted, Aborted, RolledBack
--
-- No phase, or Completed, Superseded, Stopped: no live rollout, nothing
-- offered. Argo CD's Lua has no string library: plain comparisons only.

local rollout = {}
if obj.status ~= nil and obj.status.rollout ~= nil then
  rollout = obj.status.rollout
end
local phase = rollout.phase

local function phaseIn(...)
  for _, p in ipairs({...}) do
    if phase == p then
      return true
    end
  end
  return false
end

local actions = {}
actions["pause"] = {
  ["displayName"] = "Pause rollout",
  ["disabled"] = not phaseIn("Progressing", "Baking", "AwaitingApproval", "AwaitingClusters"),
}
actions["resume"] = {
  ["displayName"] = "Resume rollout",
  ["disabled"] = not (phaseIn("Halted") or (phaseIn("Paused") and rollout.signalPaused == true)),
}
actions["promote"] = {
  ["displayName"] = "Promote: end this step's approval wait or bake",
  ["disabled"] = not phaseIn("Paused", "AwaitingApproval", "Baking"),
}
actions["promote-full"] = {
  ["displayName"] = "Promote full: skip every remaining step",
  ["disabled"] = not phaseIn("Progressing", "Paused", "AwaitingApproval", "Baking"),
}
actions["abort"] = {
  ["displayName"] = "Abort: move the admitted pools back",
  ["disabled"] = not phaseIn("Progressing", "Paused", "AwaitingApproval", "Baking", "Halted"),
}
actions["retry"] = {
  ["displayName"] = "Retry the step",
  ["disabled"] = not phaseIn("Halted", "Aborted", "RolledBack"),
}
return actions
