package layout

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

// TestEntries: each versioned package owns every directory from the
// version's directory down to its files; the environment file is at each
// format's place; links are 0777.
func TestEntries(t *testing.T) {
	l := Default()
	for _, tc := range []struct {
		group, pkg string
		format     Format
		want       []string
	}{
		{VersionedKey, "kubeadm", RPM, []string{
			"/usr/local/kubernetes/1.21.14 dir 0755",
			"/usr/local/kubernetes/1.21.14/stage1 dir 0755",
			"/usr/local/kubernetes/1.21.14/stage1/usr dir 0755",
			"/usr/local/kubernetes/1.21.14/stage1/usr/bin dir 0755",
			"/usr/local/kubernetes/1.21.14/stage1/usr/bin/kubeadm file 0755",
		}},
		{MasterKey, "master", Deb, []string{
			"/usr/local/kubernetes/1.21.14 dir 0755",
			"/usr/local/kubernetes/1.21.14/stage2 dir 0755",
			"/usr/local/kubernetes/1.21.14/stage2/usr dir 0755",
			"/usr/local/kubernetes/1.21.14/stage2/usr/bin dir 0755",
			"/usr/local/kubernetes/1.21.14/stage2/usr/bin/kube-apiserver file 0755",
			"/usr/local/kubernetes/1.21.14/stage2/usr/bin/kube-controller-manager file 0755",
			"/usr/local/kubernetes/1.21.14/stage2/usr/bin/kube-scheduler file 0755",
		}},
	} {
		g, ok := l.Group(tc.group)
		assert.Assert(t, ok)
		var got []string
		for _, p := range g.Packages {
			if p.Name != tc.pkg {
				continue
			}
			for _, e := range g.Entries(p, "1.21.14", tc.format) {
				got = append(got, fmt.Sprintf("%s %s %04o", e.Path, e.Type, e.Mode))
			}
		}
		assert.Check(t, is.DeepEqual(got, tc.want), "%s/%s", tc.group, tc.pkg)
	}
	g, _ := l.Group(UnversionedKey)
	for _, f := range []Format{RPM, Deb} {
		var config []string
		for _, e := range g.Entries(g.Packages[0], "", f) {
			if e.Config {
				config = append(config, e.Path)
			}
			if e.Type == Symlink {
				assert.Check(t, is.Equal(e.Mode, uint32(0o777)), e.Path)
				assert.Check(t, !strings.HasPrefix(e.Target, "/"), e.Path)
			}
		}
		assert.Check(t, is.DeepEqual(config, []string{EnvFile(f)}), string(f))
	}
}

// TestExpand: fields become values; the escape applies to the text around
// them only, and an empty field stays empty for {{if}}.
func TestExpand(t *testing.T) {
	esc := func(s string) string { return strings.ReplaceAll(s, "%", "%%") }
	for _, tc := range []struct {
		text, want string
		vars       map[string]string
		escape     func(string) string
		wantErr    string
	}{
		{text: "stat -c %d {{.A}}", vars: map[string]string{"A": "%{x}"}, escape: esc, want: "stat -c %%d %{x}"},
		{text: "{{.A}}{{if .B}}b{{end}}", vars: map[string]string{"A": "a", "B": ""}, want: "a"},
		{text: "{{.C}}", vars: map[string]string{"A": "a"}, wantErr: "map has no entry for key"},
	} {
		got, err := Expand(tc.text, tc.vars, tc.escape)
		if tc.wantErr != "" {
			assert.Check(t, is.ErrorContains(err, tc.wantErr))
			continue
		}
		assert.NilError(t, err)
		assert.Check(t, is.Equal(got, tc.want))
	}
}

// TestHasInput: an optional group is built with all of its binaries,
// skipped with none, refused with some.
func TestHasInput(t *testing.T) {
	g, _ := Default().Group(MasterKey)
	for _, tc := range []struct {
		have    []string
		want    bool
		wantErr string
	}{
		{have: nil, want: false},
		{have: []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler"}, want: true},
		{have: []string{"kube-apiserver"}, wantErr: "has kube-apiserver but not kube-controller-manager, kube-scheduler"},
	} {
		dir := t.TempDir()
		assert.NilError(t, os.MkdirAll(filepath.Join(dir, "1.21.14"), 0o755))
		for _, b := range tc.have {
			assert.NilError(t, os.WriteFile(filepath.Join(dir, "1.21.14", b), nil, 0o755))
		}
		got, err := g.HasInput(dir, "1.21.14")
		if tc.wantErr != "" {
			assert.Check(t, is.ErrorContains(err, tc.wantErr))
			continue
		}
		assert.NilError(t, err)
		assert.Check(t, is.Equal(got, tc.want))
	}
}

// TestGuardIsTheSameInBothFormats: the removal guard differs between the
// formats only in its condition and in the spec's macros and %% escapes.
func TestGuardIsTheSameInBothFormats(t *testing.T) {
	l := Default()
	g := Guard{Stage: "stage2", Unselectable: "stage2/usr/bin/kubelet"}
	vars := Vars{Version: "1.21.14", KubeDir: VersionDir("1.21.14"), Current: CurrentDir}
	deb, err := l.GuardText(g, vars, `[ "$1" = remove ]`, nil)
	assert.NilError(t, err)
	rpmVars := Vars{Version: "%{kube_version}", KubeDir: "%{kube_dir}", Current: "%{current}"}
	rpm, err := l.GuardText(g, rpmVars, "[ $1 -eq 0 ]", func(s string) string { return strings.ReplaceAll(s, "%", "%%") })
	assert.NilError(t, err)
	back := strings.NewReplacer("%{kube_version}", "1.21.14", "%{kube_dir}", VersionDir("1.21.14"), "%{current}", CurrentDir, "%%", "%", "[ $1 -eq 0 ]", `[ "$1" = remove ]`).Replace(rpm)
	assert.Check(t, is.Equal(back, deb))
	assert.Check(t, is.Contains(deb, "stat -L -c %d:%i /usr/local/kubernetes/current/stage2"))
}
