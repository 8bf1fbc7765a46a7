package rpm

import (
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

// changedSources returns a copy of the embedded Sources with one file's
// content replaced by edit(old).
func changedSources(t *testing.T, name string, edit func(string) string) fstest.MapFS {
	t.Helper()
	m := fstest.MapFS{}
	err := fs.WalkDir(Sources, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(Sources, p)
		m[p] = &fstest.MapFile{Data: b, Mode: 0o644}
		return err
	})
	assert.NilError(t, err)
	old, ok := m[name]
	assert.Assert(t, ok, "no %s in the sources", name)
	changed := edit(string(old.Data))
	assert.Assert(t, changed != string(old.Data), "the edit of %s changed nothing", name)
	m[name] = &fstest.MapFile{Data: []byte(changed), Mode: 0o644}
	return m
}

// releases returns the Release of every RPM, by package name.
func releases(t *testing.T, rpms []string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, p := range rpms {
		nr := strings.Fields(run(t, "rpm", "-qp", "--qf", "%{NAME} %{RELEASE}", p))
		assert.Equal(t, len(nr), 2)
		out[nr[0]] = nr[1]
	}
	return out
}

// TestReleaseFollowsContent: a package whose files or scripts changed must
// get a higher release than before, so that rpm -U replaces it; the others
// keep theirs.
func TestReleaseFollowsContent(t *testing.T) {
	requireRPMTools(t)
	versions := []string{"1.21.14"}
	versioned := []string{"kubernetes-1.21.14-node", "kubernetes-1.21.14-kubeadm", "kubernetes-1.21.14-client"}
	_, built := buildRPMs(t, versions, Config{})
	before := releases(t, built)
	for _, tc := range []struct {
		name  string
		file  string // in Sources
		edit  func(string) string
		newer []string // packages whose release must grow
	}{
		{name: "kubernetes-select", file: "files/kubernetes-select",
			edit: func(s string) string { return s + "# changed\n" }, newer: []string{UnversionedName}},
		{name: "the versioned packages' %preun", file: "templates/" + versionedTemplate,
			edit: func(s string) string { return strings.Replace(s, "refusing to erase", "will not erase", 1) }, newer: versioned},
		{name: "the kubelet drop-in", file: "files/10-kubeadm.conf",
			edit: func(s string) string { return s + "# changed\n" }, newer: versioned},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, rebuilt := buildRPMs(t, versions, Config{Sources: changedSources(t, tc.file, tc.edit)})
			after := releases(t, rebuilt)
			for name, rel := range before {
				newer := false
				for _, n := range tc.newer {
					newer = newer || n == name
				}
				if newer {
					assert.Check(t, releaseNewer(t, after[name], rel), "%s: release %s after a change of %s, %s before", name, after[name], tc.file, rel)
				} else {
					assert.Check(t, is.Equal(after[name], rel), "%s: unchanged content, another release", name)
				}
			}
		})
	}
}

// releaseNewer tells whether release a (N%{dist}) is newer than b, as rpm
// compares them.
func releaseNewer(t *testing.T, a, b string) bool {
	t.Helper()
	return strings.TrimSpace(run(t, "rpm", "--eval", "%{lua: print(rpm.vercmp('"+a+"', '"+b+"'))}")) == "1"
}
