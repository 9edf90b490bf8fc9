// Log alert rules over slotlock's audit log (ContainerAppConsoleLogs_CL in
// the Log Analytics workspace): the Azure Monitor counterparts of the
// Prometheus rules in deploy/prometheus. One rule per entry of
// alerts/rules.json; each query is the .kql file of the same name, which
// also runs as is in the portal (workspace → Logs). Edit a file and run
// `azd provision`. Runbook: README, "Alert runbook".

param location string
param tags object

@description('Resource id of the Log Analytics workspace that holds ContainerAppConsoleLogs_CL.')
param workspaceId string

@description('Where alert notifications go (an e-mail address); empty: the alerts fire in the portal only.')
param alertEmail string = ''

var rules = loadJsonContent('alerts/rules.json')

// loadTextContent needs a literal path: one entry per file.
var queries = {
  'slot-missed': loadTextContent('alerts/slot-missed.kql')
  'job-failing': loadTextContent('alerts/job-failing.kql')
  'no-recent-success': loadTextContent('alerts/no-recent-success.kql')
  'run-abandoned': loadTextContent('alerts/run-abandoned.kql')
  'lock-lost': loadTextContent('alerts/lock-lost.kql')
  'no-quorum': loadTextContent('alerts/no-quorum.kql')
  'job-paused-on-failure': loadTextContent('alerts/job-paused-on-failure.kql')
}

var runbook = 'https://github.com/slotlock/slotlock/blob/main/README.md#alert-runbook'

resource email 'Microsoft.Insights/actionGroups@2023-01-01' = if (!empty(alertEmail)) {
  name: 'ag-slotlock'
  location: 'global'
  tags: tags
  properties: {
    groupShortName: 'slotlock'
    enabled: true
    emailReceivers: [
      {
        name: 'slotlock-email'
        emailAddress: alertEmail
        useCommonAlertSchema: true
      }
    ]
  }
}

resource rule 'Microsoft.Insights/scheduledQueryRules@2023-12-01' = [for r in rules: {
  name: 'slotlock-${r.name}'
  location: location
  tags: tags
  kind: 'LogAlert'
  properties: {
    displayName: 'slotlock: ${r.title}'
    description: '${r.description} Runbook: ${runbook}'
    severity: r.severity
    enabled: true
    scopes: [
      workspaceId
    ]
    // The queries read ContainerAppConsoleLogs_CL, a table Log Analytics
    // creates only when the first log line arrives: on a new workspace,
    // validation would reject every rule ("Failed to resolve table").
    skipQueryValidation: true
    evaluationFrequency: r.every
    windowSize: r.window
    overrideQueryTimeRange: r.?range
    criteria: {
      allOf: [
        {
          // One alert per value of the dimensions (a job, a reason) for
          // which the query returns a row.
          query: queries[r.name]
          timeAggregation: 'Count'
          operator: 'GreaterThan'
          threshold: 0
          dimensions: map(r.dimensions, d => {
            name: d
            operator: 'Include'
            values: [
              '*'
            ]
          })
          failingPeriods: {
            numberOfEvaluationPeriods: 1
            minFailingPeriodsToAlert: 1
          }
        }
      ]
    }
    autoMitigate: true
    actions: {
      actionGroups: empty(alertEmail) ? [] : [
        email!.id
      ]
    }
  }
}]
