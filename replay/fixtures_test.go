package replay

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/temporalproto"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/workflow"

	"ate.dev/orchestrator/internal/wfapi"
)

// Version is the workflow-code version the recorder writes fixtures for.
// Bump it (v1 → v2 …) whenever a change to workflows/ changes the commands a
// workflow issues, and record the new version's fixtures next to the old
// ones, which stay: they are the histories still open in clusters running
// the old code.
const Version = "v5"

// firstVersions is where the corpus begins, per workflow kind: v1, the
// shapes the first release ships. Every shape before them was replaced
// before any release, and its fixtures deleted with it
// (docs/decisions/0003, 0007, 0008 and 0010); from v1 on, every fixture is
// kept and replayed for as long as its shape may run.
var firstVersions = map[string]int{"switch": 1, "release": 1, "rollout": 1, "operator": 1}

// shapeVersions is, per workflow kind, the version whose fixtures record
// the kind's current shape: the code version at which its workflow last
// changed its commands. The recorder records a kind's fixtures only when
// that is Version; a kind whose workflow did not change when Version was
// bumped keeps its fixtures of the older version, which replay with
// today's code (TestReplay), and is not recorded again under the new
// name. Bump a kind's entry to Version when its workflow changes.
// rollout is at v5: the counts kept current while it waits on other than
// its pools (workflows.countsChange: KeepRolloutCounts); its v4 fixtures
// replay without that marker. At v4: a step's metric analysis and rollback
// (workflows.analysisChange: MeasureRollout rounds, RolledBack) and the
// wait for other clusters (workflows.afterChange); its v3 fixtures (the
// driven rollout, workflows.driveChange) replay without those markers, its
// v2 fixtures (the planner's) without driveChange's, its v1 fixtures
// through rolloutV1.
var shapeVersions = map[string]int{"switch": 1, "release": 1, "rollout": 5, "operator": 1}

// recordsKind reports whether the recorder records fixtures of kind
// under Version.
func recordsKind(kind string) bool { return shapeVersions[kind] == versionNumber(Version) }

// Dir is where the fixtures live, relative to this package.
const Dir = "testdata"

// Workflow kinds, the first part of a fixture's name, and their workflow
// types.
var workflowTypes = map[string]string{
	"switch":   wfapi.SwitchWorkflow,
	"release":  wfapi.ReleaseWorkflow,
	"rollout":  wfapi.RolloutWorkflow,
	"operator": wfapi.OperatorWorkflow,
}

// fixtureName is <kind>-<scenario>.v<N>.json; the kind is one of
// workflowTypes' (ParseFixture checks it).
var fixtureName = regexp.MustCompile(`^([a-z]+)-([a-z0-9]+(?:-[a-z0-9]+)*)\.v([1-9][0-9]*)\.json$`)

// fixtureKinds lists workflowTypes' kinds, for messages.
func fixtureKinds() string {
	return strings.Join(slices.Sorted(maps.Keys(workflowTypes)), "|")
}

// Fixture is one recorded history: <kind>-<scenario>.<version>.json, e.g.
// switch-confirmed.v1.json.
type Fixture struct {
	Path     string
	Kind     string // switch, release, rollout or operator
	Scenario string // e.g. walk
	Version  int    // 1 for v1
}

// Name is the file name without the version: switch-confirmed.
func (f Fixture) Name() string { return f.Kind + "-" + f.Scenario }

// WorkflowType is the registered type of the workflow the history is of.
func (f Fixture) WorkflowType() string { return workflowTypes[f.Kind] }

// ParseFixture parses a fixture's file name.
func ParseFixture(path string) (Fixture, error) {
	m := fixtureName.FindStringSubmatch(filepath.Base(path))
	if m == nil || workflowTypes[m[1]] == "" {
		return Fixture{}, fmt.Errorf("%s: a fixture is named <%s>-<scenario>.v<N>.json", path, fixtureKinds())
	}
	v, err := strconv.Atoi(m[3])
	if err != nil {
		return Fixture{}, fmt.Errorf("%s: version: %w", path, err)
	}
	if first := firstVersions[m[1]]; v < first {
		return Fixture{}, fmt.Errorf("%s: the corpus of %s fixtures begins with v%d (see firstVersions)", path, m[1], first)
	}
	return Fixture{Path: path, Kind: m[1], Scenario: m[2], Version: v}, nil
}

func versionNumber(v string) int {
	n, err := strconv.Atoi(v[1:])
	if len(v) < 2 || v[0] != 'v' || err != nil || n < 1 {
		panic(fmt.Sprintf("replay.Version %q is not v<N>", v))
	}
	return n
}

// Fixtures lists every fixture in dir, by name and version. A JSON file that
// is not named like a fixture (or like a fixture's execution file) is an
// error, so none is silently left out.
func Fixtures(dir string) ([]Fixture, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	var out []Fixture
	for _, p := range paths {
		if strings.HasSuffix(p, executionSuffix) {
			continue // a fixture's execution: see Fixture.Execution
		}
		f, err := ParseFixture(p)
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Name() != out[j].Name() {
			return out[i].Name() < out[j].Name()
		}
		return out[i].Version < out[j].Version
	})
	return out, nil
}

// ReadHistory loads a fixture the way the SDK's replayer does
// (client.HistoryFromJSON, which ReplayWorkflowHistoryFromJSONFile uses).
func ReadHistory(path string) (*historypb.History, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	h, err := client.HistoryFromJSON(f, client.HistoryJSONOptions{})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return h, nil
}

// ErrExists is returned by WriteFixture for a fixture that is already there.
var ErrExists = errors.New("fixture exists")

// Execution is the workflow execution a history was recorded from. The
// history does not name it (its WorkflowExecutionStarted event leaves the
// workflow ID out), and a switch reads its workflow ID to learn the pool it
// acts on: replayed under another ID it fails. So every fixture keeps its
// execution in a file of its own next to it,
// <kind>-<scenario>.v<N>.execution.json, written with the history and, like
// it, never overwritten.
type Execution struct {
	WorkflowID string `json:"workflowId"`
	RunID      string `json:"runId"`
}

// WorkflowExecution is the execution as the SDK's replayer takes it.
func (e Execution) WorkflowExecution() workflow.Execution {
	return workflow.Execution{ID: e.WorkflowID, RunID: e.RunID}
}

const executionSuffix = ".execution.json"

// ExecutionPath is where the fixture's execution is kept.
func (f Fixture) ExecutionPath() string {
	return strings.TrimSuffix(f.Path, ".json") + executionSuffix
}

// Execution reads the fixture's execution; a fixture without one is an
// error.
func (f Fixture) Execution() (Execution, error) {
	var exec Execution
	data, err := os.ReadFile(f.ExecutionPath())
	if err != nil {
		return Execution{}, fmt.Errorf("the execution of fixture %s: %w", f.Path, err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&exec); err != nil {
		return Execution{}, fmt.Errorf("%s: %w", f.ExecutionPath(), err)
	}
	if exec.WorkflowID == "" || exec.RunID == "" {
		return Execution{}, fmt.Errorf("%s: names no workflow ID or no run ID: %+v", f.ExecutionPath(), exec)
	}
	return exec, nil
}

// strayExecutions lists the execution files in dir that belong to no
// fixture, so a test can refuse them.
func strayExecutions(dir string, fixtures []Fixture) ([]string, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*"+executionSuffix))
	if err != nil {
		return nil, err
	}
	owned := map[string]bool{}
	for _, f := range fixtures {
		owned[f.ExecutionPath()] = true
	}
	var stray []string
	for _, p := range paths {
		if !owned[p] {
			stray = append(stray, p)
		}
	}
	return stray, nil
}

// WriteFixture writes a history as dir/<kind>-<scenario>.<Version>.json, in
// the JSON form of `temporal workflow show --output json` (protojson of
// temporal.api.history.v1.History, payloads in full), and the execution it
// was recorded from next to it (see Execution).
//
// It never overwrites: a fixture, once written, is the record of what that
// code version did, and re-recording it with later code would make the
// replay test check nothing. It refuses an existing file (ErrExists), and
// refuses to write at all when dir holds fixtures of a newer version than
// Version. To record new histories after changing a workflow, bump Version.
func WriteFixture(dir, kind, scenario string, exec Execution, h *historypb.History) (string, error) {
	path := FixturePath(dir, kind, scenario)
	fx, err := ParseFixture(path)
	if err != nil {
		return "", err
	}
	if exec.WorkflowID == "" || exec.RunID == "" {
		return "", fmt.Errorf("%s: a fixture keeps the execution it was recorded from, got %+v", path, exec)
	}
	existing, err := Fixtures(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	for _, e := range existing {
		if e.Version > versionNumber(Version) {
			return "", fmt.Errorf("%s is of a newer code version than replay.Version %s: refusing to record %s", e.Path, Version, path)
		}
	}
	if err := checkWorkflowType(fx, h); err != nil {
		return "", err
	}
	data, err := temporalproto.CustomJSONMarshalOptions{Indent: "  "}.Marshal(h)
	if err != nil {
		return "", fmt.Errorf("encoding the history for %s: %w", path, err)
	}
	// Check that what is written reads back to the same history.
	back, err := client.HistoryFromJSON(bytes.NewReader(data), client.HistoryJSONOptions{})
	if err != nil {
		return "", fmt.Errorf("%s does not read back: %w", path, err)
	}
	if len(back.Events) != len(h.Events) {
		return "", fmt.Errorf("%s reads back %d events of %d", path, len(back.Events), len(h.Events))
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("creating %s: %w", dir, err)
	}
	if _, err := os.Stat(fx.ExecutionPath()); err == nil {
		return "", fmt.Errorf("%s: %w: fixtures are never re-recorded; bump replay.Version to record new ones", fx.ExecutionPath(), ErrExists)
	}
	if err := writeNew(path, data); err != nil {
		return "", err
	}
	execData, err := json.MarshalIndent(exec, "", "  ")
	if err == nil {
		err = writeNew(fx.ExecutionPath(), execData)
	}
	if err != nil {
		_ = os.Remove(path)
		return "", fmt.Errorf("writing the execution of %s: %w", path, err)
	}
	return path, nil
}

// writeNew writes data and a newline to a file that must not exist yet.
func writeNew(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%s: %w: fixtures are never re-recorded; bump replay.Version to record new ones", path, ErrExists)
	}
	if err != nil {
		return fmt.Errorf("creating %s: %w", path, err)
	}
	_, werr := f.Write(append(data, '\n'))
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		_ = os.Remove(path)
		return fmt.Errorf("writing %s: %w", path, werr)
	}
	return nil
}

// removeFixture removes a fixture just written, and its execution: the
// recorder's way back when the written file does not replay.
func removeFixture(fx Fixture) {
	_ = os.Remove(fx.Path)
	_ = os.Remove(fx.ExecutionPath())
}

// FixturePath is where WriteFixture writes a scenario of the current Version.
func FixturePath(dir, kind, scenario string) string {
	return filepath.Join(dir, fmt.Sprintf("%s-%s.%s.json", kind, scenario, Version))
}

func checkWorkflowType(fx Fixture, h *historypb.History) error {
	if len(h.GetEvents()) == 0 {
		return fmt.Errorf("%s: empty history", fx.Path)
	}
	first := h.Events[0]
	if first.GetEventType() != enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED {
		return fmt.Errorf("%s: the first event is %s, not WorkflowExecutionStarted", fx.Path, first.GetEventType())
	}
	got := first.GetWorkflowExecutionStartedEventAttributes().GetWorkflowType().GetName()
	if got != fx.WorkflowType() {
		return fmt.Errorf("%s: the history is of workflow type %q, the name says %q", fx.Path, got, fx.WorkflowType())
	}
	return nil
}
