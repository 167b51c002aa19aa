package servers

import (
	"fmt"
	"sort"
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
`, name, db, t.pg.Address(), t.pg.User(), conns, conns)
	}
	fmt.Fprintf(&b, `log:
  stdout: true
  level: %s
persistence:
  defaultStore: postgres-default
  visibilityStore: postgres-visibility
  numHistoryShards: %d
  datastores:
`, t.cfg.LogLevel, t.cfg.HistoryShards)
	ds("postgres-default", "temporal", 20)
	ds("postgres-visibility", "temporal_visibility", 10)
	fmt.Fprintf(&b, `global:
  membership:
    maxJoinDuration: 30s
    broadcastAddress: %q
services:
`, t.cfg.IP)
	for _, s := range temporalServices {
		fmt.Fprintf(&b, `  %s:
    rpc:
      grpcPort: %d
      membershipPort: %d
      bindOnIP: %q
`, s, t.ports[s+".grpc"], t.ports[s+".membership"], t.cfg.IP)
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
	keys := make([]string, 0, len(t.cfg.DynamicConfig))
	for k := range t.cfg.DynamicConfig {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString("# Written by ate.dev/orchestrator/test/localstack/servers.\n")
	for _, k := range keys {
		fmt.Fprintf(&b, "%s:\n  - value: %s\n", k, t.cfg.DynamicConfig[k])
	}
	if len(keys) == 0 {
		b.WriteString("{}\n")
	}
	return b.String()
}
