package deb

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/kubelet-compat/kubelet-compat/pkg/layout"
	"github.com/kubelet-compat/kubelet-compat/pkg/packaging"
	"github.com/kubelet-compat/kubelet-compat/rpm"
)

// rpmEntry is one file of an RPM as rpm -qp lists it.
type rpmEntry struct {
	typ, owner, target, digest string
	mode                       os.FileMode
	config                     bool
}

func rpmContents(t *testing.T, p string) map[string]rpmEntry {
	t.Helper()
	out := run(t, "rpm", "-qp", "--qf", `[%{FILENAMES}\t%{FILEMODES:octal}\t%{FILEUSERNAME}:%{FILEGROUPNAME}\t%{FILELINKTOS}\t%{FILEDIGESTS}\t%{FILEFLAGS:fflags}\n]`, p)
	got := map[string]rpmEntry{}
	for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		f := strings.Split(line, "\t")
		assert.Equal(t, len(f), 6, "rpm output %q", line)
		mode, err := strconv.ParseUint(f[1], 8, 32)
		assert.NilError(t, err)
		e := rpmEntry{owner: f[2], target: f[3], digest: f[4], mode: os.FileMode(mode & 0o777), config: strings.Contains(f[5], "c")}
		switch mode & 0o170000 {
		case 0o040000:
			e.typ = "dir"
		case 0o120000:
			e.typ = "link"
		case 0o100000:
			e.typ = "file"
		default:
			t.Fatalf("%s: %s has mode %o", p, f[0], mode)
		}
		got[f[0]] = e
	}
	return got
}

// TestRPMAndDebAreEqual builds both formats from the same input and
// compares every package's files: the same paths, types, modes, link
// targets and root owners, and the same bytes, but for the one difference
// each format's conventions demand: the kubelet's environment file
// (/etc/sysconfig/kubelet, /etc/default/kubelet), as a path and as it is
// named in the units and the drop-in. A .deb also lists the parent
// directories of its paths (dpkg does; they are shared with the base
// system or the other packages) and carries Debian's documentation
// (/usr/share/doc/<package>, the lintian overrides); nothing else.
func TestRPMAndDebAreEqual(t *testing.T) {
	requireTools(t, "dpkg-deb", "rpmbuild", "rpm")
	work := t.TempDir()
	input := filepath.Join(work, "harness")
	cli := writeFakeHarness(t, input)
	_, debs := buildDebs(t, Config{Options: packaging.Options{InputDir: input, KubeletCompat: cli}})
	rpms, err := rpm.Build(context.Background(), rpm.Config{Options: packaging.Options{InputDir: input, KubeletCompat: cli, OutputDir: filepath.Join(work, "rpms"),
		Versions: testVersions, SourceDateEpoch: testEpoch}})
	assert.NilError(t, err)

	rpmByName := map[string]string{}
	for _, p := range rpms {
		rpmByName[strings.TrimSpace(run(t, "rpm", "-qp", "--qf", "%{NAME}", p))] = p
	}
	debByName := byName(t, debs)
	var names []string
	for n := range rpmByName {
		names = append(names, n)
	}
	sort.Strings(names)
	var debNames []string
	for n := range debByName {
		debNames = append(debNames, n)
	}
	sort.Strings(debNames)
	assert.DeepEqual(t, debNames, names)
	assert.Check(t, is.Contains(debByName, "kubernetes-1.21.14-master"))
	assert.Check(t, !contains(names, "kubernetes-1.20.15-master"), "no -master without the control-plane binaries")

	toDebPath := func(p string) string {
		if p == layout.EnvFile(layout.RPM) {
			return layout.EnvFile(layout.Deb)
		}
		return p
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			r := rpmContents(t, rpmByName[name])
			d := debContents(t, debByName[name])
			covered := map[string]bool{}
			for p, re := range r {
				dp := toDebPath(p)
				de, ok := d[dp]
				if !assert.Check(t, ok, "%s (%s in the RPM) is not in the .deb", dp, p) {
					continue
				}
				covered[dp] = true
				assert.Check(t, is.Equal(de.typ, re.typ), "%s: type", p)
				assert.Check(t, is.Equal(de.mode, re.mode), "%s: mode", p)
				assert.Check(t, is.Equal(de.target, re.target), "%s: link target", p)
				assert.Check(t, is.Equal(re.owner, "root:root"), "%s: RPM owner", p)
				assert.Check(t, is.Equal(de.owner, "root:root 0:0"), "%s: .deb owner", p)
				if re.typ == "file" {
					// The .deb's bytes, with the environment file named the RPM's way,
					// are the RPM's.
					asRPM := bytes.ReplaceAll(de.content, []byte(layout.EnvFile(layout.Deb)), []byte(layout.EnvFile(layout.RPM)))
					assert.Check(t, is.Equal(fmt.Sprintf("%x", sha256.Sum256(asRPM)), re.digest), "%s: content", p)
					assert.Check(t, is.Equal(bytes.Equal(DebContent(asRPM), de.content), true), "%s: content differs beyond the environment file", p)
				}
			}
			conffiles := strings.Fields(maintainerScript(t, debByName[name], "conffiles"))
			rpmConfig := []string{}
			for p, re := range r {
				if re.config {
					rpmConfig = append(rpmConfig, toDebPath(p))
				}
			}
			sort.Strings(rpmConfig)
			assert.Check(t, is.DeepEqual(conffiles, rpmConfig), "conffiles vs %%config")
			for p, de := range d {
				if covered[p] {
					continue
				}
				switch {
				case strings.HasPrefix(p, "/usr/share/doc/"+name+"/") || p == "/usr/share/lintian/overrides/"+name:
					assert.Check(t, is.Equal(de.typ, "file"), p)
					assert.Check(t, is.Equal(de.mode, os.FileMode(0o644)), p)
				case de.typ == "dir":
					assert.Check(t, isAncestor(p, covered) || p == "/usr/share/doc/"+name || strings.HasPrefix("/usr/share/lintian/overrides", p) || strings.HasPrefix("/usr/share/doc", p),
						"%s: a directory of the .deb that is no parent of the RPM's paths", p)
					assert.Check(t, is.Equal(de.mode, os.FileMode(0o755)), p)
					assert.Check(t, is.Equal(de.owner, "root:root 0:0"), p)
				default:
					t.Errorf("%s is in the .deb, not in the RPM", p)
				}
			}
		})
	}
}

func isAncestor(dir string, paths map[string]bool) bool {
	for p := range paths {
		for d := path.Dir(p); ; d = path.Dir(d) {
			if d == dir {
				return true
			}
			if d == "/" {
				break
			}
		}
	}
	return false
}

// TestDependenciesMirrorTheRPMs: Depends and Provides of each .deb are
// the RPM's Requires and Provides in Debian's names, without the
// Essential packages, plus init-system-helpers for the unit scripts.
func TestDependenciesMirrorTheRPMs(t *testing.T) {
	requireTools(t, "dpkg-deb")
	_, debs := buildDebs(t, Config{})
	rev := func(key string) string {
		rows, err := packaging.ParseTable("releases.txt", ReleaseTable)
		assert.NilError(t, err)
		return strconv.Itoa(rows[key].Release)
	}
	want := map[string][2]string{
		"kubernetes-unversioned": {"systemd, init-system-helpers (>= 1.54~)", ""},
	}
	for _, v := range testVersions {
		r := v + "-" + rev(layout.VersionedKey)
		want["kubernetes-"+v+"-node"] = [2]string{"kubernetes-unversioned, iptables (>= 1.4.21), conntrack, ebtables, ethtool, iproute2, socat", "kubernetes-node (= " + r + ")"}
		want["kubernetes-"+v+"-kubeadm"] = [2]string{"kubernetes-unversioned", "kubernetes-kubeadm (= " + r + ")"}
		want["kubernetes-"+v+"-client"] = [2]string{"kubernetes-unversioned", "kubernetes-client (= " + r + ")"}
	}
	want["kubernetes-1.21.14-master"] = [2]string{"kubernetes-unversioned", "kubernetes-master (= 1.21.14-" + rev(layout.MasterKey) + ")"}
	got := map[string][2]string{}
	for name, d := range byName(t, debs) {
		got[name] = [2]string{control(t, d, "Depends"), control(t, d, "Provides")}
	}
	assert.DeepEqual(t, got, want)
}

// TestPreReleaseControlIsTheReleases: a pre-release's control files and
// scripts are its release's with the version put in (1.38.0-rc.1 in the
// names and paths, 1.38.0~rc.1 in Version and Provides; the description
// wrapped again): so the digest of deb/releases.txt, which renders a
// placeholder release, covers them.
func TestPreReleaseControlIsTheReleases(t *testing.T) {
	l := layout.Default()
	date := time.Unix(testEpoch, 0)
	for _, g := range l.Groups {
		if !g.Versioned {
			continue
		}
		for _, p := range g.Packages {
			pre, err := packageMeta(l, g, p, "1.38.0-rc.1", layout.PackageVersion("1.38.0-rc.1")+"-1", DefaultArch, date)
			assert.NilError(t, err)
			rel, err := packageMeta(l, g, p, "1.38.0", "1.38.0-1", DefaultArch, date)
			assert.NilError(t, err)
			back := strings.NewReplacer("1.38.0-rc.1", "1.38.0", "1.38.0~rc.1", "1.38.0")
			// The description is wrapped after the version is put in, as
			// for any version of another length.
			words := func(s string) string { return strings.Join(strings.Fields(s), " ") }
			assert.Check(t, is.Equal(words(back.Replace(pre.Control)), words(rel.Control)))
			assert.Check(t, is.Contains(pre.Control, "Version: 1.38.0~rc.1-1\n"))
			assert.Check(t, is.DeepEqual(pre.Conffiles, rel.Conffiles))
			for name, s := range pre.Scripts {
				assert.Check(t, is.Equal(back.Replace(s), rel.Scripts[name]), "%s %s", pre.Name, name)
			}
		}
	}
}
