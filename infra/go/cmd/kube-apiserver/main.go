// Command kube-apiserver is the upstream API server, built from Go modules so the
// local kit needs no downloaded release binaries.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"

	"mirrorhub.io/infra/go/internal/lifeline"
)

func main() {
	lifeline.Hold()
	os.Exit(cli.Run(app.NewAPIServerCommand()))
}
