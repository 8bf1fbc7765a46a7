package cri_test

import (
	"context"
	"os"
	"testing"

	"github.com/kubelet-compat/kubelet-compat/pkg/cri"
)

// TestRealRuntime talks to a real runtime when KUBELET_COMPAT_CRI_ENDPOINT
// names its socket (e.g. unix:///run/containerd/containerd.sock).
func TestRealRuntime(t *testing.T) {
	endpoint := os.Getenv("KUBELET_COMPAT_CRI_ENDPOINT")
	if endpoint == "" {
		t.Skip("KUBELET_COMPAT_CRI_ENDPOINT is not set")
	}
	for _, api := range []string{"", cri.APIv1, cri.APIv1alpha2} {
		c, err := cri.Dial(context.Background(), endpoint, cri.Options{API: api})
		if err != nil {
			t.Errorf("API %q: %v", api, err)
			continue
		}
		sbs, err := c.ListSandboxes(context.Background())
		if err != nil {
			t.Errorf("API %s: %v", c.APIVersion(), err)
		}
		cs, err := c.ListContainers(context.Background())
		if err != nil {
			t.Errorf("API %s: %v", c.APIVersion(), err)
		}
		t.Logf("asked %q: speaking %s to %+v: %d sandboxes, %d containers", api, c.APIVersion(), c.Runtime(), len(sbs), len(cs))
		c.Close()
	}
}
