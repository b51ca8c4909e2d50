// Command etcd builds the upstream etcd server from Go modules so that tests
// run against a real control plane without downloads beyond the Go module proxy.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
