package servers

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// config is the server's static config: docker-compose.yaml's server (the
// postgres12 plugin for persistence and SQL visibility) on this machine's
// loopback ports.
func (t *TemporalServer) config() string {
	var b strings.Builder
	ds := func(name, db string, conns int) {
		fmt.Fprintf(&b, `    %s:
      sql:
        pluginName: postgres12
        databaseName: %s
        connectAddr: %q
        connectProtocol: tcp
        user: %s
        password: unused-trust-auth
        maxConns: %d
        maxIdleConns: %d
        maxConnLifetime: 1h
`, name, db, t.pg.Address(), postgresUser, conns, conns)
	}
	b.WriteString(`log:
  stdout: true
  level: warn
persistence:
  defaultStore: postgres-default
  visibilityStore: postgres-visibility
  numHistoryShards: 4
  datastores:
`)
	ds("postgres-default", "temporal", 20)
	ds("postgres-visibility", "temporal_visibility", 10)
	fmt.Fprintf(&b, `global:
  membership:
    maxJoinDuration: 30s
    broadcastAddress: %q
services:
`, loopback)
	for _, s := range temporalServices {
		fmt.Fprintf(&b, `  %s:
    rpc:
      grpcPort: %d
      membershipPort: %d
      bindOnIP: %q
`, s, t.ports[s+".grpc"], t.ports[s+".membership"], loopback)
		if s == "frontend" {
			fmt.Fprintf(&b, "      httpPort: %d\n", t.ports["frontend.http"])
		}
	}
	fmt.Fprintf(&b, `clusterMetadata:
  enableGlobalNamespace: false
  failoverVersionIncrement: 10
  masterClusterName: active
  currentClusterName: active
  clusterInformation:
    active:
      enabled: true
      initialFailoverVersion: 1
      rpcName: frontend
      rpcAddress: %q
dcRedirectionPolicy:
  policy: noop
dynamicConfigClient:
  filepath: %q
  pollInterval: 10s
`, t.Address(), t.dynamicConfigFile())
	return b.String()
}

// dynamicConfig renders DynamicConfig as the server's dynamic config file;
// a JSON value is a YAML value.
func (t *TemporalServer) dynamicConfig() string {
	if len(t.cfg.DynamicConfig) == 0 {
		return "{}\n"
	}
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(t.cfg.DynamicConfig)) {
		fmt.Fprintf(&b, "%s:\n  - value: %s\n", k, t.cfg.DynamicConfig[k])
	}
	return b.String()
}
