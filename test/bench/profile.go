package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"
)

// profiling is -profile: a directory for CPU profiles taken during each
// wave, of kube-apiserver (which serves /debug/pprof/ to its admin) and, in
// the product's wave, of the worker and the starter (PPROF_BIND_ADDRESS),
// each for profileSeconds from the new default's creation. Empty: none.
var profiling struct {
	dir     string
	seconds int
}

// profileWave starts the wave's CPU profiles, each written to
// <dir>/<size>-<wave>-<process>.pprof; the returned function waits for
// them. addrs are the product processes' pprof addresses by name.
func profileWave(ctx context.Context, s *stack, n int, wave string, addrs map[string]string) func() error {
	if profiling.dir == "" {
		return func() error { return nil }
	}
	secs := strconv.Itoa(profiling.seconds)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	take := func(name string, get func(context.Context) ([]byte, error)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b, err := get(ctx)
			if err == nil {
				err = os.MkdirAll(profiling.dir, 0o755)
			}
			if err == nil {
				err = os.WriteFile(filepath.Join(profiling.dir, fmt.Sprintf("%d-%s-%s.pprof", n, wave, name)), b, 0o644)
			}
			if err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("CPU profile of %s in the %s wave: %w", name, wave, err))
				mu.Unlock()
			}
		}()
	}
	take("kube-apiserver", func(ctx context.Context) ([]byte, error) {
		return s.metrics.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/profile").Param("seconds", secs).
			Timeout(time.Duration(profiling.seconds+30) * time.Second).DoRaw(ctx)
	})
	for name, addr := range addrs {
		take(name, func(ctx context.Context) ([]byte, error) {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/debug/pprof/profile?seconds="+secs, nil)
			if err != nil {
				return nil, err
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return nil, err
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return nil, fmt.Errorf("%s: %s", addr, resp.Status)
			}
			return io.ReadAll(resp.Body)
		})
	}
	return func() error {
		wg.Wait()
		return errors.Join(errs...)
	}
}
