package deploy_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"ate.dev/orchestrator/hack/release/pkg/release"
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
	return parseDockerfileText(t, string(b))
}

func parseDockerfileText(t testing.TB, text string) *dockerfile {
	t.Helper()
	df := &dockerfile{globalArgs: map[string]string{}}
	var cur *stage
	var line string
	for _, l := range strings.Split(text, "\n") {
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

	// The builder is the Go of go.mod's toolchain line, the one make and CI build with.
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	goVersion := regexp.MustCompile(`(?m)^toolchain go(\d+\.\d+\.\d+)$`).FindSubmatch(gomod)
	if goVersion == nil {
		t.Fatal("go.mod has no toolchain line")
	}
	builder := df.stages[0]
	from := strings.ReplaceAll(builder.from, "${GO_VERSION}", df.globalArgs["GO_VERSION"])
	if want := "golang:" + string(goVersion[1]); from != want {
		t.Errorf("the builder is FROM %s, want %s (go.mod says toolchain go%s)", from, want, goVersion[1])
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
	// where the go build reads it (the flags themselves are the release's:
	// TestDockerfileIsTheReleaseImage).
	if !slices.ContainsFunc(builder.instrs, func(in instruction) bool { return in.cmd == "ARG" && strings.HasPrefix(in.args, "VERSION") }) {
		t.Error("the Dockerfile's builder stage declares no ARG VERSION")
	}
	if !strings.Contains(env, "CGO_ENABLED=0") {
		t.Error("the Dockerfile does not build with CGO_ENABLED=0: the binaries would not run on distroless/static")
	}

	// The production image's base, user, command and commands are the
	// release's (TestDockerfileIsTheReleaseImage); the compose stage's probe
	// stays out of it.
	if slices.Contains(df.binaries(df.stages[len(df.stages)-1]), "/usr/local/bin/httpprobe") {
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

// cmd is the CMD of a stage (exec form), through the stages it is built on.
func (df *dockerfile) cmd(s *stage) ([]string, error) {
	for _, st := range df.chain(s) {
		for i := len(st.instrs) - 1; i >= 0; i-- {
			if st.instrs[i].cmd == "CMD" {
				var c []string
				if err := json.Unmarshal([]byte(st.instrs[i].args), &c); err != nil {
					return nil, fmt.Errorf("CMD %s is not in exec form: %w", st.instrs[i].args, err)
				}
				return c, nil
			}
		}
	}
	return nil, nil
}

var labelPair = regexp.MustCompile(`([\w./-]+)=(?:"([^"]*)"|(\S+))`)

// labels are the LABELs of a stage and the stages it is built on.
func (df *dockerfile) labels(s *stage) map[string]string {
	out := map[string]string{}
	c := df.chain(s)
	for i := len(c) - 1; i >= 0; i-- { // the base first, so that a later LABEL wins
		for _, in := range c[i].instrs {
			if in.cmd != "LABEL" {
				continue
			}
			for _, m := range labelPair.FindAllStringSubmatch(in.args, -1) {
				out[m[1]] = m[2] + m[3]
			}
		}
	}
	return out
}

// goBuildRun is the text of the RUN instruction that runs go build.
func (df *dockerfile) goBuildRun() string {
	for _, s := range df.stages {
		for _, in := range s.instrs {
			if in.cmd == "RUN" && strings.Contains(in.args, "go build") {
				return in.args
			}
		}
	}
	return ""
}

// releaseDivergences lists how the Dockerfile's production image (the
// default, last, target) differs from the release image, whose facts
// hack/release/pkg/release holds: the one recipe of the image, which the
// Dockerfile repeats for docker (docs/decisions/0009-tooling-layout.md).
func releaseDivergences(df *dockerfile) []string {
	var out []string
	final := df.stages[len(df.stages)-1]
	if base := df.base(final); base != release.Base {
		out = append(out, fmt.Sprintf("the image is FROM %s; the release's rootfs reproduces %s", base, release.Base))
	}
	if u := df.user(final); u != release.User {
		out = append(out, fmt.Sprintf("USER %q; the release image's user is %q", u, release.User))
	}
	if c, err := df.cmd(final); err != nil || !slices.Equal(c, release.DefaultCmd) {
		out = append(out, fmt.Sprintf("CMD %q (%v); the release image's is %q", c, err, release.DefaultCmd))
	}
	var want []string
	for _, p := range release.Programs {
		want = append(want, path.Join(release.BinDir, p))
	}
	if got := df.binaries(final); !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want))) {
		out = append(out, fmt.Sprintf("the image has %v; the release image has %v", got, want))
	}
	// The go build: the release's packages, flags and linker flags, with
	// the version from the build argument.
	run := df.goBuildRun()
	args := release.BuildArgs("${VERSION}", "/out")
	for i, a := range args {
		switch {
		case a == "build", a == "-o", i > 0 && args[i-1] == "-o":
		case strings.HasPrefix(a, "-ldflags="):
			if ld := strings.TrimPrefix(a, "-ldflags="); !strings.Contains(run, `-ldflags="`+ld+`"`) {
				out = append(out, fmt.Sprintf(`the go build has no -ldflags="%s" (the release's)`, ld))
			}
		case !slices.Contains(strings.Fields(run), a):
			out = append(out, fmt.Sprintf("the go build has no %s (the release's build has)", a))
		}
	}
	l := df.labels(final)
	for k, v := range map[string]string{
		release.AnnotationTitle:       release.Title,
		release.AnnotationDescription: release.Description,
		release.AnnotationLicenses:    release.License,
		release.AnnotationVersion:     "${VERSION}",
	} {
		if l[k] != v {
			out = append(out, fmt.Sprintf("LABEL %s=%q; the release image's is %q", k, l[k], v))
		}
	}
	return out
}

// TestDockerfileIsTheReleaseImage checks the Dockerfile against the release
// image's facts, and that the check sees a Dockerfile drift from them.
func TestDockerfileIsTheReleaseImage(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	if d := releaseDivergences(parseDockerfileText(t, text)); len(d) > 0 {
		t.Errorf("the Dockerfile's image is not the release image:\n%s", strings.Join(d, "\n"))
	}
	for _, tc := range []struct{ name, old, new string }{
		{"another base", "FROM gcr.io/distroless/static:nonroot AS runtime", "FROM gcr.io/distroless/base:nonroot AS runtime"},
		{"another user", "USER 65532:65532", "USER 65532"},
		{"another command", `CMD ["/usr/local/bin/worker"]`, `CMD ["/usr/local/bin/starter"]`},
		{"a binary less", "/out/starter /out/teardown /usr/local/bin/", "/out/starter /usr/local/bin/"},
		{"no -trimpath", "go build -trimpath", "go build"},
		{"symbols kept", `-ldflags="-s -w -X`, `-ldflags="-X`},
		{"a command less built", "./cmd/teardown", ""},
		{"another description", "org.opencontainers.image.description=", "org.opencontainers.image.summary="},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(text, tc.old) {
				t.Fatalf("the Dockerfile has no %q to change", tc.old)
			}
			if d := releaseDivergences(parseDockerfileText(t, strings.Replace(text, tc.old, tc.new, 1))); len(d) == 0 {
				t.Errorf("with %q for %q, the Dockerfile still passes for the release image", tc.new, tc.old)
			}
		})
	}
}
