// Command etcd is the etcd server, built from its Go module so that the
// local stack and the tests need nothing downloaded at run time.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
