// Command check-library proves that the library's non-test files build and
// vet with the Go toolchain and the k8s.io/api, k8s.io/apimachinery and
// go-spew versions of a kubelet tree they are patched into, for linux and
// windows (the kubelet is built for both). By default it checks the oldest
// build row of the matrix (1.18: go1.13.15); -all checks every build row.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/kubelet-compat/kubelet-compat/hack/internal/libfiles"
	"github.com/kubelet-compat/kubelet-compat/pkg/cachedir"
	"github.com/kubelet-compat/kubelet-compat/pkg/exec"
	"github.com/kubelet-compat/kubelet-compat/pkg/matrix"
	"github.com/kubelet-compat/kubelet-compat/pkg/toolchain"
)

// goSpewVersion is what every supported tree vendors.
const goSpewVersion = "v1.1.1"

func main() {
	all := flag.Bool("all", false, "check every build row, not only the oldest")
	libDir := flag.String("library", "kubelet-compat", "the library's directory")
	flag.Parse()
	if err := run(*libDir, *all); err != nil {
		fmt.Fprintln(os.Stderr, "check-library:", err)
		os.Exit(1)
	}
}

func run(libDir string, all bool) error {
	rows, err := matrix.Build()
	if err != nil {
		return err
	}
	if len(rows) == 0 {
		return fmt.Errorf("the matrix has no build rows")
	}
	if !all {
		rows = rows[:1]
	}
	cacheDir := cachedir.Resolve(os.Getenv(cachedir.Env))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	for _, row := range rows {
		start := time.Now()
		if err := check(ctx, cacheDir, libDir, row); err != nil {
			return fmt.Errorf("[%s] %w", row.Kubernetes, err)
		}
		fmt.Printf("[%s] library builds and vets with go%s and k8s.io/api %s (linux, windows) in %s\n",
			row.Kubernetes, row.Go, row.StagingVersion(), time.Since(start).Round(time.Second))
	}
	return nil
}

func check(ctx context.Context, cacheDir, libDir string, row matrix.Row) error {
	goroot, err := toolchain.Ensure(ctx, cacheDir, row.Go, row.ToolchainSum, os.Getenv(toolchain.UserGOROOTEnv(row.Go)), os.Stderr)
	if err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "check-library-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	pkgDir := filepath.Join(work, "kubeletcompat")
	if err := libfiles.Copy(libDir, pkgDir); err != nil {
		return err
	}
	gomod := fmt.Sprintf("module kubeletcompatcheck\n\ngo 1.13\n\nrequire (\n\tgithub.com/davecgh/go-spew %s\n\tk8s.io/api %s\n\tk8s.io/apimachinery %s\n)\n",
		goSpewVersion, row.StagingVersion(), row.StagingVersion())
	if err := os.WriteFile(filepath.Join(work, "go.mod"), []byte(gomod), 0o644); err != nil {
		return err
	}
	env := append(toolchain.Env(goroot, row.Go, cacheDir), "CGO_ENABLED=0")
	steps := [][]string{
		{"build", "./..."},
		{"vet", "./..."},
	}
	for _, goos := range []string{"linux", "windows"} {
		for _, args := range steps {
			cmd := &exec.Cmd{Name: filepath.Join(goroot, "bin", "go"), Args: args, Dir: work, Env: append(env, "GOOS="+goos, "GOARCH=amd64")}
			if err := cmd.Run(ctx); err != nil {
				return fmt.Errorf("go%s %s (GOOS=%s): %w", row.Go, strings.Join(args, " "), goos, err)
			}
		}
	}
	return nil
}
