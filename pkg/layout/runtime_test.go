package layout

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/kubelet-compat/kubelet-compat/pkg/packaging/packagingtest"
)

// TestRuntimeEntries: each runtime component's version owns its directory
// under /usr/local/runtime/<component>/<version>, binaries 0755 in bin/;
// runtime-unversioned owns the roots, current/, runtime-select and the
// /usr/bin/crictl link into current/.
func TestRuntimeEntries(t *testing.T) {
	l := Runtime(DefaultUnitDir)
	for _, tc := range []struct {
		group, version, name string
		want                 []string
	}{
		{"runtime-containerd", "1.7.35", "runtime-containerd-1.7.35", []string{
			"/usr/local/runtime/containerd/1.7.35 dir 0755",
			"/usr/local/runtime/containerd/1.7.35/bin dir 0755",
			"/usr/local/runtime/containerd/1.7.35/bin/containerd file 0755",
			"/usr/local/runtime/containerd/1.7.35/bin/containerd-shim-runc-v2 file 0755",
			"/usr/local/runtime/containerd/1.7.35/bin/ctr file 0755",
		}},
		{"runtime-runc", "1.5.3", "runtime-runc-1.5.3", []string{
			"/usr/local/runtime/runc/1.5.3 dir 0755",
			"/usr/local/runtime/runc/1.5.3/bin dir 0755",
			"/usr/local/runtime/runc/1.5.3/bin/runc file 0755",
		}},
		{"runtime-crictl", "1.34.0", "runtime-crictl-1.34.0", []string{
			"/usr/local/runtime/crictl/1.34.0 dir 0755",
			"/usr/local/runtime/crictl/1.34.0/bin dir 0755",
			"/usr/local/runtime/crictl/1.34.0/bin/crictl file 0755",
		}},
		{"runtime-cni", "1.10.0", "runtime-cni-1.10.0", []string{
			"/usr/local/runtime/cni/1.10.0 dir 0755",
			"/usr/local/runtime/cni/1.10.0/bin dir 0755",
			"/usr/local/runtime/cni/1.10.0/bin/bridge file 0755",
			"/usr/local/runtime/cni/1.10.0/bin/host-local file 0755",
			"/usr/local/runtime/cni/1.10.0/bin/loopback file 0755",
			"/usr/local/runtime/cni/1.10.0/bin/portmap file 0755",
		}},
		{RuntimeUnversionedKey, "", RuntimeUnversionedName, []string{
			"/usr/bin/crictl link 0777 ../local/runtime/current/crictl/bin/crictl",
			"/usr/bin/runtime-select file 0755",
			"/usr/local/runtime dir 0755",
			"/usr/local/runtime/cni dir 0755",
			"/usr/local/runtime/containerd dir 0755",
			"/usr/local/runtime/crictl dir 0755",
			"/usr/local/runtime/current dir 0755",
			"/usr/local/runtime/runc dir 0755",
		}},
	} {
		g, ok := l.Group(tc.group)
		assert.Assert(t, ok, tc.group)
		assert.Assert(t, is.Len(g.Packages, 1))
		p := g.Packages[0]
		assert.Check(t, is.Equal(g.PackageName(p, tc.version), tc.name))
		for _, f := range []Format{RPM, Deb} {
			var got []string
			for _, e := range g.Entries(p, tc.version, f) {
				line := fmt.Sprintf("%s %s %04o", e.Path, e.Type, e.Mode)
				if e.Target != "" {
					line += " " + e.Target
				}
				got = append(got, line)
			}
			assert.Check(t, is.DeepEqual(got, tc.want), "%s %s", tc.group, f)
		}
		if g.Versioned {
			assert.Check(t, p.Guard != nil && p.Guard.Whole, "%s: removal guard on the whole version", tc.group)
		}
	}
	assert.Check(t, !l.UsesCLI(), "the runtime packages do not ship the kubelet-compat CLI")
	assert.Check(t, Default().UsesCLI())
}

// TestRuntimeGuardText: the removal guard of a runtime package compares
// current/<component> with the version's directory itself and names
// runtime-select; the Kubernetes guard is as it was.
func TestRuntimeGuardText(t *testing.T) {
	l := Runtime(DefaultUnitDir)
	g, _ := l.Group("runtime-containerd")
	v := Vars{Version: "1.7.35", KubeDir: g.VersionDir("1.7.35"), Current: RuntimeCurrent}
	text, err := l.GuardText(*g.Packages[0].Guard, v, "true", nil)
	assert.NilError(t, err)
	for _, want := range []string{
		"exec 9</usr/local/runtime/current;",
		"selected=$(stat -L -c %d:%i /usr/local/runtime/current/containerd 2>/dev/null)",
		"this=$(stat -c %d:%i /usr/local/runtime/containerd/1.7.35 2>/dev/null)",
		"refusing to erase containerd 1.7.35: it is the selected containerd; select another version first (runtime-select containerd VERSION)",
		"chmod a-x /usr/local/runtime/containerd/1.7.35/bin/containerd",
	} {
		assert.Check(t, is.Contains(text, want))
	}
	k := Default()
	kg, _ := k.Group(VersionedKey)
	text, err = k.GuardText(*kg.Packages[0].Guard, Vars{Version: "1.21.14", KubeDir: VersionDir("1.21.14"), Current: CurrentDir}, "true", nil)
	assert.NilError(t, err)
	assert.Check(t, is.Contains(text, "this=$(stat -c %d:%i /usr/local/kubernetes/1.21.14/stage2 2>/dev/null)"))
	assert.Check(t, is.Contains(text, "refusing to erase Kubernetes 1.21.14: it is the selected stage2; select another version first (kubernetes-select stage2 VERSION)"))
}

func TestJobs(t *testing.T) {
	r := Runtime(DefaultUnitDir)
	jobs, err := r.Jobs("in", []string{"containerd@1.7.35", "cni-plugins@1.10.0"})
	assert.NilError(t, err)
	var got []string
	for _, j := range jobs {
		got = append(got, j.Group.Key+" "+j.Version+" "+j.Group.Input("in", j.Version))
	}
	assert.Check(t, is.DeepEqual(got, []string{"runtime-containerd 1.7.35 in/containerd-1.7.35", "runtime-cni 1.10.0 in/cni-plugins-1.10.0"}))
	_, err = r.Jobs("in", []string{"1.21.14"})
	assert.Check(t, is.ErrorContains(err, "no package of the runtime set"))
	_, err = Default().Jobs("in", []string{"runc@1.5.3"})
	assert.Check(t, is.ErrorContains(err, "no package of the kubernetes set"))
}

// TestRuntimeInputChecked: a runtime binary is packaged only if the
// BUILDINFO.json of make runtime beside it records a build of that
// component and version with the binary's sha256.
func TestRuntimeInputChecked(t *testing.T) {
	r := Runtime(DefaultUnitDir)
	g, _ := r.Group("runtime-runc")
	for _, tc := range []struct {
		name    string
		change  func(t *testing.T, dir string)
		wantErr string
	}{
		{name: "as built"},
		{name: "changed binary", change: func(t *testing.T, dir string) {
			packagingtest.WriteExecutable(t, filepath.Join(dir, "runc-1.5.3/runc"), "#!/bin/sh\necho other\n")
		}, wantErr: "its build recorded"},
		{name: "other version", change: func(t *testing.T, dir string) {
			assert.NilError(t, os.Rename(filepath.Join(dir, "runc-1.5.3"), filepath.Join(dir, "x")))
			packagingtest.FakeRuntime(t, dir, "runc@1.5.2")
			assert.NilError(t, os.Rename(filepath.Join(dir, "runc-1.5.2"), filepath.Join(dir, "runc-1.5.3")))
		}, wantErr: "records a build of runc@1.5.2"},
		{name: "no BUILDINFO.json", change: func(t *testing.T, dir string) {
			assert.NilError(t, os.Remove(filepath.Join(dir, "runc-1.5.3/BUILDINFO.json")))
		}, wantErr: "BUILDINFO.json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := t.TempDir()
			packagingtest.FakeRuntime(t, in, "runc@1.5.3")
			if tc.change != nil {
				tc.change(t, in)
			}
			err := Inputs{InputDir: in}.Stage(t.Context(), g, "1.5.3", t.TempDir(), t.TempDir())
			if tc.wantErr == "" {
				assert.NilError(t, err)
			} else {
				assert.Check(t, is.ErrorContains(err, tc.wantErr))
				assert.Check(t, strings.Contains(err.Error(), "runc@1.5.3"))
			}
		})
	}
}
