package kubelet

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestBinaryRun(t *testing.T) {
	dir := t.TempDir()
	script := func(name, body string) Binary {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
			t.Fatal(err)
		}
		b, err := TrustedBinary(p, os.Getuid())
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	ctx := context.Background()

	out, ok, err := script("ok", `echo "args: $*"; echo "env: $(env | grep -v '^PATH=' | grep -v '^PWD=' | grep -v '^SHLVL=' | grep -v '^_=' | wc -l)"`).Run(ctx, os.Getuid(), 5*time.Second, "--a=1", "--version")
	if err != nil || !ok || !strings.Contains(out, "args: --a=1 --version") || !strings.Contains(out, "env: 0") {
		t.Errorf("ok: %q %v %v", out, ok, err)
	}
	out, ok, err = script("fails", "echo refused >&2; exit 3").Run(ctx, os.Getuid(), 5*time.Second)
	if err != nil || ok || !strings.Contains(out, "refused") {
		t.Errorf("fails: %q %v %v", out, ok, err)
	}
	_, _, err = script("hangs", "exec sleep 30").Run(ctx, os.Getuid(), 200*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "did not exit within") {
		t.Errorf("hangs: %v", err)
	}
	out, _, _ = script("chatty", "head -c 3000000 /dev/zero").Run(ctx, os.Getuid(), 5*time.Second)
	if len(out) != maxRunOutput {
		t.Errorf("chatty: %d bytes kept", len(out))
	}
	b := script("replaced", "true")
	other := filepath.Join(dir, "other")
	os.WriteFile(other, []byte("#!/bin/sh\ntrue\n"), 0o755)
	if err := os.Rename(other, b.Path); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.Run(ctx, os.Getuid(), time.Second); err == nil || !strings.Contains(err.Error(), "replaced") {
		t.Errorf("replaced: %v", err)
	}
}
