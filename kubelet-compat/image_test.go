package kubeletcompat

import "testing"

func TestNormalizeImage(t *testing.T) {
	tests := map[string]string{
		"busybox":                           "docker.io/library/busybox:latest",
		"busybox:1.36":                      "docker.io/library/busybox:1.36",
		"docker.io/library/busybox:1.36":    "docker.io/library/busybox:1.36",
		"index.docker.io/library/busybox":   "docker.io/library/busybox:latest",
		"user/app":                          "docker.io/user/app:latest",
		"registry.local/app":                "registry.local/app:latest",
		"registry.local:5000/app:2":         "registry.local:5000/app:2",
		"localhost/app":                     "localhost/app:latest",
		"app@sha256:abc":                    "docker.io/library/app@sha256:abc",
		"registry.local/app:1@sha256:abc":   "registry.local/app:1@sha256:abc",
		"registry.local:5000/team/app":      "registry.local:5000/team/app:latest",
		"sha256:0123456789abcdef0123456789": "docker.io/library/sha256:0123456789abcdef0123456789",
	}
	for in, want := range tests {
		if got := normalizeImage(in); got != want {
			t.Errorf("normalizeImage(%q) = %q, want %q", in, got, want)
		}
	}
}
