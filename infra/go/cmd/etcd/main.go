// Command etcd is the upstream etcd server, built from Go modules for the local kit.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
