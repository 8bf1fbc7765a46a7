package nodeimage

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/kubelet-compat/kubelet-compat/pkg/exec"
)

// packageSet is where the node's Debian packages are: patched (every
// version of Options.Versions) and unpatched (the control:
// Options.UnpatchedVersions' unpatched kubelet). Debian nodes install
// .debs with dpkg, as Debian operators do; the RPMs are tested on their
// own (make rpm-test-real).
type packageSet struct {
	patched, unpatched string
}

// NodePackageNames are the packages of version v a node installs: the
// versioned node, kubeadm and client packages.
func NodePackageNames(v string) []string {
	return []string{"kubernetes-" + v + "-node", "kubernetes-" + v + "-kubeadm", "kubernetes-" + v + "-client"}
}

// NodePackages are NodePackageNames(v)'s .debs, as globs.
func NodePackages(v string) []string {
	var globs []string
	for _, n := range NodePackageNames(v) {
		globs = append(globs, n+"_*.deb")
	}
	return globs
}

// forVersion returns the patched packages a node of version v installs:
// kubernetes-unversioned and NodePackages(v).
func (r packageSet) forVersion(v string) ([]string, error) {
	var out []string
	for _, glob := range append([]string{"kubernetes-unversioned_*.deb"}, NodePackages(v)...) {
		m, _ := filepath.Glob(filepath.Join(r.patched, glob))
		if len(m) != 1 {
			return nil, fmt.Errorf("want one %s in %s, found %d", glob, r.patched, len(m))
		}
		out = append(out, m[0])
	}
	return out, nil
}

// PackageDir is where the kind images' packages of a variant (patched,
// unpatched) are, under the repository's _output.
func PackageDir(output, variant string) string { return filepath.Join(output, "kind", "debs", variant) }

// buildPackages packages the patched binaries into kind/debs/patched and
// the unpatched kubelets (with the same kubeadm and kubectl) into
// kind/debs/unpatched, each skipped when its inputs did not change.
func (b *builder) buildPackages(ctx context.Context) (packageSet, error) {
	set := packageSet{patched: PackageDir(b.opts.OutputDir, "patched"), unpatched: PackageDir(b.opts.OutputDir, "unpatched")}
	var tools debTools
	var err error
	if tools.cli, err = b.buildCLI(ctx); err != nil {
		return set, err
	}
	// Built, then run: a cancelled `go run` would leave its child
	// building packages, holding the log's pipe until it is done.
	if tools.buildPackages, err = b.buildTool(ctx, "build-packages", "./cmd/build-packages"); err != nil {
		return set, err
	}
	patchedIn := map[string]map[string]string{}
	for _, v := range b.opts.Versions {
		dir := filepath.Join(b.opts.OutputDir, v)
		patchedIn[v] = map[string]string{"kubelet": filepath.Join(dir, "kubelet"), "kubeadm": filepath.Join(dir, "kubeadm"), "kubectl": filepath.Join(dir, "kubectl")}
	}
	if err := b.debbuild(ctx, "patched", patchedIn, tools, set.patched); err != nil {
		return set, err
	}
	if len(b.opts.UnpatchedVersions) == 0 {
		return set, nil
	}
	unpatchedIn := map[string]map[string]string{}
	for _, v := range b.opts.UnpatchedVersions {
		dir := filepath.Join(b.opts.OutputDir, v)
		kubelet := filepath.Join(b.opts.OutputDir, v+"-unpatched", "kubelet")
		if err := b.waitForFile(ctx, kubelet); err != nil {
			return set, err
		}
		unpatchedIn[v] = map[string]string{"kubelet": kubelet, "kubeadm": filepath.Join(dir, "kubeadm"), "kubectl": filepath.Join(dir, "kubectl")}
	}
	return set, b.debbuild(ctx, "unpatched", unpatchedIn, tools, set.unpatched)
}

// debTools are what debbuild runs and packages: build-packages and the
// kubelet-compat CLI the node packages ship.
type debTools struct{ buildPackages, cli string }

// debbuild runs cmd/build-packages -format deb on a staging input dir of links to in
// (version -> binary name -> path) and replaces out with the result.
func (b *builder) debbuild(ctx context.Context, what string, in map[string]map[string]string, tools debTools, out string) error {
	epoch := b.sourceDateEpoch(ctx)
	parts := map[string][]byte{"epoch": []byte(epoch)}
	if parts["cli"], _ = fileSHA256Bytes(tools.cli); parts["cli"] == nil {
		return fmt.Errorf("hashing %s", tools.cli)
	}
	var versions []string
	for v, bins := range in {
		versions = append(versions, v)
		for name, path := range bins {
			sum, err := fileSHA256(path)
			if err != nil {
				return err
			}
			parts[v+"/"+name] = []byte(sum)
		}
	}
	sort.Strings(versions)
	hash := contentHash(parts)
	stamp := filepath.Join(out, ".inputs")
	if old, err := os.ReadFile(stamp); err == nil && string(old) == hash {
		b.logf("%s packages in %s are up to date", what, out)
		return nil
	}
	done := b.step(what + " packages of " + strings.Join(versions, " "))
	stage, err := b.tempDir("deb-" + what)
	if err != nil {
		return err
	}
	defer os.RemoveAll(stage)
	for v, bins := range in {
		if err := os.MkdirAll(filepath.Join(stage, "input", v), 0o755); err != nil {
			return err
		}
		for name, path := range bins {
			if err := os.Symlink(path, filepath.Join(stage, "input", v, name)); err != nil {
				return err
			}
		}
	}
	result := filepath.Join(stage, "debs")
	cmd := exec.Command(tools.buildPackages, "-format", "deb", "-input", filepath.Join(stage, "input"), "-output", result,
		"-versions", strings.Join(versions, " "), "-kubelet-compat", tools.cli, "-source-date-epoch", epoch)
	// build-packages stops its dpkg-debs on an interrupt; a SIGKILL would
	// leave them packaging into a removed directory.
	cmd.Dir, cmd.Log, cmd.InterruptGrace = b.opts.RepoRoot, b.cmdLog, 10*time.Second
	if err := cmd.Run(ctx); err != nil {
		return fmt.Errorf("build-packages (%s): %w", what, err)
	}
	if err := os.WriteFile(filepath.Join(result, ".inputs"), []byte(hash), 0o644); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	if err := os.RemoveAll(out); err != nil {
		return err
	}
	if err := os.Rename(result, out); err != nil {
		return err
	}
	done()
	return nil
}

// goBinary builds the repository's package pkg into kind/bin/name,
// static and reproducible (as make deb builds the CLI).
func (b *builder) goBinary(ctx context.Context, name, pkg string) (string, error) {
	dir := filepath.Join(b.kindDir, "bin")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	out := filepath.Join(dir, name)
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w -buildid=", "-o", out, pkg)
	cmd.Dir, cmd.Env, cmd.Log = b.opts.RepoRoot, []string{"CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64"}, b.cmdLog
	if err := cmd.Run(ctx); err != nil {
		return "", fmt.Errorf("building %s: %w", pkg, err)
	}
	return out, nil
}

// buildTool builds a command the builder then runs on this host (the
// hostdeps test follows these calls into the command's programs).
func (b *builder) buildTool(ctx context.Context, name, pkg string) (string, error) {
	return b.goBinary(ctx, name, pkg)
}

// buildCLI builds the kubelet-compat CLI the node packages ship.
func (b *builder) buildCLI(ctx context.Context) (string, error) {
	return b.goBinary(ctx, "kubelet-compat", "./cmd/kubelet-compat")
}

// sourceDateEpoch is the commit time of the last commit that changed how
// the packages are made (make deb uses HEAD's; that would rebuild every
// node image on every commit). The binaries, the CLI's included, are
// inputs of their own (their sha256), so the code they are built from is
// not among these paths.
func (b *builder) sourceDateEpoch(ctx context.Context) string {
	cmd := exec.Command("git", "log", "-1", "--format=%ct", "--", "deb", "rpm", "pkg/layout", "pkg/packaging", "cmd/build-packages", ":(exclude)*.md")
	cmd.Dir = b.opts.RepoRoot
	out, err := cmd.Output(ctx)
	if s := strings.TrimSpace(string(out)); err == nil {
		if _, err := strconv.ParseInt(s, 10, 64); err == nil {
			return s
		}
	}
	return "1577836800"
}

func fileSHA256Bytes(path string) ([]byte, error) {
	s, err := fileSHA256(path)
	if err != nil {
		return nil, err
	}
	return []byte(s), nil
}
