package app

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kubelet-compat/kubelet-compat/pkg/cri"
)

// TestContainerCreatedJustBeforeTheKubeletIsLegacy: the machine booted at
// bootTime + 0.7 s (/proc/stat's btime says bootTime: whole seconds), the
// kubelet started 1000 s later, and a container was created 0.3 s before
// that. The CLI took the kubelet's start from btime, 0.7 s early, did not see
// the container as legacy, and sweep deleted the file the kubelet needed.
func TestContainerCreatedJustBeforeTheKubeletIsLegacy(t *testing.T) {
	boot := time.Unix(bootTime, 7e8)
	trueStart := boot.Add(1000 * time.Second) // starttime 100000 ticks
	created := trueStart.Add(-300 * time.Millisecond)
	f := newFixture(t, cri.APIv1)
	f.clocks = bootedAt(boot)
	f.addStaticPods("v1.18.19", pod{file: "seccomp.yaml", yaml: seccompYAML, uid: "pinned-uid", created: created, ready: true})
	if code := f.run("record", "--kubelet-binary", f.kubeletBinary("v1.18.19")); code != 0 {
		t.Fatalf("record exit %d: %s", code, f.stderr.String())
	}
	f.runKubelet("v1.19.16")
	f.write(filepath.Join(f.procRoot, strconv.Itoa(kubeletPID), "stat"), strconv.Itoa(kubeletPID)+" (kubelet) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 100000 1 1\n")

	if code := f.run("status"); code != 0 {
		t.Fatalf("status exit %d: %s", code, f.stderr.String())
	}
	if strings.Contains(f.stdout.String(), "no running container was created before the kubelet started") {
		t.Errorf("status does not count the container created 0.3 s before the kubelet as legacy:\n%s", f.stdout.String())
	}
	if code := f.run("sweep"); code != ExitKept {
		t.Errorf("sweep exit %d, want %d (kept): %s", code, ExitKept, f.stdout.String())
	}
	if _, err := os.Stat(f.compatPath()); err != nil {
		t.Errorf("sweep deleted the file a legacy container needs: %v", err)
	}
}
