package deb

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/kubelet-compat/kubelet-compat/pkg/layout"
	"github.com/kubelet-compat/kubelet-compat/pkg/packaging"
)

// rootPackages are what the packages depend on, in the test root.
var rootPackages = []string{"systemd", "init-system-helpers", "iptables", "conntrack", "ebtables", "ethtool", "iproute2", "socat"}

// TestRealDebianRoot (make deb-test-real) installs the .debs with dpkg
// into a Debian root that debootstrap made, as an operator would on a
// node: two versions side by side and kubernetes-unversioned, their
// maintainer scripts run by dpkg (chrooted into the root); then
// kubernetes-select from one version to the other in symlink and in bind
// mode, the removal of the version that is not selected, and the removal
// of the selected one, which dpkg must refuse. The binaries are fakes
// unless DEB_TEST_REAL_INPUT names a harness output (with
// DEB_TEST_REAL_CLI and DEB_TEST_REAL_VERSIONS, two versions).
func TestRealDebianRoot(t *testing.T) {
	if os.Getenv("DEB_TEST_REAL") == "" {
		t.Skip("set DEB_TEST_REAL=1 (make deb-test-real): debootstraps a Debian root, minutes")
	}
	if os.Geteuid() != 0 {
		t.Skip("dpkg --root runs the maintainer scripts chrooted: needs root")
	}
	requireTools(t, "dpkg", "dpkg-deb", "debootstrap")
	versions := testVersions
	cfg := Config{Options: packaging.Options{Jobs: runtime.NumCPU()}}
	if in := os.Getenv("DEB_TEST_REAL_INPUT"); in != "" {
		cfg.InputDir, cfg.KubeletCompat = in, os.Getenv("DEB_TEST_REAL_CLI")
		versions = strings.Fields(os.Getenv("DEB_TEST_REAL_VERSIONS"))
		assert.Assert(t, len(versions) == 2, "DEB_TEST_REAL_VERSIONS: want two versions, got %q", versions)
		cfg.Versions = versions
	}
	start := time.Now()
	_, debs := buildDebs(t, cfg)
	t.Logf("built %d .debs in %s", len(debs), time.Since(start).Round(time.Second))
	pkgs := byName(t, debs)

	root := debootstrapRoot(t)
	t.Cleanup(func() {
		for _, stage := range []string{"stage1", "stage2"} {
			exec.Command("umount", "-l", filepath.Join(root, layout.CurrentDir, stage)).Run()
		}
	})
	dpkg := func(args ...string) result {
		return runResult(t, nil, "dpkg", append([]string{"--root=" + root, "--force-not-root"}, args...)...)
	}
	older, newer := versions[0], versions[1]
	install := []string{pkgs[layout.UnversionedName]}
	for _, v := range versions {
		for _, sub := range []string{"node", "kubeadm", "client"} {
			install = append(install, pkgs["kubernetes-"+v+"-"+sub])
		}
	}
	r := dpkg(append([]string{"-i"}, install...)...)
	assert.Assert(t, is.Equal(r.Code, 0), "dpkg -i:\n%s%s", r.Stdout, r.Stderr)
	// The sweeper's timer is enabled the Debian way; the kubelet is not.
	_, err := os.Lstat(filepath.Join(root, "etc/systemd/system/timers.target.wants", layout.SweepTimer))
	assert.Check(t, err, "the sweep timer is not enabled")
	_, err = os.Lstat(filepath.Join(root, "etc/systemd/system/multi-user.target.wants/kubelet.service"))
	assert.Check(t, os.IsNotExist(err), "kubelet.service is enabled")
	conffiles := run(t, "dpkg-query", "--root="+root, "-W", "-f=${Conffiles}", layout.UnversionedName)
	assert.Check(t, is.Contains(conffiles, "/etc/default/kubelet "))

	sel := func(args ...string) {
		t.Helper()
		r := runResult(t, nil, filepath.Join(root, "usr/bin/kubernetes-select"), append([]string{"--root", root}, args...)...)
		assert.Assert(t, is.Equal(r.Code, 0), "kubernetes-select %v: %s", args, r.Stderr)
	}
	serves := func(stage, version string) {
		t.Helper()
		bin := map[string]string{"stage1": "kubeadm", "stage2": "kubelet"}[stage]
		got, err := os.Stat(filepath.Join(root, "usr/bin", bin))
		assert.NilError(t, err)
		want, err := os.Stat(filepath.Join(root, layout.VersionDir(version), stage, "usr/bin", bin))
		assert.NilError(t, err)
		assert.Check(t, os.SameFile(got, want), "/usr/bin/%s does not serve %s", bin, version)
	}
	// Both ways, in both modes: up to the newer version and back.
	for _, mode := range []string{"symlink", "bind"} {
		sel("--mode", mode, "all", older)
		serves("stage1", older)
		serves("stage2", older)
		sel("--mode", mode, "stage1", newer)
		sel("--mode", mode, "stage2", newer)
		serves("stage1", newer)
		serves("stage2", newer)
		sel("--mode", mode, "all", older)
		serves("stage2", older)
	}
	// The selected version (older, bind mode) cannot be removed; the other can.
	r = dpkg("-r", "kubernetes-"+older+"-node")
	assert.Check(t, r.Code != 0, "removing the selected version: %s", r.Stdout)
	assert.Check(t, is.Contains(r.Stderr, "select another version first"))
	status := run(t, "dpkg-query", "--root="+root, "-W", "-f=${Status}", "kubernetes-"+older+"-node")
	// dpkg records that it was asked to remove it (deinstall) and keeps it
	// installed.
	assert.Check(t, strings.HasSuffix(status, " ok installed"), "after the refused removal: %s", status)
	r = dpkg("-r", "kubernetes-"+newer+"-node", "kubernetes-"+newer+"-kubeadm", "kubernetes-"+newer+"-client")
	assert.Check(t, is.Equal(r.Code, 0), "removing the other version: %s%s", r.Stdout, r.Stderr)
	_, err = os.Stat(filepath.Join(root, layout.VersionDir(newer)))
	assert.Check(t, os.IsNotExist(err), "%s still there", newer)
	serves("stage2", older)
	// Purging kubernetes-unversioned is refused while versions depend on it.
	r = dpkg("-P", layout.UnversionedName)
	assert.Check(t, r.Code != 0, "purging kubernetes-unversioned under installed versions")
}

// debootstrapRoot returns a new Debian root with rootPackages, unpacked
// from a debootstrap tarball cached under $KC_CACHE/deb-test-real.
func debootstrapRoot(t *testing.T) string {
	t.Helper()
	cache := os.Getenv("KC_CACHE")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache", "kubelet-compat")
	}
	const suite = "bookworm"
	key := fmt.Sprintf("%x", sha256.Sum256([]byte(suite+" "+strings.Join(rootPackages, ","))))[:16]
	tarball := filepath.Join(cache, "deb-test-real", "rootfs-"+key+".tar")
	if _, err := os.Stat(tarball); err != nil {
		mirror := debianMirror(t, suite)
		assert.NilError(t, os.MkdirAll(filepath.Dir(tarball), 0o755))
		dir := t.TempDir()
		start := time.Now()
		out, err := exec.Command("debootstrap", "--variant=minbase", "--components=main",
			"--include="+strings.Join(rootPackages, ","), suite, filepath.Join(dir, "root"), mirror).CombinedOutput()
		assert.NilError(t, err, "debootstrap:\n%s", tail(out))
		t.Logf("debootstrap %s in %s", suite, time.Since(start).Round(time.Second))
		tmp := tarball + ".tmp"
		out, err = exec.Command("tar", "--numeric-owner", "-C", filepath.Join(dir, "root"), "-cf", tmp, ".").CombinedOutput()
		assert.NilError(t, err, "tar: %s", out)
		assert.NilError(t, os.Rename(tmp, tarball))
	}
	root := filepath.Join(t.TempDir(), "root")
	assert.NilError(t, os.Mkdir(root, 0o755))
	out, err := exec.Command("tar", "--numeric-owner", "-C", root, "-xf", tarball).CombinedOutput()
	assert.NilError(t, err, "tar: %s", out)
	return root
}

// debianMirror is the host's apt source for suite (sources.list or deb822).
func debianMirror(t *testing.T, suite string) string {
	t.Helper()
	paths, _ := filepath.Glob("/etc/apt/sources.list.d/*")
	paths = append(paths, "/etc/apt/sources.list")
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		var uri string
		s := bufio.NewScanner(bytes.NewReader(b))
		for s.Scan() {
			f := strings.Fields(s.Text())
			switch {
			case len(f) >= 3 && f[0] == "deb" && f[2] == suite:
				return f[1]
			case len(f) >= 2 && f[0] == "URIs:":
				uri = f[1]
			case len(f) >= 2 && f[0] == "Suites:" && uri != "":
				for _, x := range f[1:] {
					if x == suite {
						return uri
					}
				}
			case len(f) == 0:
				uri = ""
			}
		}
	}
	t.Fatalf("no apt source for Debian %s on this host", suite)
	return ""
}

func tail(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > 20 {
		lines = lines[len(lines)-20:]
	}
	return strings.Join(lines, "\n")
}
