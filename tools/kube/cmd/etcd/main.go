// etcd at the version k8s.io/kubernetes v1.37.2 requires (go.etcd.io/etcd/server/v3 in its go.mod),
// as etcd's own server/main.go builds it.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
