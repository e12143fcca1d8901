// Command kuberay-hash is the test oracle for kuberay-rules' spec hashes. It is built against KubeRay's own
// Go module (the newest version the Go module proxy serves, see go.mod) and has two commands:
//
//	kuberay-hash table          prints the Rust table of the JSON shape of every Go type reachable from
//	                            RayClusterSpec (plugins/rules/src/hash/go_types.rs)
//	kuberay-hash hash FILE...   prints, for every RayCluster and RayService in the YAML files, the spec hash
//	                            KubeRay computes, one tab-separated line per object
//	kuberay-hash quantity       prints, for every line of stdin, Go's JSON of the resource.Quantity
//	                            decoded from it as a JSON string, or "error"
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"k8s.io/apimachinery/pkg/api/resource"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: kuberay-hash table | hash FILE...")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "table":
		err = writeTable(os.Stdout)
	case "hash":
		err = hashFiles(os.Stdout, os.Args[2:])
	case "quantity":
		err = quantities(os.Stdin, os.Stdout)
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "kuberay-hash:", err)
		os.Exit(1)
	}
}

func quantities(in io.Reader, out io.Writer) error {
	lines := bufio.NewScanner(in)
	for lines.Scan() {
		text, err := json.Marshal(lines.Text())
		if err != nil {
			return err
		}
		var q resource.Quantity
		if err := json.Unmarshal(text, &q); err != nil {
			fmt.Fprintln(out, "error")
			continue
		}
		encoded, err := json.Marshal(q)
		if err != nil {
			return err
		}
		fmt.Fprintln(out, string(encoded))
	}
	return lines.Err()
}
