package rpm

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/kubelet-compat/kubelet-compat/pkg/binversion"
	"github.com/kubelet-compat/kubelet-compat/pkg/packaging"
	"github.com/kubelet-compat/kubelet-compat/pkg/packaging/packagingtest"
)

// buildRPMs builds every RPM of versions into a new directory and returns
// it with the RPM paths; without cfg.InputDir, from fake binaries.
func buildRPMs(t *testing.T, versions []string, cfg Config) (string, []string) {
	t.Helper()
	work := t.TempDir()
	if cfg.InputDir == "" {
		cfg.InputDir = filepath.Join(work, "harness")
		cfg.KubeletCompat = packagingtest.FakeHarness(t, cfg.InputDir, versions)
	}
	cfg.OutputDir = filepath.Join(work, "rpms")
	cfg.Versions = versions
	if cfg.SourceDateEpoch == 0 {
		cfg.SourceDateEpoch = testEpoch
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	built, err := Build(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cfg.OutputDir, built
}

// buildTestrootBase builds testdata/testroot-base.spec, the stand-in for the
// distribution packages in the test root.
func buildTestrootBase(t *testing.T) string {
	t.Helper()
	top := t.TempDir()
	spec, err := os.ReadFile("testdata/testroot-base.spec")
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Options: packaging.Options{OutputDir: top, SourceDateEpoch: testEpoch}}
	cfg.setDefaults()
	for _, d := range []string{"SOURCES", "SPECS", "BUILD", "BUILDROOT", "RPMS", "SRPMS", "tmp", "rpmdb"} {
		if err := os.Mkdir(filepath.Join(top, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	rpms, err := rpmbuild(context.Background(), cfg, top, "testroot-base.spec", spec)
	if err != nil || len(rpms) != 1 {
		t.Fatalf("build testroot-base: %v %v", rpms, err)
	}
	return rpms[0]
}

// rpmRoot runs rpm on the test root with the database where EL keeps it.
func rpmRoot(t *testing.T, root string, args ...string) string {
	t.Helper()
	return run(t, "rpm", append([]string{"--root", root, "--dbpath", "/var/lib/rpm"}, args...)...)
}

// entry is one path that the packages install.
type entry struct {
	mode   string // as rpm prints it: 40755 directory, 100755 file, 120777 symlink
	owners string // packages owning the path, sorted, comma separated
	link   string // target of a symlink
}

const (
	dirMode  = "40755"
	exeMode  = "100755"
	fileMode = "100644"
	linkMode = "120777"
)

// expectedPaths is every path that kubernetes-unversioned and the versioned
// packages of versions install, written out independently of the specs.
func expectedPaths(versions []string) map[string]entry {
	want := map[string]entry{}
	add := func(path, mode, link string, owners ...string) {
		sort.Strings(owners)
		want[path] = entry{mode: mode, owners: strings.Join(owners, ","), link: link}
	}
	u := UnversionedName
	add("/usr/local/kubernetes", dirMode, "", u)
	add("/usr/local/kubernetes/current", dirMode, "", u)
	add("/usr/local/kubernetes/current/stage1", dirMode, "", u)
	add("/usr/local/kubernetes/current/stage2", dirMode, "", u)
	add("/usr/bin/kubernetes-select", exeMode, "", u)
	add("/usr/bin/kubeadm", linkMode, "../local/kubernetes/current/stage1/usr/bin/kubeadm", u)
	add("/usr/bin/kubelet", linkMode, "../local/kubernetes/current/stage2/usr/bin/kubelet", u)
	add("/usr/bin/kubelet-compat", linkMode, "../local/kubernetes/current/stage2/usr/bin/kubelet-compat", u)
	add("/usr/bin/kubectl", linkMode, "../local/kubernetes/current/stage2/usr/bin/kubectl", u)
	add("/usr/share/bash-completion/completions/kubectl", linkMode,
		"../../../local/kubernetes/current/stage2/usr/share/bash-completion/completions/kubectl", u)
	add("/usr/lib/systemd/system/kubelet.service", fileMode, "", u)
	add("/usr/lib/systemd/system/kubelet.service.d", dirMode, "", u)
	add("/usr/lib/systemd/system/kubelet.service.d/10-kubeadm.conf", linkMode,
		"../../../../local/kubernetes/current/stage2/usr/lib/systemd/system/kubelet.service.d/10-kubeadm.conf", u)
	add("/usr/lib/systemd/system/kubelet-compat-sweep.service", fileMode, "", u)
	add("/usr/lib/systemd/system/kubelet-compat-sweep.timer", fileMode, "", u)
	add("/usr/lib/systemd/system-preset/90-kubelet-compat.preset", fileMode, "", u)
	add("/etc/sysconfig/kubelet", fileMode, "", u)
	for _, v := range versions {
		node, kubeadm, client := "kubernetes-"+v+"-node", "kubernetes-"+v+"-kubeadm", "kubernetes-"+v+"-client"
		d := "/usr/local/kubernetes/" + v
		add(d, dirMode, "", node, kubeadm, client)
		add(d+"/stage1", dirMode, "", kubeadm)
		add(d+"/stage1/usr", dirMode, "", kubeadm)
		add(d+"/stage1/usr/bin", dirMode, "", kubeadm)
		add(d+"/stage1/usr/bin/kubeadm", exeMode, "", kubeadm)
		add(d+"/stage2", dirMode, "", node, client)
		add(d+"/stage2/usr", dirMode, "", node, client)
		add(d+"/stage2/usr/bin", dirMode, "", node, client)
		add(d+"/stage2/usr/bin/kubelet", exeMode, "", node)
		add(d+"/stage2/usr/bin/kubelet-compat", exeMode, "", node)
		add(d+"/stage2/usr/bin/kubectl", exeMode, "", client)
		for _, sub := range []string{"usr/lib", "usr/lib/systemd", "usr/lib/systemd/system", "usr/lib/systemd/system/kubelet.service.d"} {
			add(d+"/stage2/"+sub, dirMode, "", node)
		}
		add(d+"/stage2/usr/lib/systemd/system/kubelet.service.d/10-kubeadm.conf", fileMode, "", node)
		for _, sub := range []string{"usr/share", "usr/share/bash-completion", "usr/share/bash-completion/completions"} {
			add(d+"/stage2/"+sub, dirMode, "", client)
		}
		add(d+"/stage2/usr/share/bash-completion/completions/kubectl", fileMode, "", client)
	}
	return want
}

// installedPaths reads every packaged path from the test root's database.
func installedPaths(t *testing.T, root string) map[string]entry {
	t.Helper()
	out := rpmRoot(t, root, "-qa", "--qf",
		`[%{=NAME}\t%{FILENAMES}\t%{FILEMODES:octal}\t%{FILEUSERNAME}:%{FILEGROUPNAME}\t%{FILELINKTOS}\n]`)
	owners := map[string][]string{}
	got := map[string]entry{}
	for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		f := strings.Split(line, "\t")
		if len(f) != 5 {
			t.Fatalf("unexpected rpm output %q", line)
		}
		name, path, mode, user, link := f[0], f[1], f[2], f[3], f[4]
		if path == "(none)" {
			continue // the test root's base package has no files
		}
		if user != "root:root" {
			t.Errorf("%s in %s is owned by %s, want root:root", path, name, user)
		}
		if prev, ok := got[path]; ok && (prev.mode != mode || prev.link != link) {
			t.Errorf("%s: packages disagree: %+v vs %s %s in %s", path, prev, mode, link, name)
		}
		owners[path] = append(owners[path], name)
		sort.Strings(owners[path])
		got[path] = entry{mode: mode, owners: strings.Join(owners[path], ","), link: link}
	}
	return got
}

func TestInstallAllVersionsSideBySide(t *testing.T) {
	requireRPMTools(t)
	outDir, built := buildRPMs(t, allVersions, Config{})
	if want := 1 + 3*len(allVersions); len(built) != want {
		t.Fatalf("built %d RPMs, want %d: %v", len(built), want, built)
	}
	root := t.TempDir()
	t.Cleanup(func() { unmountUnder(t, root) })

	// No --nodeps, --force or --replacefiles: every version must install
	// beside the others. --noscripts because the scriptlets need /bin/sh
	// inside the root (they are run on their own in TestScriptlets).
	rpmRoot(t, root, append([]string{"-i", "--noscripts", buildTestrootBase(t)}, built...)...)

	t.Run("every path, owner and mode", func(t *testing.T) {
		checkInstalledPaths(t, root, allVersions)
	})

	t.Run("rpm -Va", func(t *testing.T) {
		if out := rpmRoot(t, root, "-Va"); out != "" {
			t.Errorf("rpm -Va:\n%s", out)
		}
	})

	t.Run("requires and provides", func(t *testing.T) {
		checkRequiresAndProvides(t, built, allVersions)
	})

	t.Run("rpm -K", func(t *testing.T) {
		checkDigests(t, built)
	})

	selectTool := filepath.Join(root, "/usr/bin/kubernetes-select")
	for _, tc := range []struct {
		mode, version string
	}{
		{"symlink", "1.21.14"},
		{"bind", "1.20.15"},
		{"symlink", "1.21.14"},
	} {
		t.Run("links resolve after select in "+tc.mode+" mode", func(t *testing.T) {
			if tc.mode == "bind" {
				requireRoot(t, "bind mode (mount --bind)")
			}
			run(t, selectTool, "--root", root, "--mode", tc.mode, "all", tc.version)
			checkLinksServe(t, root, tc.version)
		})
	}

	t.Run("systemd-analyze verify", func(t *testing.T) {
		verifyUnits(t, root)
	})

	t.Run("upgrading kubernetes-unversioned keeps the selection", func(t *testing.T) {
		// What a commit that changes kubernetes-select builds: rpm -U takes
		// it for the newer package because its release is higher.
		var changed Config
		changeSource(t, &changed, "files/kubernetes-select", func(s string) string { return s + "# changed\n" })
		var err error
		changed.ReleaseTable, _, err = BumpReleases(ReleaseTable, changed)
		assert.NilError(t, err)
		_, upgrade := buildRPMs(t, nil, changed)
		was := strings.TrimSpace(rpmRoot(t, root, "-q", UnversionedName))
		rpmRoot(t, root, "-U", "--noscripts", upgrade[0])
		got := strings.TrimSpace(rpmRoot(t, root, "-q", UnversionedName))
		if want := strings.TrimSuffix(filepath.Base(upgrade[0]), ".rpm"); got != want || got == was {
			t.Fatalf("after rpm -U: %s installed, want %s (was %s)", got, want, was)
		}
		checkLinksServe(t, root, "1.21.14")
		if out := rpmRoot(t, root, "-V", UnversionedName); out != "" {
			t.Errorf("rpm -V after upgrade:\n%s", out)
		}
	})

	t.Run("erasing one version leaves the others", func(t *testing.T) {
		rpmRoot(t, root, "-e", "--noscripts", "kubernetes-1.18.19-node", "kubernetes-1.18.19-kubeadm", "kubernetes-1.18.19-client")
		if _, err := os.Lstat(filepath.Join(root, KubeRoot, "1.18.19")); !os.IsNotExist(err) {
			t.Errorf("1.18.19 still there after erase: %v", err)
		}
		checkLinksServe(t, root, "1.21.14")
		if out := rpmRoot(t, root, "-Va"); out != "" {
			t.Errorf("rpm -Va after erase:\n%s", out)
		}
	})
	t.Logf("RPMs in %s", outDir)
}

// checkInstalledPaths compares the paths the rpm database of root lists,
// their owners, modes and link targets, and the same on disk, with what
// the packages of versions must install.
func checkInstalledPaths(t *testing.T, root string, versions []string) {
	t.Helper()
	want := expectedPaths(versions)
	got := installedPaths(t, root)
	for path, w := range want {
		g, ok := got[path]
		if !ok {
			t.Errorf("%s is not installed", path)
			continue
		}
		if g != w {
			t.Errorf("%s: got %+v, want %+v", path, g, w)
		}
		// The same on disk.
		st, err := os.Lstat(filepath.Join(root, path))
		if err != nil {
			t.Errorf("%s: %v", path, err)
			continue
		}
		sys := st.Sys().(*syscall.Stat_t)
		if mode := fmt.Sprintf("%o", sys.Mode); mode != w.mode {
			t.Errorf("%s on disk: mode %s, want %s", path, mode, w.mode)
		}
		if os.Geteuid() == 0 && (sys.Uid != 0 || sys.Gid != 0) {
			t.Errorf("%s on disk: owner %d:%d, want 0:0", path, sys.Uid, sys.Gid)
		}
		if w.link != "" {
			if target, _ := os.Readlink(filepath.Join(root, path)); target != w.link {
				t.Errorf("%s on disk links to %q, want %q", path, target, w.link)
			}
		}
	}
	for path := range got {
		if _, ok := want[path]; !ok {
			t.Errorf("unexpected path %s (%+v)", path, got[path])
		}
	}
	flags := rpmRoot(t, root, "-q", "--qf", `[%{FILENAMES} %{FILEFLAGS:fflags}\n]`, UnversionedName)
	if !strings.Contains(flags, "/etc/sysconfig/kubelet cn\n") {
		t.Errorf("/etc/sysconfig/kubelet is not %%config(noreplace):\n%s", flags)
	}
}

// checkDigests runs rpm -K on the RPMs.
func checkDigests(t *testing.T, built []string) {
	t.Helper()
	out := run(t, "rpm", append([]string{"-K"}, built...)...)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != len(built) {
		t.Fatalf("rpm -K printed %d lines for %d RPMs:\n%s", len(lines), len(built), out)
	}
	for _, l := range lines {
		if !strings.HasSuffix(l, ": digests OK") {
			t.Errorf("rpm -K: %s", l)
		}
	}
}

// racePreunAndSelect runs the %preun script and kubernetes-select stage2
// 1.21.14 on root, the one named by first ("select" or "preun") held in
// the middle of its work while the other runs, and returns what each did.
func racePreunAndSelect(t *testing.T, root, script, first string) (sel, pre result) {
	t.Helper()
	mark := filepath.Join(t.TempDir(), "paused")
	slow := func(name string) []string {
		dir := fakeCommands(t, map[string]string{name: fmt.Sprintf("\"$REAL_%s\" \"$@\" || exit\n: >%q\nsleep 1\n", strings.ToUpper(name), mark)})
		return []string{"PATH=" + dir + ":" + os.Getenv("PATH")}
	}
	var selEnv, preunEnv []string
	if first == "select" {
		selEnv = slow("ln")
	} else {
		preunEnv = slow("stat")
	}
	if first == "select" {
		wait := startSelect(t, selEnv, root, "stage2", "1.21.14")
		waitForFile(t, mark)
		pre = runResult(t, preunEnv, "/bin/sh", "-c", script, "preun", "0")
		sel = wait()
	} else {
		cmd := exec.Command("/bin/sh", "-c", script, "preun", "0")
		cmd.Env = append(os.Environ(), preunEnv...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		assert.NilError(t, cmd.Start())
		waitForFile(t, mark)
		sel = kubernetesSelect(t, nil, root, "stage2", "1.21.14")
		err := cmd.Wait()
		pre = result{Stderr: stderr.String()}
		if exitErr, ok := err.(*exec.ExitError); ok {
			pre.Code = exitErr.ExitCode()
		}
	}
	return sel, pre
}

// checkLinksServe checks that every link of kubernetes-unversioned resolves
// inside root to version's own file (the same inode, through a symlink or a
// bind mount alike), and that the binaries report version.
func checkLinksServe(t *testing.T, root, version string) {
	t.Helper()
	for _, l := range UnversionedLinks(DefaultUnitDir) {
		inCurrent := path.Join(path.Dir(l.Path), l.Target) // .../current/stageN/...
		want := filepath.Join(root, KubeRoot, version, strings.TrimPrefix(inCurrent, CurrentDir+"/"))
		got, err := os.Stat(filepath.Join(root, l.Path))
		if err != nil {
			t.Errorf("%s does not resolve: %v", l.Path, err)
			continue
		}
		if wst, err := os.Stat(want); err != nil || !os.SameFile(got, wst) {
			t.Errorf("%s does not serve %s (%v)", l.Path, want, err)
			continue
		}
		if name := path.Base(l.Path); isKubeBinary[name] && path.Dir(l.Path) == "/usr/bin" {
			args := binversion.Args(name)
			if out := run(t, filepath.Join(root, l.Path), args...); !reportsVersion([]byte(out), version) {
				t.Errorf("%s %v = %q, want version %s", l.Path, args, out, version)
			}
		}
	}
}

// isKubeBinary names the binaries whose version the links must report.
var isKubeBinary = map[string]bool{"kubelet": true, "kubeadm": true, "kubectl": true}

// verifyUnits runs systemd-analyze verify on the installed units, the
// kubelet drop-in included (through its link into current/stage2). It
// borrows the host's targets and slices, which units depend on.
func verifyUnits(t *testing.T, root string) {
	t.Helper()
	if _, err := exec.LookPath("systemd-analyze"); err != nil {
		t.Skip("systemd-analyze not installed")
	}
	targets, _ := filepath.Glob("/usr/lib/systemd/system/*.target")
	slices, _ := filepath.Glob("/usr/lib/systemd/system/*.slice")
	if len(targets) == 0 {
		t.Skip("no systemd targets on this host to verify against")
	}
	unitDir := filepath.Join(root, DefaultUnitDir)
	for _, p := range append(targets, slices...) {
		dst := filepath.Join(unitDir, filepath.Base(p))
		if _, err := os.Lstat(dst); err == nil {
			continue // never touch a packaged unit
		}
		b, err := os.ReadFile(p)
		if err != nil {
			continue // a dangling alias on the host
		}
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Remove(dst) })
	}
	for _, unit := range []string{"kubelet.service", "kubelet-compat-sweep.service", "kubelet-compat-sweep.timer"} {
		r := runResult(t, nil, "systemd-analyze", "--root="+root, "verify", filepath.Join(unitDir, unit))
		if r.Code != 0 || r.Stdout+r.Stderr != "" {
			t.Errorf("systemd-analyze verify %s: exit %d:\n%s%s", unit, r.Code, r.Stdout, r.Stderr)
		}
	}
}

// rpmlibOK lists the rpmlib() features the RPMs may need: all of them are
// in EL7's rpm 4.11 (zstd payloads, for one, are not).
var rpmlibOK = map[string]bool{
	"rpmlib(CompressedFileNames) <= 3.0.4-1":  true,
	"rpmlib(FileDigests) <= 4.6.0-1":          true,
	"rpmlib(PayloadFilesHavePrefix) <= 4.0-1": true,
	"rpmlib(PayloadIsXz) <= 5.2-1":            true,
}

// checkRequiresAndProvides checks rpm -qp --requires/--provides of every
// package. Every versioned package needs /bin/sh, coreutils (stat, chmod)
// and util-linux (flock) for its %preun (the tests' fake binaries, shell scripts, need /bin/sh too; real
// static Go binaries add nothing).
func checkRequiresAndProvides(t *testing.T, rpms []string, versions []string) {
	t.Helper()
	cfg := Config{Options: packaging.Options{Versions: versions}}
	cfg.setDefaults()
	assert.NilError(t, cfg.resolveReleases())
	evr := func(v string) string { return v + "-" + cfg.Release + DefaultDist }
	type deps struct{ requires, provides []string }
	want := map[string]deps{}
	uEVR := DefaultUnversionedVersion + "-" + cfg.UnversionedRelease + DefaultDist
	want[UnversionedName] = deps{
		requires: []string{"/bin/bash", "/bin/sh", "bash", "config(kubernetes-unversioned) = " + uEVR, "coreutils", "systemd", "util-linux"},
		provides: []string{"config(kubernetes-unversioned) = " + uEVR, "kubernetes-unversioned = " + uEVR},
	}
	preun := []string{"/bin/sh", "coreutils", "util-linux"}
	for _, v := range versions {
		for _, pkg := range []struct {
			sub, virtual string
			requires     []string
		}{
			{"node", "kubernetes-node", []string{"conntrack", "ebtables", "ethtool", "iproute", "iptables >= 1.4.21", "kubernetes-unversioned", "socat", "util-linux"}},
			{"kubeadm", "kubernetes-kubeadm", []string{"kubernetes-unversioned"}},
			{"client", "kubernetes-client", []string{"kubernetes-unversioned"}},
		} {
			name := "kubernetes-" + v + "-" + pkg.sub
			want[name] = deps{
				requires: append(append([]string{}, pkg.requires...), preun...),
				provides: []string{name + " = " + evr(v), name + "(x86-64) = " + evr(v), pkg.virtual + " = " + evr(v)},
			}
		}
	}
	for _, p := range rpms {
		name := strings.TrimSpace(run(t, "rpm", "-qp", "--qf", "%{NAME}", p))
		w, ok := want[name]
		if !ok {
			t.Errorf("unexpected package %s", name)
			continue
		}
		delete(want, name)
		var requires []string
		for _, r := range uniqueLines(run(t, "rpm", "-qp", "--requires", p)) {
			if strings.HasPrefix(r, "rpmlib(") {
				if !rpmlibOK[r] {
					t.Errorf("%s requires %s, which EL7's rpm lacks", name, r)
				}
				continue
			}
			requires = append(requires, r)
		}
		if got, want := strings.Join(requires, "\n"), strings.Join(uniqueLines(strings.Join(w.requires, "\n")), "\n"); got != want {
			t.Errorf("%s requires:\n%s\nwant:\n%s", name, got, want)
		}
		if got, want := strings.Join(uniqueLines(run(t, "rpm", "-qp", "--provides", p)), "\n"), strings.Join(sorted(w.provides), "\n"); got != want {
			t.Errorf("%s provides:\n%s\nwant:\n%s", name, got, want)
		}
	}
	for name := range want {
		t.Errorf("package %s was not built", name)
	}
}

func uniqueLines(s string) []string {
	seen := map[string]bool{}
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		if l = strings.TrimSpace(l); l != "" && !seen[l] {
			seen[l] = true
			out = append(out, l)
		}
	}
	sort.Strings(out)
	return out
}

func sorted(s []string) []string {
	out := append([]string{}, s...)
	sort.Strings(out)
	return out
}

// TestRebuildIsByteIdentical builds everything twice, from inputs with other
// mtimes, in another directory, at another second, and wants the same bytes.
func TestRebuildIsByteIdentical(t *testing.T) {
	requireRPMTools(t)
	input := filepath.Join(t.TempDir(), "harness")
	cli := packagingtest.FakeHarness(t, input, allVersions)
	first, _ := buildRPMs(t, allVersions, Config{Options: packaging.Options{InputDir: input, KubeletCompat: cli}})

	later := time.Now().Add(time.Hour)
	filepath.Walk(input, func(p string, _ os.FileInfo, _ error) error { return os.Chtimes(p, later, later) })
	time.Sleep(1100 * time.Millisecond)
	second, _ := buildRPMs(t, allVersions, Config{Options: packaging.Options{InputDir: input, KubeletCompat: cli, Jobs: 3}})

	a, err := os.ReadFile(filepath.Join(first, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(second, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(a), "\n"); n != 1+3*len(allVersions) {
		t.Errorf("SHA256SUMS lists %d RPMs", n)
	}
	if string(a) != string(b) {
		t.Errorf("rebuild differs:\nfirst:\n%s\nsecond:\n%s", a, b)
	}
	// And a different SOURCE_DATE_EPOCH does change them: the clamp is real.
	third, _ := buildRPMs(t, allVersions[:1], Config{Options: packaging.Options{InputDir: input, KubeletCompat: cli, SourceDateEpoch: testEpoch + 1}})
	c, _ := os.ReadFile(filepath.Join(third, "SHA256SUMS"))
	if strings.Contains(string(a), strings.SplitN(string(c), "\n", 2)[0]) {
		t.Error("another SOURCE_DATE_EPOCH gave the same RPM: is it used at all?")
	}
}

// TestScriptlets runs kubernetes-unversioned's scriptlets with /bin/sh on the
// host, as rpm would on a node: with a systemctl that logs its calls, and
// with no systemctl at all (a chroot, a container); they must never fail.
func TestScriptlets(t *testing.T) {
	requireRPMTools(t)
	_, built := buildRPMs(t, nil, Config{})
	logFile := filepath.Join(t.TempDir(), "calls")
	withSystemctl := t.TempDir()
	writeExecutable(t, filepath.Join(withSystemctl, "systemctl"), "#!/bin/sh\necho \"$*\" >>"+logFile+"\nexit 0\n")
	without := t.TempDir()
	for _, tc := range []struct {
		tag, arg  string // rpm's scriptlet tag and its $1
		wantCalls []string
	}{
		{"POSTIN", "1", []string{"--no-reload preset kubelet-compat-sweep.timer"}},
		{"POSTIN", "2", nil},
		{"PREUN", "0", []string{"--no-reload disable --now kubelet-compat-sweep.timer"}},
		{"PREUN", "1", nil},
		{"POSTUN", "0", nil},
	} {
		script := run(t, "rpm", "-qp", "--qf", "%{"+tc.tag+"}", built[0])
		if script == "(none)" || strings.TrimSpace(script) == "" {
			t.Fatalf("%s has no %s scriptlet", built[0], tc.tag)
		}
		for _, path := range []string{withSystemctl, without} {
			os.Remove(logFile)
			r := runResult(t, []string{"PATH=" + path}, "/bin/sh", "-c", script, "scriptlet", tc.arg)
			if r.Code != 0 {
				t.Errorf("%s $1=%s with PATH=%s: exit %d: %s", tc.tag, tc.arg, path, r.Code, r.Stderr)
			}
		}
		// The last run had no systemctl; rerun with it to see the calls.
		os.Remove(logFile)
		runResult(t, []string{"PATH=" + withSystemctl}, "/bin/sh", "-c", script, "scriptlet", tc.arg)
		calls, _ := os.ReadFile(logFile)
		for _, c := range tc.wantCalls {
			if !strings.Contains(string(calls), c+"\n") {
				t.Errorf("%s $1=%s: systemctl calls %q lack %q", tc.tag, tc.arg, calls, c)
			}
		}
		if tc.wantCalls == nil && strings.Contains(string(calls), "preset") {
			t.Errorf("%s $1=%s: unexpected preset: %q", tc.tag, tc.arg, calls)
		}
	}
}

// TestPreunRefusesSelectedVersion runs the versioned packages' %preun as rpm
// would on a node, against a fake tree: erasing the version a stage serves
// must fail with a message that says what to do, and upgrading it ($1 = 1)
// or erasing another version must not. The scriptlet's
// /usr/local/kubernetes is rewritten to the fake tree's, so the host's is
// never looked at.
func TestPreunRefusesSelectedVersion(t *testing.T) {
	requireRPMTools(t)
	versions := []string{"1.20.15", "1.21.14"}
	_, built := buildRPMs(t, versions, Config{})
	preun := preunScripts(t, built)
	for _, mode := range []string{"symlink", "bind"} {
		t.Run(mode, func(t *testing.T) {
			root := installedTreeFor(t, mode, versions)
			for _, args := range [][]string{{"--mode", mode, "all", "1.20.15"}, {"stage1", "1.21.14"}} {
				if r := kubernetesSelect(t, nil, root, args...); r.Code != 0 {
					t.Fatalf("setup %v: %s", args, r.Stderr)
				}
			}
			// stage1 serves 1.21.14 (kubeadm), stage2 1.20.15 (node, client).
			for _, tc := range []struct {
				pkg, arg string
				refused  bool
			}{
				{"kubernetes-1.21.14-kubeadm", "0", true},
				{"kubernetes-1.21.14-kubeadm", "1", false},
				{"kubernetes-1.21.14-node", "0", false},
				{"kubernetes-1.21.14-client", "0", false},
				{"kubernetes-1.20.15-node", "0", true},
				{"kubernetes-1.20.15-client", "0", true},
				{"kubernetes-1.20.15-node", "1", false},
				{"kubernetes-1.20.15-kubeadm", "0", false},
			} {
				r := runResult(t, nil, "/bin/sh", "-c", preunIn(root, preun[tc.pkg]), "preun", tc.arg)
				if refused := r.Code != 0; refused != tc.refused {
					t.Errorf("%s %%preun $1=%s: exit %d, stderr %q; want refused=%v", tc.pkg, tc.arg, r.Code, r.Stderr, tc.refused)
				}
				if tc.refused && (!strings.Contains(r.Stderr, "select another version first") ||
					strings.Count(strings.TrimSpace(r.Stderr), "\n") != 0) {
					t.Errorf("%s: want one line that says to select another version first, got %q", tc.pkg, r.Stderr)
				}
			}
		})
	}
}

// preunScripts returns the %preun of every versioned package in built, by
// package name.
func preunScripts(t *testing.T, built []string) map[string]string {
	t.Helper()
	preun := map[string]string{}
	for _, p := range built {
		name := strings.TrimSpace(run(t, "rpm", "-qp", "--qf", "%{NAME}", p))
		if name == UnversionedName {
			continue
		}
		script := run(t, "rpm", "-qp", "--qf", "%{PREUN}", p)
		if script == "(none)" || strings.TrimSpace(script) == "" {
			t.Errorf("%s has no %%preun", name)
			continue
		}
		if prog := run(t, "rpm", "-qp", "--qf", "%{PREUNPROG}", p); prog != "/bin/sh" {
			t.Errorf("%s: %%preun runs with %q, want /bin/sh", name, prog)
		}
		preun[name] = script
	}
	if t.Failed() {
		t.FailNow()
	}
	return preun
}

// preunIn rewrites a %preun's /usr/local/kubernetes to the fake tree's
// under root, so that the host's is never looked at.
func preunIn(root, script string) string {
	return strings.ReplaceAll(script, KubeRoot+"/", filepath.Join(root, KubeRoot)+"/")
}

// TestPreunTakesTheSelectLock: an erase and a selection must not race.
// %preun takes the lock of kubernetes-select: erasing a version that a
// selection in progress is making current is refused, and a selection that
// waited for an erase does not select the version being erased.
// A slow `ln` (in the selection) or `stat` (in %preun) holds the first one
// in the middle of its work while the second one starts.
func TestPreunTakesTheSelectLock(t *testing.T) {
	requireRPMTools(t)
	versions := []string{"1.20.15", "1.21.14"}
	_, built := buildRPMs(t, versions, Config{})
	preun := preunScripts(t, built)
	for _, tc := range []struct {
		name      string
		first     string // "select" or "preun": the one held in the middle
		wantPreun int    // exit status of %preun
		wantSel   int    // exit status of kubernetes-select stage2 1.21.14
		wantServe string // stage2 afterwards
	}{
		{name: "erase during a selection of it is refused", first: "select", wantPreun: 1, wantSel: 0, wantServe: "1.21.14"},
		{name: "a selection during an erase does not select it", first: "preun", wantPreun: 0, wantSel: 1, wantServe: "1.20.15"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // trees of their own
			root := t.TempDir()
			makeInstalledTree(t, root, versions)
			for _, args := range [][]string{{"all", "1.20.15"}, {"stage1", "1.21.14"}} {
				r := kubernetesSelect(t, nil, root, args...)
				assert.Equal(t, r.Code, 0, "setup %v: %s", args, r.Stderr)
			}
			sel, pre := racePreunAndSelect(t, root, preunIn(root, preun["kubernetes-1.21.14-node"]), tc.first)
			assert.Check(t, is.Equal(pre.Code, tc.wantPreun), "%%preun of kubernetes-1.21.14-node: stderr %q", pre.Stderr)
			assert.Check(t, is.Equal(sel.Code, tc.wantSel), "kubernetes-select stage2 1.21.14: stdout %q, stderr %q", sel.Stdout, sel.Stderr)
			assert.Check(t, is.Equal(selectedVersion(t, root, "stage2"), tc.wantServe))
		})
	}

	// A lock held too long: the erase is refused and nothing changes. The
	// test waits 1 s instead of 300.
	for _, pkg := range []string{"kubernetes-1.21.14-node", "kubernetes-1.21.14-kubeadm", "kubernetes-1.21.14-client"} {
		t.Run("lock held too long/"+pkg, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			makeInstalledTree(t, root, versions)
			holder := exec.Command("flock", filepath.Join(root, CurrentDir), "sleep", "30")
			holder.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			assert.NilError(t, holder.Start())
			t.Cleanup(func() {
				syscall.Kill(-holder.Process.Pid, syscall.SIGKILL)
				holder.Wait()
			})
			time.Sleep(200 * time.Millisecond)
			script := preunIn(root, preun[pkg])
			assert.Equal(t, strings.Count(script, "flock -w 300 "), 1)
			script = strings.Replace(script, "flock -w 300 ", "flock -w 1 ", 1)
			r := runResult(t, nil, "/bin/sh", "-c", script, "preun", "0")
			assert.Check(t, is.Equal(r.Code, 1))
			assert.Check(t, is.Contains(r.Stderr, "kubernetes-select still holds the lock"))
			for _, bin := range []string{"stage1/usr/bin/kubeadm", "stage2/usr/bin/kubelet"} {
				st, err := os.Stat(filepath.Join(root, KubeRoot, "1.21.14", bin))
				assert.NilError(t, err)
				assert.Check(t, is.Equal(st.Mode().Perm(), os.FileMode(0o755)), bin)
			}
		})
	}

	// A %preun that lets the erase go on leaves the version unselectable;
	// an upgrade ($1 = 1) and -client's leave it as it was.
	for _, tc := range []struct {
		pkg, arg string
		wantGone []string // stages kubernetes-select refuses afterwards
	}{
		{pkg: "kubernetes-1.21.14-node", arg: "0", wantGone: []string{"stage2"}},
		{pkg: "kubernetes-1.21.14-kubeadm", arg: "0", wantGone: []string{"stage1"}},
		{pkg: "kubernetes-1.21.14-client", arg: "0"},
		{pkg: "kubernetes-1.21.14-node", arg: "1"},
		{pkg: "kubernetes-1.21.14-kubeadm", arg: "1"},
	} {
		t.Run("unselectable after %preun/"+tc.pkg+"/$1="+tc.arg, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			makeInstalledTree(t, root, versions)
			r := kubernetesSelect(t, nil, root, "all", "1.20.15")
			assert.Equal(t, r.Code, 0, "setup: %s", r.Stderr)
			r = runResult(t, nil, "/bin/sh", "-c", preunIn(root, preun[tc.pkg]), "preun", tc.arg)
			assert.Check(t, is.Equal(r.Code, 0), "%s $1=%s: %s", tc.pkg, tc.arg, r.Stderr)
			for _, stage := range []string{"stage1", "stage2"} {
				gone := false
				for _, g := range tc.wantGone {
					gone = gone || g == stage
				}
				r := kubernetesSelect(t, nil, root, "--force", stage, "1.21.14")
				if gone {
					assert.Check(t, r.Code == 1 && strings.Contains(r.Stderr, "1.21.14 is not installed"),
						"%s $1=%s, then select %s 1.21.14: exit %d, stderr %q", tc.pkg, tc.arg, stage, r.Code, r.Stderr)
				} else {
					assert.Check(t, is.Equal(r.Code, 0), "%s $1=%s, then select %s 1.21.14: %s", tc.pkg, tc.arg, stage, r.Stderr)
				}
			}
		})
	}
}
