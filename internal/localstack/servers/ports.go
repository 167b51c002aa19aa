package servers

import (
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
)

// loopback is the address every server binds.
const loopback = "127.0.0.1"

// FreePort returns a TCP port on ip that nothing listens on, from below the
// kernel's ephemeral range (32768 and up on Linux). It is the one free-port
// helper of the servers, the bench and the tests. A port the kernel hands
// out for ":0" comes from the ephemeral range, which is also where every
// process's outgoing connections take their source ports: under parallel
// tests one such connection now and then took the port between the probe
// and the server's bind (kube-apiserver then failed five times with "bind:
// address already in use"). Below the range only another listener can take
// it. The range also fits temporal-server, which stores its port in a SQL
// smallint (its cluster membership table).
//
// A port is handed out once per process. Free is not enough: between the
// probe and the bind a port is free to be picked again, and a stack picks
// many ports before its servers bind them (temporal-server's nine, then
// PostgreSQL's and kube-apiserver's while it starts). CI's PostgreSQL run
// once lost temporal-server to "bind: address already in use" on a
// membership port for that reason.
func FreePort(ip string) (int, error) {
	const lo, hi = 20000, 32767
	handedOut.Lock()
	defer handedOut.Unlock()
	start := lo + rand.IntN(hi-lo)
	for i := 0; i <= hi-lo; i++ {
		port := lo + (start-lo+i)%(hi-lo+1)
		addr := net.JoinHostPort(ip, strconv.Itoa(port))
		if handedOut.addrs[addr] {
			continue
		}
		l, err := net.Listen("tcp", addr)
		if err != nil {
			continue
		}
		_ = l.Close()
		handedOut.addrs[addr] = true
		return port, nil
	}
	return 0, fmt.Errorf("no free port on %s in [%d, %d]", ip, lo, hi)
}

// handedOut holds the addresses FreePort returned, and the fixed ones
// checkPortFree found free, in this process.
var handedOut = struct {
	sync.Mutex
	addrs map[string]bool
}{addrs: map[string]bool{}}

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
	// Held like FreePort's, so FreePort never hands it out before its
	// server binds it.
	handedOut.Lock()
	handedOut.addrs[addr] = true
	handedOut.Unlock()
	return l.Close()
}
