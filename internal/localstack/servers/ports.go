package servers

import (
	"fmt"
	"net"
	"strconv"
)

// freePort asks the kernel for a free TCP port on ip. Another process may
// take it before the server binds it; the server then fails to start with
// a clear "address already in use" in its log.
func freePort(ip string) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		return 0, fmt.Errorf("finding a free port on %s: %w", ip, err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// checkPortFree fails clearly when a fixed port is already taken, rather
// than letting a server retry and time out.
func checkPortFree(what, ip string, port int) error {
	addr := net.JoinHostPort(ip, strconv.Itoa(port))
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("%s port %s is not free (is another instance running?): %w", what, addr, err)
	}
	return l.Close()
}
