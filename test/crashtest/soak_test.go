package crashtest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/testenv"
)

// Shape of the soak.
const (
	soakNamespaces  = 4
	soakPoolsMin    = 20 // pools are deleted only above this
	soakPoolsMax    = 26 // and created only below this
	soakConfigsMin  = 3  // per class: configs are deleted only above this
	soakConfigsMax  = 7  // and created only below this
	soakOpPauseMin  = 50 * time.Millisecond
	soakOpPauseMax  = 300 * time.Millisecond
	soakKillEvery   = 15 // a kill every 15-50 operations (about 3-9s)
	soakKillSpread  = 35
	soakDownMin     = 1 // a killed process is down for 1-12 operations
	soakDownSpread  = 11
	soakSettleBound = 4 * time.Minute
)

var classes = []v1alpha1.SandboxClass{v1alpha1.SandboxClassGVisor, v1alpha1.SandboxClassMicroVM}

type soakConfig struct {
	name         string
	class        v1alpha1.SandboxClass
	classDefault bool
	deleted      bool
}

type soakPool struct {
	ns, name string
	class    v1alpha1.SandboxClass
	pinned   string
	exists   bool
}

// soak is the chaos soak's model of what it made, and its counters. The
// model only picks plausible operations; the checker judges the cluster.
type soak struct {
	t       *testing.T
	ctx     context.Context
	rng     *rand.Rand
	prefix  string
	nss     []string
	configs []*soakConfig
	pools   []*soakPool
	nextCfg int
	nextPl  int
	ops     map[string]int
	refused int
}

// TestChaosSoak runs random changes for -soak (90s by default): configs of
// both classes created, deleted, annotated and un-annotated as class
// default; pools over several namespaces pinned, unpinned, re-pinned
// (sometimes to a config of the other class or one that does not exist),
// scaled, deleted and created; interleaved with SIGKILLs of the worker and
// the starter (real subprocesses), restarted after a moment. Then it waits
// for the cluster to settle and checks P1-P6 over everything the watch saw.
// Seeded by -seed (random by default, and printed) so a failure replays.
func TestChaosSoak(t *testing.T) {
	isolate(t)
	env := testenv.Current()
	seed := *soakSeed
	if seed == 0 {
		seed = time.Now().UnixNano()
	}
	t.Logf("soak: seed %d, %s; replay with: go -C test test ./crashtest -run 'TestChaosSoak$' -v -seed %d -soak %s",
		seed, *soakFor, seed, *soakFor)
	s := &soak{t: t, ctx: context.Background(), rng: rand.New(rand.NewPCG(uint64(seed), 0x9e3779b97f4a7c15)),
		prefix: "soak" + shortID(), ops: map[string]int{}}
	for range soakNamespaces {
		s.nss = append(s.nss, env.Namespace(t))
	}
	chk := startChecker(t)
	p := startProduct(t)
	scope := Scope{Namespaces: s.nss, Configs: prefixed(s.prefix), TaskQueues: []string{p.taskQueue}}

	for _, class := range classes {
		for i := range 4 {
			s.createConfig(class, i < 2)
		}
	}
	for range 24 {
		s.createPool()
	}
	for k := range s.ops {
		delete(s.ops, k) // count the chaos only
	}

	// Kills and restarts are scheduled by operation count, not time, so a
	// seed replays the same sequence of changes and kills (only how many
	// fit in -soak depends on the machine).
	kills := map[string]int{}
	procs := map[string]*process{"worker": p.worker, "starter": p.starter}
	restartAt := map[string]int{}
	nextKill := soakKillEvery + s.rng.IntN(soakKillSpread+1)
	began := time.Now()
	for i := 0; time.Since(began) < *soakFor; i++ {
		for _, role := range []string{"worker", "starter"} {
			if at, down := restartAt[role]; down && i >= at {
				procs[role].Start()
				delete(restartAt, role)
			}
		}
		if i >= nextKill {
			role := "worker"
			if s.rng.IntN(5) < 2 {
				role = "starter"
			}
			if procs[role].Running() {
				procs[role].Kill()
				kills[role]++
				restartAt[role] = i + soakDownMin + s.rng.IntN(soakDownSpread+1)
			}
			nextKill = i + soakKillEvery + s.rng.IntN(soakKillSpread+1)
		}
		s.step()
		time.Sleep(s.jitter(soakOpPauseMin, soakOpPauseMax-soakOpPauseMin)) // pacing of the chaos, not synchronisation
	}
	lastOp := time.Now()
	for role := range restartAt {
		procs[role].Start()
	}

	checkFrom := time.Now()
	rep := chk.Check(s.ctx, scope, soakSettleBound)
	converged := checkFrom.Sub(lastOp) + rep.Waited
	total := 0
	var opList []string
	for op, n := range s.ops {
		total += n
		opList = append(opList, fmt.Sprintf("%s %d", op, n))
	}
	sort.Strings(opList)
	summary := []string{
		fmt.Sprintf("soak: seed %d, %s of chaos: %d operations (%s; %d refused by the API server, e.g. a pool deleted meanwhile)",
			seed, *soakFor, total, strings.Join(opList, ", "), s.refused),
		fmt.Sprintf("soak: %d kills (worker %d, starter %d); %d switches (%d rolled back); %d releases; %d object states seen (%d after a watch gap)",
			kills["worker"]+kills["starter"], kills["worker"], kills["starter"], rep.Switches, rep.RolledBack, rep.Releases, rep.Records, rep.Gaps),
		fmt.Sprintf("soak: %d violations; converged %s after the last operation (settled=%v)",
			len(rep.Violations), converged.Round(time.Millisecond), rep.Converged),
	}
	for _, line := range summary {
		t.Log(line)
	}
	// go test shows a passing package's log only with -v; make test asks
	// for the summary in a file and prints it, so every CI log has it.
	if path := os.Getenv(envSoakSummary); path != "" {
		require.NoError(t, os.WriteFile(path, []byte(strings.Join(summary, "\n")+"\n"), 0o644), "writing the soak summary")
	}
	for _, v := range rep.Violations {
		t.Errorf("violation: %s", v)
	}
	require.NoError(t, chk.Err())
	if t.Failed() {
		t.Logf("soak: replay with -seed %d -soak %s", seed, *soakFor)
	}
}

// envSoakSummary names a file TestChaosSoak writes its summary to.
const envSoakSummary = "ATE_SOAK_SUMMARY"

func (s *soak) jitter(base, spread time.Duration) time.Duration {
	return base + time.Duration(s.rng.Int64N(int64(spread)+1))
}

// do runs one change; the API server may refuse it when the model is
// behind (a pool deleted, a conflict): that is counted, not a failure.
func (s *soak) do(op string, err error) bool {
	s.t.Helper()
	switch {
	case err == nil:
		s.ops[op]++
		return true
	case apierrors.IsNotFound(err), apierrors.IsConflict(err), apierrors.IsAlreadyExists(err):
		s.refused++
		return false
	}
	s.t.Fatalf("soak: %s: %v", op, err)
	return false
}

func (s *soak) live(class v1alpha1.SandboxClass) []*soakConfig {
	var out []*soakConfig
	for _, c := range s.configs {
		if !c.deleted && (class == "" || c.class == class) {
			out = append(out, c)
		}
	}
	return out
}

func (s *soak) existing() []*soakPool {
	var out []*soakPool
	for _, p := range s.pools {
		if p.exists {
			out = append(out, p)
		}
	}
	return out
}

func pick[T any](rng *rand.Rand, xs []T) (T, bool) {
	var zero T
	if len(xs) == 0 {
		return zero, false
	}
	return xs[rng.IntN(len(xs))], true
}

// step makes one random change.
func (s *soak) step() {
	type op struct {
		weight int
		run    func()
	}
	ops := []op{
		{8, func() { s.createConfig(classes[s.rng.IntN(2)], s.rng.IntN(2) == 0) }},
		{6, s.deleteConfig},
		{8, func() { s.annotate(true) }},
		{6, func() { s.annotate(false) }},
		{8, s.pin},
		{6, s.unpin},
		{8, s.repin},
		{8, s.scale},
		{4, s.deletePool},
		{5, s.createPool},
	}
	total := 0
	for _, o := range ops {
		total += o.weight
	}
	n := s.rng.IntN(total)
	for _, o := range ops {
		if n < o.weight {
			o.run()
			return
		}
		n -= o.weight
	}
}

func (s *soak) createConfig(class v1alpha1.SandboxClass, classDefault bool) {
	if len(s.live(class)) >= soakConfigsMax {
		return
	}
	s.nextCfg++
	c := &soakConfig{name: fmt.Sprintf("%s-%s%d", s.prefix, string(class)[:1], s.nextCfg), class: class, classDefault: classDefault}
	if s.do("create config", testenv.Current().Kube.Create(s.ctx, configOf(class, c.name, classDefault))) {
		s.configs = append(s.configs, c)
	}
}

func (s *soak) deleteConfig() {
	class := classes[s.rng.IntN(2)]
	live := s.live(class)
	if len(live) <= soakConfigsMin {
		return
	}
	c, _ := pick(s.rng, live)
	c.deleted = true // deleted, or already gone
	s.do("delete config", testenv.Current().Kube.Delete(s.ctx, configOf(c.class, c.name, false)))
}

func (s *soak) annotate(classDefault bool) {
	var candidates []*soakConfig
	for _, c := range s.live("") {
		if c.classDefault != classDefault {
			candidates = append(candidates, c)
		}
	}
	c, ok := pick(s.rng, candidates)
	if !ok {
		return
	}
	op := "annotate default"
	if !classDefault {
		op = "un-annotate default"
	}
	if s.do(op, patchDefault(s.ctx, testenv.Current().Kube, c.name, classDefault)) {
		c.classDefault = classDefault
	}
}

// target is a config to pin a pool of class to: mostly a live one of the
// class, sometimes one of the other class, deleted, or never made.
func (s *soak) target(class v1alpha1.SandboxClass) string {
	switch n := s.rng.IntN(10); {
	case n == 0:
		return fmt.Sprintf("%s-never%d", s.prefix, s.rng.IntN(3))
	case n == 1:
		if c, ok := pick(s.rng, s.configs); ok {
			return c.name // any class, maybe deleted
		}
	}
	if c, ok := pick(s.rng, s.live(class)); ok {
		return c.name
	}
	return fmt.Sprintf("%s-never0", s.prefix)
}

func (s *soak) poolWhere(cond func(*soakPool) bool) (*soakPool, bool) {
	var out []*soakPool
	for _, p := range s.existing() {
		if cond(p) {
			out = append(out, p)
		}
	}
	return pick(s.rng, out)
}

func (s *soak) patch(op string, p *soakPool, mutate func(*v1alpha1.WorkerPool)) bool {
	err := patchPool(s.ctx, testenv.Current().Kube, p.ns, p.name, mutate)
	if apierrors.IsNotFound(err) {
		p.exists = false
	}
	return s.do(op, err)
}

func (s *soak) pin() {
	if p, ok := s.poolWhere(func(p *soakPool) bool { return p.pinned == "" }); ok {
		target := s.target(p.class)
		if s.patch("pin", p, pin(target)) {
			p.pinned = target
		}
	}
}

func (s *soak) unpin() {
	if p, ok := s.poolWhere(func(p *soakPool) bool { return p.pinned != "" }); ok {
		if s.patch("unpin", p, pin("")) {
			p.pinned = ""
		}
	}
}

func (s *soak) repin() {
	if p, ok := s.poolWhere(func(p *soakPool) bool { return p.pinned != "" }); ok {
		target := s.target(p.class)
		if s.patch("re-pin", p, pin(target)) {
			p.pinned = target
		}
	}
}

func (s *soak) scale() {
	if p, ok := s.poolWhere(func(*soakPool) bool { return true }); ok {
		s.patch("scale", p, scale(int32(s.rng.IntN(4))))
	}
}

func (s *soak) deletePool() {
	if len(s.existing()) <= soakPoolsMin {
		return
	}
	p, _ := pick(s.rng, s.existing())
	p.exists = false
	s.do("delete pool", testenv.Current().Kube.Delete(s.ctx, newPool(p.ns, p.name, p.class, "")))
}

// createPool creates a pool, sometimes under the name of one deleted
// before: a new incarnation that the old one's workflow must not confuse.
func (s *soak) createPool() {
	if len(s.existing()) >= soakPoolsMax {
		return
	}
	var gone []*soakPool
	for _, p := range s.pools {
		if !p.exists {
			gone = append(gone, p)
		}
	}
	p, reuse := pick(s.rng, gone)
	if !reuse || s.rng.IntN(10) >= 3 {
		s.nextPl++
		p = &soakPool{ns: s.nss[s.rng.IntN(len(s.nss))], name: fmt.Sprintf("p%d", s.nextPl), class: classes[s.rng.IntN(3)/2]}
		s.pools = append(s.pools, p)
	}
	p.pinned = ""
	if s.rng.IntN(3) == 0 {
		p.pinned = s.target(p.class)
	}
	wp := newPool(p.ns, p.name, p.class, p.pinned)
	wp.Spec.Replicas = ptr(int32(s.rng.IntN(3)))
	if s.do("create pool", testenv.Current().Kube.Create(s.ctx, wp)) {
		p.exists = true
	}
}
