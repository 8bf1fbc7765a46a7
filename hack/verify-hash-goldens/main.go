// Command verify-hash-goldens fails when kubelet-compat/testdata/hashes.golden
// is stale: made from another corpus, or by other trees than pkg/matrix
// names, or missing lines. It reads two files and downloads nothing; its test
// runs it under `make test`.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/kubelet-compat/kubelet-compat/hack/gen-hash-goldens/golden"
	"github.com/kubelet-compat/kubelet-compat/pkg/matrix"
)

func main() {
	corpus := flag.String("corpus", "kubelet-compat/testdata/containers.json", "container corpus")
	goldenPath := flag.String("golden", "kubelet-compat/testdata/hashes.golden", "golden file")
	flag.Parse()
	if err := verify(*corpus, *goldenPath); err != nil {
		fmt.Fprintln(os.Stderr, "verify-hash-goldens:", err)
		os.Exit(1)
	}
}

const regenerate = "regenerate with `go run ./hack/gen-hash-goldens` (or `make hash-goldens`)"

func verify(corpusPath, goldenPath string) error {
	corpus, err := os.ReadFile(corpusPath)
	if err != nil {
		return err
	}
	data, err := os.ReadFile(goldenPath)
	if err != nil {
		return fmt.Errorf("%v: %s", err, regenerate)
	}
	f, err := golden.Parse(data)
	if err != nil {
		return fmt.Errorf("%s: %v", goldenPath, err)
	}
	rows, err := matrix.Load()
	if err != nil {
		return err
	}
	if err := golden.Check(f, corpus, rows); err != nil {
		return fmt.Errorf("%s is stale: %v: %s", goldenPath, err, regenerate)
	}
	return nil
}
