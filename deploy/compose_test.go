package deploy_test

import (
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"

	"ate.dev/orchestrator/internal/searchattr"
)

// loadCompose loads docker-compose.yaml as `docker compose` does, with an
// empty environment, so every ${VAR:-default} takes its default.
func loadCompose(t testing.TB) *types.Project {
	t.Helper()
	root := repoRoot(t)
	opts, err := cli.NewProjectOptions([]string{filepath.Join(root, "docker-compose.yaml")},
		cli.WithWorkingDirectory(root), cli.WithEnv(nil))
	if err != nil {
		t.Fatal(err)
	}
	p, err := opts.LoadProject(context.Background())
	if err != nil {
		t.Fatalf("docker-compose.yaml does not load: %v", err)
	}
	return p
}

func service(t testing.TB, p *types.Project, name string) types.ServiceConfig {
	t.Helper()
	s, err := p.GetService(name)
	if err != nil {
		t.Fatalf("docker-compose.yaml: %v", err)
	}
	return s
}

// isJob tells a one-shot service: nothing restarts it once it exited 0.
func isJob(s types.ServiceConfig) bool {
	return s.Restart == "" || s.Restart == types.RestartPolicyNo || strings.HasPrefix(s.Restart, types.RestartPolicyOnFailure)
}

func TestComposeServicesCanStart(t *testing.T) {
	p := loadCompose(t)
	for _, name := range p.ServiceNames() {
		s := service(t, p, name)
		if s.Image == "" && s.Build == nil {
			t.Errorf("service %s has neither image nor build", name)
		}
		for dep, d := range s.DependsOn {
			ds, err := p.GetService(dep)
			if err != nil {
				t.Errorf("service %s depends on %s: %v", name, dep, err)
				continue
			}
			switch d.Condition {
			case types.ServiceConditionHealthy:
				if hc := ds.HealthCheck; hc == nil || hc.Disable || len(hc.Test) == 0 {
					t.Errorf("service %s waits for %s to be healthy, which has no healthcheck", name, dep)
				}
			case types.ServiceConditionCompletedSuccessfully:
				if !isJob(ds) {
					t.Errorf("service %s waits for %s to complete, which restarts (%s)", name, dep, ds.Restart)
				}
			}
		}
	}
}

// The stack starts in order: each service waits for what it needs.
func TestComposeStartOrder(t *testing.T) {
	p := loadCompose(t)
	healthy, completed := types.ServiceConditionHealthy, types.ServiceConditionCompletedSuccessfully
	want := map[string]map[string]string{
		"temporal-schema": {"postgresql": healthy},
		"temporal":        {"postgresql": healthy, "temporal-schema": completed},
		"temporal-setup":  {"temporal": healthy},
		"temporal-ui":     {"temporal": healthy},
		"kube-setup":      {"k3s": healthy},
	}
	for _, proc := range []string{"worker", "starter"} {
		want[proc] = map[string]string{
			"temporal": healthy, "temporal-setup": completed,
			"k3s": healthy, "kube-setup": completed,
		}
	}
	for name, deps := range want {
		s := service(t, p, name)
		for dep, cond := range deps {
			if got, ok := s.DependsOn[dep]; !ok || got.Condition != cond {
				t.Errorf("service %s: depends_on %s is %+v, want condition %s", name, dep, got, cond)
			}
		}
	}
}

// The worker and the starter are built from the repository's Dockerfile,
// run one of its commands and set only environment variables they read.
func TestComposeOrchestrator(t *testing.T) {
	p := loadCompose(t)
	root := repoRoot(t)
	for _, name := range []string{"worker", "starter"} {
		s := service(t, p, name)
		b := s.Build
		if b == nil {
			t.Errorf("service %s is not built", name)
			continue
		}
		if b.Context != root || (b.Dockerfile != "" && b.Dockerfile != "Dockerfile") {
			t.Errorf("service %s is built from %s in %s, want the repository's Dockerfile", name, b.Dockerfile, b.Context)
		}
		cmds := imageCommands(t, b.Target)
		if want := "/usr/local/bin/" + name; !slices.Equal(s.Command, types.ShellCommand{want}) || !slices.Contains(cmds, want) {
			t.Errorf("service %s runs %v; want [%s], which image target %q has: %v", name, s.Command, want, b.Target, cmds)
		}
		if hc := s.HealthCheck; hc != nil && len(hc.Test) > 1 && hc.Test[0] == "CMD" && !slices.Contains(cmds, hc.Test[1]) {
			t.Errorf("service %s: the healthcheck runs %s, which image target %q lacks: %v", name, hc.Test[1], b.Target, cmds)
		}

		read := envNames(t, name)
		for k := range s.Environment {
			if !slices.Contains(read, k) {
				t.Errorf("service %s sets %s, which the %s does not read (it reads %v)", name, k, name, read)
			}
		}
		env := func(k string) string {
			if v := s.Environment[k]; v != nil {
				return *v
			}
			return ""
		}
		for _, k := range []string{"KUBECONFIG", "TEMPORAL_ADDRESS", "TEMPORAL_NAMESPACE", "HEALTH_PROBE_BIND_ADDRESS"} {
			if env(k) == "" {
				t.Errorf("service %s does not set %s", name, k)
			}
		}
		if env("LEADER_ELECT") == "true" && env("LEADER_ELECTION_NAMESPACE") == "" {
			t.Errorf("the %s elects a leader out of cluster without LEADER_ELECTION_NAMESPACE: controller-runtime cannot guess the namespace", name)
		}

		// The healthcheck probes the health port.
		if hc := s.HealthCheck; hc == nil || !strings.Contains(strings.Join(hc.Test, " "), fmt.Sprintf(":%d/readyz", port(t, env("HEALTH_PROBE_BIND_ADDRESS")))) {
			t.Errorf("service %s: healthcheck %v does not probe /readyz on HEALTH_PROBE_BIND_ADDRESS %s", name, s.HealthCheck, env("HEALTH_PROBE_BIND_ADDRESS"))
		}

		// The kubeconfig is in a volume kube-setup writes.
		kubeDir := path.Dir(env("KUBECONFIG"))
		vol := mountAt(s, kubeDir)
		if vol == nil || vol.Type != types.VolumeTypeVolume {
			t.Errorf("service %s: KUBECONFIG %s is not in a named volume", name, env("KUBECONFIG"))
		} else if w := mountAt(service(t, p, "kube-setup"), "/kube"); w == nil || w.Source != vol.Source || w.ReadOnly {
			t.Errorf("service %s reads the kubeconfig from volume %s, which kube-setup does not write at /kube (hack/compose/kube-setup.sh's KUBECONFIG_DIR)", name, vol.Source)
		}

		// The same Temporal as the setup job prepared.
		setup := service(t, p, "temporal-setup")
		for _, k := range []string{"TEMPORAL_ADDRESS", "TEMPORAL_NAMESPACE"} {
			if v := setup.Environment[k]; v == nil || *v != env(k) {
				t.Errorf("service %s has %s=%s, temporal-setup prepares %v", name, k, env(k), v)
			}
		}
	}
}

// mountAt returns a service's volume mounted at target, or nil.
func mountAt(s types.ServiceConfig, target string) *types.ServiceVolumeConfig {
	for i := range s.Volumes {
		if s.Volumes[i].Target == target {
			return &s.Volumes[i]
		}
	}
	return nil
}

// temporal-setup registers exactly the search attributes the workflows set.
func TestComposeSearchAttributes(t *testing.T) {
	s := service(t, loadCompose(t), "temporal-setup")
	var want []string
	for _, d := range searchattr.Definitions {
		want = append(want, d.Name+"="+d.Type.String())
	}
	if !slices.Equal([]string(s.Command), want) {
		t.Errorf("temporal-setup registers %v, want %v (internal/searchattr)", s.Command, want)
	}
}

// The scripts the jobs run exist, in the directory mounted where the job
// looks; so do the manifests kube-setup applies.
func TestComposeJobScripts(t *testing.T) {
	p := loadCompose(t)
	for _, name := range p.ServiceNames() {
		s := service(t, p, name)
		for _, arg := range slices.Concat(s.Entrypoint, s.Command) {
			for _, v := range s.Volumes {
				if v.Type != types.VolumeTypeBind || !strings.HasPrefix(arg, v.Target+"/") {
					continue
				}
				if _, err := os.Stat(filepath.Join(v.Source, strings.TrimPrefix(arg, v.Target))); err != nil {
					t.Errorf("service %s runs %s: %v", name, arg, err)
				}
			}
		}
	}

	kubeSetup := service(t, p, "kube-setup")
	deploy := mountAt(kubeSetup, "/deploy")
	if deploy == nil || deploy.Source != filepath.Join(repoRoot(t), "deploy") {
		t.Fatalf("kube-setup does not mount deploy/ at /deploy: %+v", deploy)
	}
	script, err := os.ReadFile(filepath.Join(repoRoot(t), "hack", "compose", "kube-setup.sh"))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(script), "\n") {
		_, rest, ok := strings.Cut(l, `"$deploy/`)
		if !ok {
			continue
		}
		rel, _, _ := strings.Cut(rest, `"`)
		if _, err := os.Stat(filepath.Join(deploy.Source, rel)); err != nil {
			t.Errorf("kube-setup.sh applies %s: %v", rel, err)
		}
	}
}
