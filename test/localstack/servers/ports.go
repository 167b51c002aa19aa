package servers

import (
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
)

// FreePort asks the kernel for a free TCP port on ip. It is the one
// free-port helper of the servers, the bench and the tests. Another process
// may take the port before the server binds it; the server then fails to
// start with a clear "address already in use" in its log.
func FreePort(ip string) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		return 0, fmt.Errorf("finding a free port on %s: %w", ip, err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// FreeAddr is FreePort as a host:port, for a program's metrics or probe
// address.
func FreeAddr(ip string) (string, error) {
	port, err := FreePort(ip)
	if err != nil {
		return "", err
	}
	return net.JoinHostPort(ip, strconv.Itoa(port)), nil
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

// freeLowPort is FreePort below the kernel's ephemeral range (32768 and up
// on Linux), for a server that stores its port in a SQL smallint:
// temporal-server's cluster membership table does.
func freeLowPort(ip string) (int, error) {
	const lo, hi = 20000, 32767
	start := lo + rand.IntN(hi-lo)
	for i := 0; i <= hi-lo; i++ {
		port := lo + (start-lo+i)%(hi-lo+1)
		l, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(port)))
		if err != nil {
			continue
		}
		_ = l.Close()
		return port, nil
	}
	return 0, fmt.Errorf("no free port on %s in [%d, %d]", ip, lo, hi)
}
