-- Argo CD health check for Conveyor's ConnectCluster and KafkaConnector
-- (connect.conveyor.dev). It reads the same status kstatus (Flux) reads:
-- status.observedGeneration, and the Ready, Reconciling and Stalled
-- conditions. Install it in argocd-cm as
-- resource.customizations.health.connect.conveyor.dev_ConnectCluster and
-- resource.customizations.health.connect.conveyor.dev_KafkaConnector
-- (see docs/operations.md, "GitOps health").
local hs = {status = "Progressing", message = "Waiting for the operator to report a status"}
if obj.status == nil then
  return hs
end
local generation = obj.metadata.generation
local observed = obj.status.observedGeneration
if generation ~= nil and (observed == nil or observed < generation) then
  hs.message = "Waiting for the operator to observe generation " .. tostring(generation)
  return hs
end
local ready, reconciling, stalled
if obj.status.conditions ~= nil then
  for _, c in ipairs(obj.status.conditions) do
    if c.type == "Ready" then
      ready = c
    elseif c.type == "Reconciling" then
      reconciling = c
    elseif c.type == "Stalled" then
      stalled = c
    end
  end
end
if stalled ~= nil and stalled.status == "True" then
  hs.status = "Degraded"
  hs.message = stalled.reason .. ": " .. (stalled.message or "")
  return hs
end
if ready ~= nil and ready.status == "True" then
  if ready.reason == "ConnectorPaused" or ready.reason == "ConnectorStopped" then
    hs.status = "Suspended"
  else
    hs.status = "Healthy"
  end
  hs.message = ready.message or ""
  return hs
end
if reconciling ~= nil and reconciling.status == "True" then
  hs.message = reconciling.reason .. ": " .. (reconciling.message or "")
elseif ready ~= nil then
  hs.message = ready.reason .. ": " .. (ready.message or "")
end
return hs
