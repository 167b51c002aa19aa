// Command httpprobe is the healthcheck of the worker and starter containers
// in docker-compose.yaml: it GETs a URL and exits 0 on a 2xx answer, 1
// otherwise. The distroless image has no shell, curl or wget; the
// Dockerfile's compose stage adds this binary, the production image does
// not.
//
//	httpprobe http://127.0.0.1:8081/readyz
package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"time"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: httpprobe URL")
		os.Exit(2)
	}
	if err := probe(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "httpprobe:", err)
		os.Exit(1)
	}
}

func probe(url string) error {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("%s: %s: %s", url, resp.Status, body)
	}
	return nil
}
