package rpm

import (
	"context"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"testing"
	"testing/fstest"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/kubelet-compat/kubelet-compat/pkg/layout"
	"github.com/kubelet-compat/kubelet-compat/pkg/layout/files"
	"github.com/kubelet-compat/kubelet-compat/pkg/packaging/packagingtest"
)

// changeSource gives cfg a copy of the embedded sources with one file's
// content replaced by edit(old): name is "templates/<spec template>" (of
// Templates) or "files/<shipped file>" (of pkg/layout/files).
func changeSource(t *testing.T, cfg *Config, name string, edit func(string) string) {
	t.Helper()
	src, dst, rel := fs.FS(Templates), &cfg.Templates, name
	if after, ok := strings.CutPrefix(name, "files/"); ok {
		src, dst, rel = files.Shipped, &cfg.Shipped, after
	}
	m := fstest.MapFS{}
	err := fs.WalkDir(src, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(src, p)
		m[p] = &fstest.MapFile{Data: b, Mode: 0o644}
		return err
	})
	assert.NilError(t, err)
	old, ok := m[rel]
	assert.Assert(t, ok, "no %s in the sources", name)
	changed := edit(string(old.Data))
	assert.Assert(t, changed != string(old.Data), "the edit of %s changed nothing", name)
	m[rel] = &fstest.MapFile{Data: []byte(changed), Mode: 0o644}
	*dst = m
}

// changedGuard returns the default description with its removal guard
// edited.
func changedGuard(t *testing.T, edit func(string) string) layout.Layout {
	t.Helper()
	l := layout.Default()
	changed := edit(l.GuardScript)
	assert.Assert(t, changed != l.GuardScript, "the edit of the guard changed nothing")
	l.GuardScript = changed
	return l
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

var updateReleases = flag.Bool("update-releases", false, "raise the release in releases.txt of every template whose content changed (make rpm-releases)")

// TestReleasesUpToDate: releases.txt records the content of the templates
// and shipped files as they are, so that the build, which refuses any
// other, works; with -update-releases it raises the releases that are out
// of date instead.
func TestReleasesUpToDate(t *testing.T) {
	onDisk, err := os.ReadFile("releases.txt")
	assert.NilError(t, err)
	if *updateReleases {
		table, bumped, err := BumpReleases(onDisk, Config{})
		assert.NilError(t, err)
		assert.NilError(t, os.WriteFile("releases.txt", table, 0o644))
		t.Logf("releases.txt: raised %v; rebuild (go test) to embed it", bumped)
		return
	}
	cfg := Config{}
	cfg.setDefaults()
	for _, g := range cfg.Layout.Groups {
		_, err := cfg.table().Release(ReleaseTable, g.Key)
		assert.Check(t, err)
	}
	table, bumped, err := BumpReleases(ReleaseTable, Config{})
	assert.NilError(t, err)
	assert.Check(t, is.Len(bumped, 0))
	assert.Check(t, is.Equal(string(table), string(ReleaseTable)), "releases.txt is not as make rpm-releases writes it")
}

func TestReleaseTable(t *testing.T) {
	digest := strings.Repeat("ab", 32)
	for _, tc := range []struct {
		name    string
		table   string
		wantErr string
	}{
		{name: "comments and both templates", table: "# c\n\nkubernetes-unversioned 2 " + digest + "\nkubernetes-versioned 7 " + digest + "\n"},
		{name: "missing field", table: "kubernetes-versioned 7\n", wantErr: "releases.txt:1: want <template> <release> <sha256>"},
		{name: "release zero", table: "kubernetes-versioned 0 " + digest + "\n", wantErr: "not a positive number"},
		{name: "release not a number", table: "kubernetes-versioned 7a " + digest + "\n", wantErr: "not a positive number"},
		{name: "short digest", table: "kubernetes-versioned 7 abc\n", wantErr: "is not a sha256"},
		{name: "twice", table: "kubernetes-versioned 7 " + digest + "\nkubernetes-versioned 8 " + digest + "\n", wantErr: "releases.txt:2: kubernetes-versioned given twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rows, err := parseReleaseTable([]byte(tc.table))
			if tc.wantErr != "" {
				assert.ErrorContains(t, err, tc.wantErr)
				return
			}
			assert.NilError(t, err)
			want := map[string]releaseRow{unversionedKey: {Release: 2, Digest: digest}, versionedKey: {Release: 7, Digest: digest}}
			assert.Check(t, is.Equal(fmt.Sprint(rows), fmt.Sprint(want)))
		})
	}
}

// TestBumpReleases: a change raises the release of its template only,
// from the table's, and leaves an up-to-date table as it is.
func TestBumpReleases(t *testing.T) {
	for _, tc := range []struct {
		name       string
		file       string
		edit       func(string) string
		guard      func(string) string // edits the description's removal guard
		wantBumped []string
	}{
		{name: "nothing changed"},
		{name: "kubernetes-select", file: "files/kubernetes-select", edit: func(s string) string { return s + "# changed\n" }, wantBumped: []string{unversionedKey}},
		{name: "a unit", file: "files/kubelet.service", edit: func(s string) string { return s + "# changed\n" }, wantBumped: []string{unversionedKey}},
		// The runtime's packages are built from the same templates.
		{name: "the unversioned spec", file: "templates/" + unversionedTemplate, edit: func(s string) string { return s + "# changed\n" }, wantBumped: []string{unversionedKey, "runtime-unversioned"}},
		{name: "runtime-select", file: "files/runtime-select", edit: func(s string) string { return s + "# changed\n" }, wantBumped: []string{"runtime-unversioned"}},
		{name: "the versioned %preun", guard: func(s string) string { return strings.Replace(s, "refusing to erase", "will not erase", 1) }, wantBumped: []string{versionedKey}},
		{name: "the versioned spec template", file: "templates/" + versionedTemplate, edit: func(s string) string { return s + "# changed\n" }, wantBumped: []string{versionedKey, masterKey, "runtime-containerd", "runtime-runc", "runtime-crictl", "runtime-cni"}},
		{name: "the drop-in", file: "files/10-kubeadm.conf", edit: func(s string) string { return s + "# changed\n" }, wantBumped: []string{versionedKey}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{}
			if tc.file != "" {
				changeSource(t, &cfg, tc.file, tc.edit)
			}
			if tc.guard != nil {
				cfg.Layout = changedGuard(t, tc.guard)
			}
			table, bumped, err := BumpReleases(ReleaseTable, cfg)
			assert.NilError(t, err)
			assert.Check(t, is.DeepEqual(bumped, tc.wantBumped))
			before, err := parseReleaseTable(ReleaseTable)
			assert.NilError(t, err)
			after, err := parseReleaseTable(table)
			assert.NilError(t, err)
			for _, key := range []string{unversionedKey, versionedKey, masterKey} {
				want := before[key].Release
				for _, b := range tc.wantBumped {
					if b == key {
						want++
					}
				}
				assert.Check(t, is.Equal(after[key].Release, want), key)
			}
			// Bumping again changes nothing: the table now records the change.
			again, bumped, err := BumpReleases(table, cfg)
			assert.NilError(t, err)
			assert.Check(t, is.Len(bumped, 0))
			assert.Check(t, is.Equal(string(again), string(table)))
		})
	}
}

// TestReleaseFollowsContent: a package whose files or scripts changed must
// get a higher release than before, so that rpm -U replaces it; the others
// keep theirs. The build refuses the changed content until releases.txt
// records it, with a release raised by one.
func TestReleaseFollowsContent(t *testing.T) {
	requireRPMTools(t)
	versions := []string{"1.21.14"}
	versioned := []string{"kubernetes-1.21.14-node", "kubernetes-1.21.14-kubeadm", "kubernetes-1.21.14-client"}
	_, built := buildRPMs(t, versions, Config{})
	before := releases(t, built)
	for _, tc := range []struct {
		name  string
		file  string // templates/ or files/ (changeSource)
		edit  func(string) string
		guard func(string) string // edits the description's removal guard
		newer []string            // packages whose release must grow
	}{
		{name: "kubernetes-select", file: "files/kubernetes-select",
			edit: func(s string) string { return s + "# changed\n" }, newer: []string{UnversionedName}},
		{name: "the versioned packages' %preun",
			guard: func(s string) string { return strings.Replace(s, "refusing to erase", "will not erase", 1) }, newer: versioned},
		{name: "the kubelet drop-in", file: "files/10-kubeadm.conf",
			edit: func(s string) string { return s + "# changed\n" }, newer: versioned},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var changed Config
			if tc.file != "" {
				changeSource(t, &changed, tc.file, tc.edit)
			}
			if tc.guard != nil {
				changed.Layout = changedGuard(t, tc.guard)
			}
			cfg := changed
			cfg.Versions, cfg.OutputDir, cfg.SourceDateEpoch = versions, t.TempDir(), testEpoch
			cfg.InputDir = t.TempDir()
			cfg.KubeletCompat = packagingtest.FakeHarness(t, cfg.InputDir, versions)
			_, err := Build(context.Background(), cfg)
			assert.Check(t, is.ErrorContains(err, "make rpm-releases"), "content changed, releases.txt not")

			changed.ReleaseTable, _, err = BumpReleases(ReleaseTable, changed)
			assert.NilError(t, err)
			_, rebuilt := buildRPMs(t, versions, changed)
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
