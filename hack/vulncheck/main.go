// Command vulncheck reads `govulncheck -format json` on standard input and
// fails when the code can reach a known vulnerability: it lists each one
// once, with its module and the version that fixes it. Vulnerabilities only
// imported or required, never called, are not reported (govulncheck's own
// text output says so too).
//
// With -stdlib=warn, a vulnerability of the Go standard library is printed
// as a warning instead: it is fixed by building with a newer Go, which is
// the machine's toolchain, not a change of this repository (`make verify`
// uses it; `make vulncheck` fails on both).
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
)

// message is one object of govulncheck's JSON stream; only findings matter.
type message struct {
	Finding *struct {
		OSV          string `json:"osv"`
		FixedVersion string `json:"fixed_version"`
		Trace        []struct {
			Module   string `json:"module"`
			Version  string `json:"version"`
			Package  string `json:"package"`
			Function string `json:"function"`
		} `json:"trace"`
	} `json:"finding"`
}

type vuln struct{ id, module, version, fixed string }

func main() {
	stdlib := flag.String("stdlib", "fail", "fail or warn: what a reachable vulnerability of the Go standard library does")
	flag.Parse()
	if *stdlib != "fail" && *stdlib != "warn" {
		fmt.Fprintln(os.Stderr, "vulncheck: -stdlib is fail or warn")
		os.Exit(2)
	}
	vulns, err := reachable(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "vulncheck: reading govulncheck's JSON:", err)
		os.Exit(2)
	}
	failed := false
	for _, v := range vulns {
		level := "FAIL"
		if v.module == "stdlib" && *stdlib == "warn" {
			level = "warning (build with Go " + strings.TrimPrefix(v.fixed, "v") + " or later)"
		} else {
			failed = true
		}
		fmt.Printf("%s: %s in %s %s, fixed in %s: https://pkg.go.dev/vuln/%s\n", level, v.id, v.module, v.version, v.fixed, v.id)
	}
	if failed {
		fmt.Println("the code calls the vulnerable functions above: upgrade the module (go get MODULE@FIXED) or the Go toolchain; govulncheck -show traces shows the calls")
		os.Exit(1)
	}
	fmt.Printf("vulncheck: no reachable vulnerability%s\n", map[bool]string{true: " but the standard library's above", false: ""}[len(vulns) > 0])
}

// reachable are the vulnerabilities whose findings reach a function (the
// code calls it), each once, sorted.
func reachable(r io.Reader) ([]vuln, error) {
	dec := json.NewDecoder(r)
	seen := map[string]vuln{}
	for {
		var m message
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, err
		}
		f := m.Finding
		if f == nil || len(f.Trace) == 0 || f.Trace[0].Function == "" {
			continue
		}
		t := f.Trace[0]
		seen[f.OSV] = vuln{id: f.OSV, module: t.Module, version: t.Version, fixed: f.FixedVersion}
	}
	out := slices.Collect(maps.Values(seen))
	slices.SortFunc(out, func(a, b vuln) int { return strings.Compare(a.id, b.id) })
	return out, nil
}
