-- Argo CD health of a mirrorhub.io object (SecretMirror, ClusterSecretMirror, MirrorCluster,
-- VaultConnection, ClusterVaultConnection), read from the Ready / Reconciling / Stalled
-- conditions as kstatus and Flux read them (docs/gitops.md). One script serves every kind: the
-- chart renders it under resource.customizations.health.mirrorhub.io_<Kind> for each.
local hs = { status = "Progressing", message = "Waiting for the controller to report" }

local function condition(conditions, type)
  if conditions == nil then
    return nil
  end
  for _, c in ipairs(conditions) do
    if c.type == type then
      return c
    end
  end
  return nil
end

local function text(c, fallback)
  if c ~= nil and c.message ~= nil and c.message ~= "" then
    return c.message
  end
  if c ~= nil and c.reason ~= nil and c.reason ~= "" then
    return c.reason
  end
  return fallback
end

-- A paused mirror writes nothing; its status keeps the values from before the pause.
if obj.spec ~= nil and obj.spec.suspend == true then
  hs.status = "Suspended"
  hs.message = "Suspended (spec.suspend is true): nothing is written or deleted"
  return hs
end

local status = obj.status
if status == nil then
  return hs
end
local generation = obj.metadata.generation
local conditions = status.conditions

-- Terminal: no retry can succeed until the spec, a policy or a permission changes. Checked
-- before the generation, so a new spec that is itself invalid shows Degraded at once.
local stalled = condition(conditions, "Stalled")
if stalled ~= nil and stalled.status == "True" and
    (generation == nil or stalled.observedGeneration == nil or stalled.observedGeneration >= generation) then
  hs.status = "Degraded"
  hs.message = text(stalled, "Stalled")
  return hs
end

if generation ~= nil and (status.observedGeneration == nil or status.observedGeneration < generation) then
  hs.message = "Waiting for the controller to observe generation " .. tostring(generation)
  return hs
end

local reconciling = condition(conditions, "Reconciling")
if reconciling ~= nil and reconciling.status == "True" then
  hs.message = text(reconciling, "Reconciling")
  return hs
end

local ready = condition(conditions, "Ready")
if ready == nil or ready.status == "Unknown" then
  hs.message = text(ready, hs.message)
  return hs
end
if ready.status == "True" then
  hs.status = "Healthy"
  hs.message = text(ready, "Ready")
  return hs
end
hs.status = "Degraded"
hs.message = text(ready, "Not ready")
return hs
