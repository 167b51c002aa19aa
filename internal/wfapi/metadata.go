package wfapi

import (
	"fmt"
	"strconv"
	"strings"
)

// The user metadata the Web UI shows for each workflow: a one-line
// summary and fixed details given at start (StaticSummary, StaticDetails),
// and the current details a running workflow sets (the step it is at, then
// its outcome). None of it is part of a workflow's commands.

// SwitchStaticSummary is the one line the Web UI shows for a switch, in
// its list and on its page, e.g.
// `[prod-eu-1] ate-demo/counter: gvisor "gvisor-default" → "gvisor-default-v2"`:
// the cluster first, so that a fleet's switches on one Temporal namespace
// read apart.
func SwitchStaticSummary(cluster Cluster, in SwitchInput) string {
	switch {
	case !in.IsMove():
		return fmt.Sprintf("[%s] %s: re-resolve on request", cluster, in.Pool)
	case in.To == "":
		return fmt.Sprintf("[%s] %s: %s: clear the stale claim on %q", cluster, in.Pool, in.Class, in.Abandon)
	case in.From == "":
		return fmt.Sprintf("[%s] %s: %s → %q", cluster, in.Pool, in.Class, in.To)
	}
	return fmt.Sprintf("[%s] %s: %s %q → %q", cluster, in.Pool, in.Class, in.From, in.To)
}

// SwitchStaticDetails are the fixed details of a switch's start: what the
// starter planned it on.
func SwitchStaticDetails(in SwitchInput) string {
	if !in.IsMove() {
		return details(
			"WorkerPool", in.Pool.String(),
			"started by", "an operator's re-resolution: the switch decides its move on a live read")
	}
	from := fmt.Sprintf("%q", in.From)
	switch {
	case in.From == "":
		from = "none (first resolution)"
	case in.FromDeleting:
		from += " (in deletion)"
	}
	to := fmt.Sprintf("%q", in.To)
	if in.To == "" {
		to = fmt.Sprintf("none: clears the stale claim on %q", in.Abandon)
	}
	return details(
		"WorkerPool", in.Pool.String(),
		"pool UID", in.Pool.UID,
		"sandbox class", string(in.Class),
		"from", from,
		"to", to,
		"planned on", fmt.Sprintf("generation %d, resourceVersion %s", in.Generation, in.PoolResourceVersion),
		"started by", "the starter: the pool's next move")
}

// ReleaseStaticSummary is the one line the Web UI shows for a release.
func ReleaseStaticSummary(cluster Cluster, config string) string {
	return fmt.Sprintf("[%s] %s: release once no WorkerPool uses it", cluster, config)
}

// details formats pairs of names and values as a Markdown list, leaving
// out the empty values.
func details(pairs ...string) string {
	var lines []string
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i+1] != "" {
			lines = append(lines, fmt.Sprintf("- **%s**: %s", pairs[i], pairs[i+1]))
		}
	}
	return strings.Join(lines, "\n")
}

// Details are a switch's current details: the step it is at and its move
// while it runs, its outcome once it is done.
func (s SwitchState) Details() string {
	move := ""
	switch {
	case s.To != "" && s.From != "":
		move = fmt.Sprintf("%s %q → %q", s.Class, s.From, s.To)
	case s.To != "":
		move = fmt.Sprintf("%s → %q", s.Class, s.To)
	case s.Abandon != "":
		move = fmt.Sprintf("%s: clear the stale claim on %q", s.Class, s.Abandon)
	}
	if s.Outcome != "" {
		return details("outcome", s.Outcome, "move", move)
	}
	return details("step", s.Step, "move", move)
}

// Details are a release's current details: its last look's result.
func (s ReleaseState) Details() string {
	users := ""
	if s.UserCount > 0 {
		users = fmt.Sprintf("%d, e.g. %s", s.UserCount, strings.Join(s.Users, ", "))
	}
	return details("outcome", s.Outcome, "looks", strconv.Itoa(s.Checks), "WorkerPools using it", users)
}
