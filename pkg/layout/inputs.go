package layout

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/kubelet-compat/kubelet-compat/pkg/binversion"
	"github.com/kubelet-compat/kubelet-compat/pkg/exec"
	"github.com/kubelet-compat/kubelet-compat/pkg/filehash"
	"github.com/kubelet-compat/kubelet-compat/pkg/runtimebuild"
	"github.com/kubelet-compat/kubelet-compat/pkg/versions"
)

// plainRelease says whether v is a release as the packages name it:
// major.minor.patch without a leading v or a pre-release, or this project's
// patched build of one, 1.7.36+compat.1 (pkg/versions).
func plainRelease(v string) bool {
	r, err := versions.ParseRelease(v)
	return err == nil && r.String() == v
}

// CheckComponentVersion accepts a runtime component's version as the
// packages name it: a release, 1.7.35, or this project's patched build of
// one, 1.7.36+compat.1.
func CheckComponentVersion(v string) error {
	if !plainRelease(v) {
		return fmt.Errorf("invalid runtime component version %q: want major.minor.patch[+build] without a leading v, e.g. 1.7.35 or 1.7.36+compat.1", v)
	}
	return nil
}

// CheckVersion accepts a Kubernetes version as the packages name it:
// major.minor.patch without a leading v, e.g. 1.21.14, or a pre-release
// as the matrix and the binaries spell it, e.g. 1.38.0-rc.1.
func CheckVersion(v string) error {
	if k, err := versions.ParseKubernetes(v); err != nil || k.String() != v {
		return fmt.Errorf("invalid Kubernetes version %q: want major.minor.patch without a leading v, e.g. 1.21.14, or a pre-release, e.g. 1.38.0-rc.1", v)
	}
	return nil
}

// PackageVersion is the Version both formats give the packages of the
// Kubernetes version v: v itself, but for a pre-release's - that becomes
// a ~ (1.38.0-rc.1: 1.38.0~rc.1), which rpm and dpkg order before the
// release (1.38.0), as Kubernetes does. Neither format allows the - there
// (rpm's Version has none; dpkg would take 1.38.0-rc.1-1 for upstream
// version 1.38.0-rc.1, ordered after 1.38.0), and neither allows a ~ in a
// package name: the names and the directory keep v.
func PackageVersion(v string) string { return strings.Replace(v, "-", "~", 1) }

// BuildRequest is what either format's build is asked for, checked by
// CheckBuild before anything is made.
type BuildRequest struct {
	// What names the packages in messages ("RPMs", "packages").
	What            string
	OutputDir       string
	InputDir        string
	KubeletCompat   string
	SourceDateEpoch int64
	// Versions are Kubernetes versions, or component@version for the
	// runtime (NeedsCLI false).
	Versions []string
	// NeedsCLI: the packages ship the kubelet-compat CLI.
	NeedsCLI bool
}

// CheckBuild refuses a request no format can build reproducibly: no output
// directory, no SOURCE_DATE_EPOCH, an invalid or repeated version, and for
// versioned packages no input directory or no kubelet-compat CLI.
func CheckBuild(r BuildRequest) error {
	if r.OutputDir == "" {
		return errors.New("no output directory")
	}
	if r.SourceDateEpoch <= 0 {
		return fmt.Errorf("SOURCE_DATE_EPOCH must be set (seconds since 1970) for reproducible %s", r.What)
	}
	seen := map[string]bool{}
	for _, v := range r.Versions {
		if strings.Contains(v, "@") {
			if _, version, ok := versions.SplitRef(v); !ok || !plainRelease(version) {
				return fmt.Errorf("invalid runtime component %q: want name@major.minor.patch[+build], e.g. containerd@1.7.35 or containerd@1.7.36+compat.1", v)
			}
		} else if err := CheckVersion(v); err != nil {
			return err
		}
		if seen[v] {
			return fmt.Errorf("version %s given twice", v)
		}
		seen[v] = true
	}
	if len(r.Versions) > 0 {
		if r.InputDir == "" {
			return errors.New("no input directory")
		}
		if !r.NeedsCLI {
			return nil
		}
		if err := CheckExecutable(r.KubeletCompat); err != nil {
			return fmt.Errorf("kubelet-compat CLI: %w", err)
		}
	}
	return nil
}

// ReportsVersion tells whether a binary's version output names exactly v
// ("v1.21.14", not "v1.21.140"; "v1.38.0-rc.1+compat.1" is 1.38.0-rc.1, not
// 1.38.0), to catch binaries of the wrong version.
func ReportsVersion(output []byte, v string) bool {
	return regexp.MustCompile(`(^|[^0-9.])v` + regexp.QuoteMeta(v) + `([^0-9.-]|$)`).Match(output)
}

// CheckExecutable fails unless path is an executable regular file.
func CheckExecutable(path string) error {
	if path == "" {
		return errors.New("no path given")
	}
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() || st.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("%s is not an executable file", path)
	}
	return nil
}

// HasInput tells whether the harness output has the binaries of an
// optional group for version: all of them (true), none (false), or some,
// which is an error naming the missing ones.
func (g Group) HasInput(inputDir, version string) (bool, error) {
	var have, missing []string
	for _, b := range g.HarnessBinaries() {
		if _, err := os.Stat(filepath.Join(g.Input(inputDir, version), b)); err == nil {
			have = append(have, b)
		} else {
			missing = append(missing, b)
		}
	}
	if len(have) > 0 && len(missing) > 0 {
		return false, fmt.Errorf("kubernetes %s: the harness output has %s but not %s, which the %s packages need together",
			version, strings.Join(have, ", "), strings.Join(missing, ", "), g.Key)
	}
	return len(missing) == 0, nil
}

// Inputs are what a build packages besides the description.
type Inputs struct {
	// InputDir holds the harness output: <InputDir>/<ver>/<binary>.
	InputDir string
	// KubeletCompat is the CLI binary.
	KubeletCompat string
	// Shipped returns a shipped file's content, as the format ships it.
	Shipped func(name string) ([]byte, error)
}

// Stage puts every source of group g for version into dir, under its
// StageName: the harness binaries and the CLI as symlinks (each binary
// checked first: it must report version, so a mixed-up harness output
// fails the build instead of making a package that lies), the shipped
// files and the generated kubectl completion as files. home is an empty
// directory kubectl may use as HOME.
func (in Inputs) Stage(ctx context.Context, g Group, version, dir, home string) error {
	for _, src := range g.Sources() {
		dst := filepath.Join(dir, src.StageName())
		switch src.Kind {
		case Harness:
			bin := filepath.Join(g.Input(in.InputDir, version), src.Name)
			if g.Component != "" {
				if err := checkRuntimeBinary(g.Component, version, bin); err != nil {
					return err
				}
				if err := linkSource(bin, dst); err != nil {
					return err
				}
				continue
			}
			if err := CheckExecutable(bin); err != nil {
				return fmt.Errorf("kubernetes %s: %w (is the harness output there?)", version, err)
			}
			out, err := binversion.Ask(ctx, bin, binversion.Args(src.Name)...)
			if err != nil {
				return fmt.Errorf("kubernetes %s: ask %s its version: %w", version, src.Name, err)
			}
			if !ReportsVersion([]byte(out), version) {
				return fmt.Errorf("kubernetes %s: %s reports another version: %q", version, bin, firstLine(out))
			}
			if err := linkSource(bin, dst); err != nil {
				return err
			}
		case CLI:
			if err := linkSource(in.KubeletCompat, dst); err != nil {
				return err
			}
		case Shipped:
			b, err := in.Shipped(src.Name)
			if err != nil {
				return err
			}
			if err := os.WriteFile(dst, b, 0o644); err != nil {
				return fmt.Errorf("stage %s: %w", src.Name, err)
			}
		case Completion:
			// kubectl writes its own completion; a fixed environment keeps it stable.
			completion := exec.Command(filepath.Join(in.InputDir, version, "kubectl"), "completion", "bash")
			completion.Env = []string{"HOME=" + home, "LC_ALL=C", "KUBECONFIG=" + filepath.Join(home, "no-kubeconfig")}
			completion.ReplaceEnv = true
			out, err := completion.Output(ctx)
			if err != nil {
				return fmt.Errorf("kubernetes %s: kubectl bash completion: %w", version, err)
			}
			if len(out) == 0 {
				return fmt.Errorf("kubernetes %s: kubectl completion bash printed nothing", version)
			}
			if err := os.WriteFile(dst, out, 0o644); err != nil {
				return fmt.Errorf("write kubectl completion: %w", err)
			}
		default:
			return fmt.Errorf("source %+v: unknown kind", src)
		}
	}
	return nil
}

// linkSource puts a large input into the staging without copying it.
func linkSource(src, dst string) error {
	abs, err := filepath.Abs(src)
	if err != nil {
		return err
	}
	if err := os.Symlink(abs, dst); err != nil {
		return fmt.Errorf("stage %s: %w", src, err)
	}
	return nil
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}

// checkRuntimeBinary checks a binary of make runtime's output against the
// BUILDINFO.json beside it: the build must be of component@version and
// record the binary with the sha256 it has, so a mixed-up or changed
// input fails the build instead of making a package that lies (running the
// binaries would not do: runc prints its version without the v, the CNI
// plugins answer only CNI_COMMAND=VERSION).
func checkRuntimeBinary(component, version, bin string) error {
	want := component + "@" + version
	if err := CheckExecutable(bin); err != nil {
		return fmt.Errorf("%s: %w (is make runtime's output there?)", want, err)
	}
	info, err := runtimebuild.ReadInfo(filepath.Dir(bin))
	if err != nil {
		return fmt.Errorf("%s: %w", want, err)
	}
	if info.Component != want {
		return fmt.Errorf("%s: %s records a build of %s", want, filepath.Join(filepath.Dir(bin), runtimebuild.InfoFile), info.Component)
	}
	sum, err := filehash.SHA256(bin)
	if err != nil {
		return err
	}
	for _, b := range info.Binaries {
		if b.Name == filepath.Base(bin) {
			if b.SHA256 != sum {
				return fmt.Errorf("%s: %s has sha256 %s, its build recorded %s", want, bin, sum, b.SHA256)
			}
			return nil
		}
	}
	return fmt.Errorf("%s: the build records no %s", want, filepath.Base(bin))
}
