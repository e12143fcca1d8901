// Command etcd is the etcd server, built from the same module graph as the Kubernetes release it backs.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
