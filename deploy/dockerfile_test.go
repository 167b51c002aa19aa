package deploy_test

import (
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// instruction is one Dockerfile instruction, continuation lines joined.
type instruction struct {
	cmd  string // upper case: FROM, RUN, COPY...
	args string
}

// stage is one build stage of a Dockerfile.
type stage struct {
	name, from string
	instrs     []instruction
}

// dockerfile is the repository's Dockerfile: its ARGs before the first
// FROM, and its stages.
type dockerfile struct {
	globalArgs map[string]string
	stages     []*stage
}

func parseDockerfile(t testing.TB) *dockerfile {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	df := &dockerfile{globalArgs: map[string]string{}}
	var cur *stage
	var line string
	for _, l := range strings.Split(string(b), "\n") {
		trimmed := strings.TrimSpace(l)
		if line == "" && (trimmed == "" || strings.HasPrefix(trimmed, "#")) {
			continue
		}
		if strings.HasPrefix(trimmed, "#") { // a comment inside a continued instruction
			continue
		}
		if strings.HasSuffix(trimmed, `\`) {
			line += strings.TrimSuffix(trimmed, `\`) + " "
			continue
		}
		line += trimmed
		cmd, args, _ := strings.Cut(line, " ")
		in := instruction{cmd: strings.ToUpper(cmd), args: strings.TrimSpace(args)}
		line = ""
		switch {
		case in.cmd == "FROM":
			f := strings.Fields(in.args)
			f = slices.DeleteFunc(f, func(s string) bool { return strings.HasPrefix(s, "--platform=") })
			cur = &stage{from: f[0]}
			if len(f) == 3 && strings.EqualFold(f[1], "AS") {
				cur.name = f[2]
			}
			df.stages = append(df.stages, cur)
		case cur == nil && in.cmd == "ARG":
			k, v, _ := strings.Cut(in.args, "=")
			df.globalArgs[k] = v
		case cur != nil:
			cur.instrs = append(cur.instrs, in)
		}
	}
	if len(df.stages) == 0 {
		t.Fatal("the Dockerfile has no FROM")
	}
	return df
}

// stage returns the stage named name, or nil.
func (df *dockerfile) stage(name string) *stage {
	for _, s := range df.stages {
		if s.name == name {
			return s
		}
	}
	return nil
}

// chain returns a stage and the stages it is built FROM, the stage first.
func (df *dockerfile) chain(s *stage) []*stage {
	var c []*stage
	for s != nil && !slices.Contains(c, s) {
		c = append(c, s)
		s = df.stage(s.from)
	}
	return c
}

// base is the image a stage starts from, through the stages it is built on.
func (df *dockerfile) base(s *stage) string {
	c := df.chain(s)
	return c[len(c)-1].from
}

// binaries are the paths of the commands an image target contains: what
// the COPY --from instructions of its stages copy into a directory.
func (df *dockerfile) binaries(s *stage) []string {
	var bins []string
	for _, st := range df.chain(s) {
		for _, in := range st.instrs {
			if in.cmd != "COPY" || !strings.HasPrefix(in.args, "--from=") {
				continue
			}
			f := strings.Fields(in.args)[1:]
			dst, srcs := f[len(f)-1], f[:len(f)-1]
			if len(srcs) == 1 && !strings.HasSuffix(dst, "/") { // COPY a b: b is the file
				bins = append(bins, dst)
				continue
			}
			for _, src := range srcs {
				bins = append(bins, path.Join(dst, path.Base(src)))
			}
		}
	}
	return bins
}

// user is the USER of a stage, through the stages it is built on.
func (df *dockerfile) user(s *stage) string {
	for _, st := range df.chain(s) {
		for i := len(st.instrs) - 1; i >= 0; i-- {
			if st.instrs[i].cmd == "USER" {
				return st.instrs[i].args
			}
		}
	}
	return ""
}

var goBuildPackages = regexp.MustCompile(`(?:^|\s)(\./[\w./-]+)`)

// built lists the packages the builder's `go build` compiles.
func (df *dockerfile) built(t testing.TB) (pkgs []string, env string) {
	t.Helper()
	for _, s := range df.stages {
		for _, in := range s.instrs {
			if in.cmd == "ENV" {
				env += in.args + " "
			}
			if in.cmd != "RUN" {
				continue
			}
			_, after, ok := strings.Cut(in.args, "go build")
			if !ok {
				continue
			}
			env += in.args
			for _, m := range goBuildPackages.FindAllStringSubmatch(after, -1) {
				pkgs = append(pkgs, m[1])
			}
		}
	}
	if len(pkgs) == 0 {
		t.Fatal("the Dockerfile runs no `go build ./...` of the commands")
	}
	return pkgs, env
}

// imageCommands are the commands of the production image (the default,
// last, target) and of the target docker-compose.yaml builds.
func imageCommands(t testing.TB, target string) []string {
	t.Helper()
	df := parseDockerfile(t)
	s := df.stages[len(df.stages)-1]
	if target != "" {
		if s = df.stage(target); s == nil {
			t.Fatalf("the Dockerfile has no stage %q", target)
		}
	}
	return df.binaries(s)
}

func TestDockerfile(t *testing.T) {
	root := repoRoot(t)
	df := parseDockerfile(t)

	// The builder is the Go of go.mod.
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	goVersion := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(gomod)
	builder := df.stages[0]
	from := strings.ReplaceAll(builder.from, "${GO_VERSION}", df.globalArgs["GO_VERSION"])
	if want := "golang:" + string(goVersion[1]); from != want {
		t.Errorf("the builder is FROM %s, want %s (go.mod says go %s)", from, want, goVersion[1])
	}

	// It builds every command, statically.
	pkgs, env := df.built(t)
	for _, cmd := range []string{"./cmd/worker", "./cmd/starter", "./cmd/teardown"} {
		if !slices.Contains(pkgs, cmd) {
			t.Errorf("the Dockerfile builds %v, not %s", pkgs, cmd)
		}
	}
	for _, p := range pkgs {
		src, err := os.ReadFile(filepath.Join(root, p, "main.go"))
		if err != nil || !regexp.MustCompile(`(?m)^package main$`).Match(src) {
			t.Errorf("the Dockerfile builds %s, which is not a command (main.go of package main): %v", p, err)
		}
	}
	// The binaries print the version the build argument VERSION names
	// (`make image` passes git describe), declared in the builder's stage
	// where the go build reads it.
	if !regexp.MustCompile(`-X ate\.dev/orchestrator/internal/version\.Version=\$\{?VERSION\}?`).MatchString(env) {
		t.Error("the Dockerfile's go build does not set internal/version.Version from the VERSION build argument (-ldflags -X)")
	}
	if !slices.ContainsFunc(builder.instrs, func(in instruction) bool { return in.cmd == "ARG" && strings.HasPrefix(in.args, "VERSION") }) {
		t.Error("the Dockerfile's builder stage declares no ARG VERSION")
	}
	if !strings.Contains(env, "CGO_ENABLED=0") {
		t.Error("the Dockerfile does not build with CGO_ENABLED=0: the binaries would not run on distroless/static")
	}

	// The production image: distroless, non-root, the three commands.
	final := df.stages[len(df.stages)-1]
	if base := df.base(final); base != "gcr.io/distroless/static:nonroot" {
		t.Errorf("the production image is based on %s, want gcr.io/distroless/static:nonroot", base)
	}
	if u := df.user(final); u != "65532" && !strings.HasPrefix(u, "65532:") {
		t.Errorf("the production image runs as USER %q, want 65532 (numeric, for runAsNonRoot)", u)
	}
	bins := df.binaries(final)
	for _, want := range []string{"/usr/local/bin/worker", "/usr/local/bin/starter", "/usr/local/bin/teardown"} {
		if !slices.Contains(bins, want) {
			t.Errorf("the production image has %v, not %s", bins, want)
		}
	}
	if slices.Contains(bins, "/usr/local/bin/httpprobe") {
		t.Error("the production image has the compose healthcheck's httpprobe; only the compose target should")
	}

	// .dockerignore keeps what the build needs.
	ignore, err := os.ReadFile(filepath.Join(root, ".dockerignore"))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(ignore), "\n") {
		l = strings.TrimSpace(l)
		for _, needed := range append([]string{"go.mod", "go.sum", "internal", "api"}, pkgs...) {
			if l != "" && !strings.HasPrefix(l, "#") && strings.TrimPrefix(path.Clean(needed), "./") == strings.TrimSuffix(l, "/") {
				t.Errorf(".dockerignore excludes %s, which the build needs", l)
			}
		}
	}
}
