package servers

import (
	"bytes"
	"fmt"
	"os"
)

// logTail returns the last lines of a log file, to put a server's own
// explanation into the error when it fails to start.
func logTail(path string, lines int) string {
	if path == "" {
		return ""
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	b = bytes.TrimRight(b, "\n")
	for i, n := len(b)-1, 0; i >= 0; i-- {
		if b[i] == '\n' {
			if n++; n == lines {
				b = b[i+1:]
				break
			}
		}
	}
	if len(b) == 0 {
		return ""
	}
	return fmt.Sprintf("\n--- last lines of %s ---\n%s", path, b)
}
