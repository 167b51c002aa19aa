package main

import (
	"cmp"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// memoryMiB reads a field of /proc/<pid>/status in kB (VmHWM: the peak
// resident set; VmRSS: the current one) and returns MiB.
func memoryMiB(pid int, field string) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			if err != nil {
				return 0, err
			}
			return kb / 1024, nil
		}
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", field, pid)
}

// clockTicks is USER_HZ, 100 on every Linux this runs on.
const clockTicks = 100

// cpuSeconds is the user+system CPU time a process has used.
func cpuSeconds(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// Fields after the command, which is in parentheses and may hold spaces.
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseFloat(f[11], 64)
	stime, _ := strconv.ParseFloat(f[12], 64)
	return (utime + stime) / clockTicks
}

// children maps the command names of this process's children to their PIDs:
// temporal, etcd, kube-apiserver, worker, starter.
func children() map[string]int {
	out := map[string]int{}
	self := strconv.Itoa(os.Getpid())
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, "stat"))
		if err != nil {
			continue
		}
		s := string(b)
		open, close := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || close < open {
			continue
		}
		f := strings.Fields(s[close+1:])
		if len(f) < 2 || f[1] != self {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(d))
		name := s[open+1 : close]
		if name == "temporal-server" {
			name = "temporal" // either stack's server is "temporal" in the results
		}
		out[name] = pid
	}
	return out
}

// cpuSnapshot is the CPU time of this process and each child.
type cpuSnapshot map[string]float64

func takeCPU() cpuSnapshot {
	snap := cpuSnapshot{"bench": cpuSeconds(os.Getpid())}
	for name, pid := range children() {
		snap[name] = cpuSeconds(pid)
	}
	return snap
}

func (a cpuSnapshot) since(b cpuSnapshot) map[string]float64 {
	out := map[string]float64{}
	for k, v := range a {
		out[k] = round(v-b[k], 2)
	}
	return out
}

func formatCPU(m map[string]float64) string {
	var parts []string
	for _, k := range slices.SortedFunc(maps.Keys(m), func(a, b string) int { return cmp.Compare(m[b], m[a]) }) {
		parts = append(parts, fmt.Sprintf("%s %.1fs", k, m[k]))
	}
	return strings.Join(parts, ", ")
}
