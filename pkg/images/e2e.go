package images

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/kubelet-compat/kubelet-compat/pkg/exec"
)

// BusyboxApplets are linked to /bin/busybox in the busybox image.
var BusyboxApplets = []string{"sh", "sleep", "httpd", "cat", "echo", "test", "mkdir", "touch", "date", "true", "false", "ls", "wget", "nc", "env", "ps", "kill", "rm"}

// Busybox is an image holding Debian's static busybox; variant > 1 adds a
// file so that the image ID differs (the e2e's genuine change).
func Busybox(ref, busyboxPath string, variant int) (Image, error) {
	bin, err := os.ReadFile(busyboxPath)
	if err != nil {
		return Image{}, fmt.Errorf("reading busybox (Debian package busybox-static): %w", err)
	}
	files := []File{{Path: "bin", Dir: true}, {Path: "tmp", Dir: true, Mode: 0o1777}, {Path: "etc", Dir: true},
		{Path: "bin/busybox", Mode: 0o755, Data: bin},
		{Path: "etc/passwd", Mode: 0o644, Data: []byte("root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n")},
		{Path: "etc/group", Mode: 0o644, Data: []byte("root:x:0:\nnogroup:x:65534:\n")},
		{Path: "etc/e2e-variant", Mode: 0o644, Data: []byte(fmt.Sprintf("%d\n", variant))},
	}
	for _, a := range BusyboxApplets {
		files = append(files, File{Path: "bin/" + a, Link: "busybox"})
	}
	return Image{Ref: ref, Cmd: []string{"sh"}, Env: []string{"PATH=/bin"}, Files: files}, nil
}

// Pause is an image holding the e2e's pause binary.
func Pause(ref, pauseBinary string) (Image, error) {
	bin, err := os.ReadFile(pauseBinary)
	if err != nil {
		return Image{}, fmt.Errorf("reading the pause binary: %w", err)
	}
	return Image{Ref: ref, Entrypoint: []string{"/pause"}, Files: []File{{Path: "pause", Mode: 0o755, Data: bin}}}, nil
}

// BuildPause compiles e2e/cmd/e2e-pause (static, no cgo) into dir.
func BuildPause(ctx context.Context, repoRoot, dir string) (string, error) {
	out := filepath.Join(dir, "pause")
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", out, "./e2e/cmd/e2e-pause")
	cmd.Dir = repoRoot
	cmd.Env = []string{"CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64"}
	if err := cmd.Run(ctx); err != nil {
		return "", fmt.Errorf("building the pause binary: %w", err)
	}
	return out, nil
}
