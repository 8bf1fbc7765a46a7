package deb

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/kubelet-compat/kubelet-compat/pkg/layout"
	"github.com/kubelet-compat/kubelet-compat/pkg/packaging"
)

// inRoot rewrites a maintainer script's /usr/local/kubernetes to the test
// root's, so the host's is never looked at.
func inRoot(root, script string) string {
	return strings.ReplaceAll(script, layout.KubeRoot+"/", filepath.Join(root, layout.KubeRoot)+"/")
}

// TestInstalledTreeAndPrerm unpacks every .deb into one tree (what dpkg
// installs), selects versions with the packaged kubernetes-select in both
// modes and checks the links serve them; then runs the versioned
// packages' prerm as dpkg would: "prerm remove" of the selected version is
// refused with one line saying what to do, "prerm upgrade" and the
// removal of another version are not, and the removal waits for the lock
// of kubernetes-select.
func TestInstalledTreeAndPrerm(t *testing.T) {
	requireTools(t, "dpkg-deb", "flock")
	_, debs := buildDebs(t, Config{})
	pkgs := byName(t, debs)
	root := t.TempDir()
	extract(t, root, debs)
	sel := filepath.Join(root, "usr/bin/kubernetes-select")
	modes := []string{"symlink"}
	if os.Geteuid() == 0 {
		modes = append(modes, "bind")
	} else {
		t.Log("bind mode skipped: needs root (CI runs as root)")
	}
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			t.Cleanup(func() {
				for _, stage := range []string{"stage1", "stage2"} {
					exec.Command("umount", "-l", filepath.Join(root, layout.CurrentDir, stage)).Run()
				}
			})
			for _, args := range [][]string{{"--mode", mode, "all", "1.20.15"}, {"--mode", mode, "stage1", "1.21.14"}} {
				r := runResult(t, nil, sel, append([]string{"--root", root}, args...)...)
				assert.Assert(t, is.Equal(r.Code, 0), "kubernetes-select %v: %s", args, r.Stderr)
			}
			// The links serve the selection: kubeadm 1.21.14, the rest 1.20.15.
			for link, version := range map[string]string{"usr/bin/kubeadm": "1.21.14", "usr/bin/kubelet": "1.20.15", "usr/bin/kubectl": "1.20.15"} {
				out := run(t, filepath.Join(root, link), "--version")
				assert.Check(t, is.Contains(out, "v"+version), link)
			}
			for _, tc := range []struct {
				pkg, arg string
				refused  bool
			}{
				{"kubernetes-1.21.14-kubeadm", "remove", true},
				{"kubernetes-1.21.14-kubeadm", "upgrade", false},
				{"kubernetes-1.20.15-node", "remove", true},
				{"kubernetes-1.20.15-client", "remove", true},
				{"kubernetes-1.20.15-node", "upgrade", false},
				{"kubernetes-1.20.15-kubeadm", "remove", false},
				{"kubernetes-1.21.14-client", "remove", false},
			} {
				script := maintainerScript(t, pkgs[tc.pkg], "prerm")
				assert.Assert(t, script != "", "%s has no prerm", tc.pkg)
				r := runResult(t, nil, "/bin/sh", "-c", inRoot(root, script), "prerm", tc.arg)
				assert.Check(t, is.Equal(r.Code != 0, tc.refused), "%s prerm %s: exit %d, %q", tc.pkg, tc.arg, r.Code, r.Stderr)
				if tc.refused {
					assert.Check(t, is.Contains(r.Stderr, "select another version first"))
					assert.Check(t, is.Equal(strings.Count(strings.TrimSpace(r.Stderr), "\n"), 0))
				}
			}
			// Put the execute bit back that the non-refused removal of
			// 1.20.15-kubeadm took (it makes the version unselectable).
			assert.NilError(t, os.Chmod(filepath.Join(root, layout.KubeRoot, "1.20.15/stage1/usr/bin/kubeadm"), 0o755))
		})
	}

	t.Run("removal waits for the lock", func(t *testing.T) {
		holder := exec.Command("flock", filepath.Join(root, layout.CurrentDir), "sleep", "30")
		holder.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		assert.NilError(t, holder.Start())
		t.Cleanup(func() {
			syscall.Kill(-holder.Process.Pid, syscall.SIGKILL)
			holder.Wait()
		})
		time.Sleep(200 * time.Millisecond)
		script := inRoot(root, maintainerScript(t, pkgs["kubernetes-1.21.14-node"], "prerm"))
		assert.Equal(t, strings.Count(script, "flock -w 300 "), 1)
		r := runResult(t, nil, "/bin/sh", "-c", strings.Replace(script, "flock -w 300 ", "flock -w 1 ", 1), "prerm", "remove")
		assert.Check(t, is.Equal(r.Code, 1))
		assert.Check(t, is.Contains(r.Stderr, "kubernetes-select still holds the lock"))
	})
}

// TestUnversionedScripts runs kubernetes-unversioned's maintainer scripts
// as dpkg would, with deb-systemd-helper, deb-systemd-invoke and systemctl
// that log their calls: configure enables the sweep timer (and starts it
// only where systemd runs, which the scripts test with /run/systemd/system
// as debhelper's do); removal stops and masks it, purge forgets it;
// nothing ever names the kubelet. Without the helpers (a chroot before
// init-system-helpers is configured) no script fails.
func TestUnversionedScripts(t *testing.T) {
	requireTools(t, "dpkg-deb")
	_, debs := buildDebs(t, Config{Options: packaging.Options{Versions: []string{}}})
	deb := byName(t, debs)[layout.UnversionedName]
	logFile := filepath.Join(t.TempDir(), "calls")
	fakes := t.TempDir()
	for _, name := range []string{"deb-systemd-helper", "deb-systemd-invoke", "systemctl"} {
		writeExecutable(t, filepath.Join(fakes, name), "#!/bin/sh\necho \""+name+" $*\" >>"+logFile+"\nexit 0\n")
	}
	_, systemd := os.Stat("/run/systemd/system")
	running := systemd == nil
	for _, tc := range []struct {
		script string
		args   []string
		want   []string
	}{
		{"postinst", []string{"configure", ""}, []string{
			"deb-systemd-helper --quiet was-enabled kubelet-compat-sweep.timer",
			"deb-systemd-helper enable kubelet-compat-sweep.timer"}},
		{"prerm", []string{"remove"}, nil},
		{"postrm", []string{"remove"}, []string{"deb-systemd-helper mask kubelet-compat-sweep.timer"}},
		{"postrm", []string{"purge"}, []string{"deb-systemd-helper purge kubelet-compat-sweep.timer", "deb-systemd-helper unmask kubelet-compat-sweep.timer"}},
		{"prerm", []string{"upgrade", "1.0.0-2"}, nil},
	} {
		script := maintainerScript(t, deb, tc.script)
		assert.Assert(t, script != "", "no %s", tc.script)
		os.Remove(logFile)
		r := runResult(t, []string{"PATH=" + fakes + ":/usr/bin:/bin"}, "/bin/sh", append([]string{"-c", script, tc.script}, tc.args...)...)
		assert.Check(t, is.Equal(r.Code, 0), "%s %v: %s", tc.script, tc.args, r.Stderr)
		calls, _ := os.ReadFile(logFile)
		for _, w := range tc.want {
			assert.Check(t, is.Contains(string(calls), w+"\n"), "%s %v", tc.script, tc.args)
		}
		if running && tc.script == "postinst" {
			assert.Check(t, is.Contains(string(calls), "deb-systemd-invoke start kubelet-compat-sweep.timer\n"))
		}
		assert.Check(t, !strings.Contains(string(calls), "kubelet.service"), "%s %v: %q", tc.script, tc.args, calls)
		assert.Check(t, !strings.Contains(string(calls), "start kubelet\n"), "%s %v: %q", tc.script, tc.args, calls)
		// And with no helper at all.
		r = runResult(t, []string{"PATH=" + t.TempDir()}, "/bin/sh", append([]string{"-c", script, tc.script}, tc.args...)...)
		assert.Check(t, is.Equal(r.Code, 0), "%s %v without helpers: %s", tc.script, tc.args, r.Stderr)
	}
}
