// Command etcd is the upstream etcd server, built from Go modules for the local kit.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"

	"mirrorhub.io/infra/go/internal/lifeline"
)

func main() {
	lifeline.Hold()
	etcdmain.Main(os.Args)
}
