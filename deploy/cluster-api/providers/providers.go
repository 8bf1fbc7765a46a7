// Package providers builds, without clusterctl, Docker, a registry or
// cert-manager, what a management cluster needs for the in-place update
// extension: CAPI's core, kubeadm bootstrap and kubeadm control-plane
// managers and CAPD (the Docker infrastructure provider) from the Go module
// proxy, the extension itself, their images as OCI layouts, and their
// manifests with self-signed webhook certificates (manifests.go). See
// ../README.md, "Building the providers here".
package providers

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/kubelet-compat/kubelet-compat/pkg/exec"
	"github.com/kubelet-compat/kubelet-compat/pkg/modfetch"
	"github.com/kubelet-compat/kubelet-compat/pkg/ocilayout"
)

// The modules built, pinned by version and by the h1: sums the checksum
// database has for them (the scratch modules' go.sum starts with these; the
// go command refuses a download that does not match).
const (
	CAPIModule      = "sigs.k8s.io/cluster-api"
	CAPIVersion     = "v1.13.6"
	CAPISum         = "h1:imZVIstbRIq2DoKftQv0wPm+vyhWXrE3Zft8E43maqo="
	CAPIGoModSum    = "h1:AcFSBfwH9qZhrLTKRKHQedcd6D7Ev8eSblFxIE2VMd0="
	CAPDModule      = "sigs.k8s.io/cluster-api/test"
	CAPDVersion     = "v1.13.8"
	CAPDSum         = "h1:Beq2n8NBxHfVGmKCrNv8tIA88mQqUeof0/Wkjn5Dmqs="
	CAPDGoModSum    = "h1:j3PPIvhp37qkdKzw4Y3tlYH199XA0Ao93/cwIQhTKpk="
	ImageRepository = "kubelet-compat.local/cluster-api"
)

// coreGoMod is the scratch main module of the three managers of
// sigs.k8s.io/cluster-api: its own versions of everything (minimal version
// selection from CAPI's go.mod alone), unlike deploy/cluster-api's module,
// which the parent's k8s.io v0.38 lifts.
var coreGoMod = fmt.Sprintf(`module kubelet-compat.local/cluster-api-core

go 1.25.0

require %s %s
`, CAPIModule, CAPIVersion)

// capdGoMod is CAPD's: the test module requires cluster-api v0.0.0 and
// replaces it with ../ (absent from its module zip, and a dependency's
// replace does not apply), so the main module replaces it with v1.13.6.
// test v1.13.8 is the newest v1.13 the proxy serves; its changes over
// v1.13.6 are in the test framework, not in CAPD's API.
var capdGoMod = fmt.Sprintf(`module kubelet-compat.local/cluster-api-capd

go 1.25.0

require (
	%[1]s %[2]s
	%[3]s %[4]s
)

replace %[1]s => %[1]s %[2]s
`, CAPIModule, CAPIVersion, CAPDModule, CAPDVersion)

var (
	coreGoSum = fmt.Sprintf("%[1]s %[2]s %[3]s\n%[1]s %[2]s/go.mod %[4]s\n", CAPIModule, CAPIVersion, CAPISum, CAPIGoModSum)
	capdGoSum = coreGoSum + fmt.Sprintf("%[1]s %[2]s %[3]s\n%[1]s %[2]s/go.mod %[4]s\n", CAPDModule, CAPDVersion, CAPDSum, CAPDGoModSum)
)

// Provider is one of CAPI's managers: how it is built and where its
// kustomize tree is.
type Provider struct {
	// Name is the binary's and the image's name (upstream's image names).
	Name string
	// Module, Version and Sum are the module holding the provider's source
	// and its config directory.
	Module, Version, Sum string
	// Package is the manager's main package.
	Package string
	// Config is the kustomize directory, in Module, that CAPI's release
	// renders into the provider's components YAML.
	Config string
	// GoMod and GoSum are the scratch main module the manager is built in.
	GoMod, GoSum string
}

// The four providers of a CAPD management cluster.
var (
	Core = Provider{Name: "cluster-api-controller", Module: CAPIModule, Version: CAPIVersion, Sum: CAPISum,
		Package: CAPIModule, Config: "config/default", GoMod: coreGoMod, GoSum: coreGoSum}
	KubeadmBootstrap = Provider{Name: "kubeadm-bootstrap-controller", Module: CAPIModule, Version: CAPIVersion, Sum: CAPISum,
		Package: CAPIModule + "/bootstrap/kubeadm", Config: "bootstrap/kubeadm/config/default", GoMod: coreGoMod, GoSum: coreGoSum}
	KubeadmControlPlane = Provider{Name: "kubeadm-control-plane-controller", Module: CAPIModule, Version: CAPIVersion, Sum: CAPISum,
		Package: CAPIModule + "/controlplane/kubeadm", Config: "controlplane/kubeadm/config/default", GoMod: coreGoMod, GoSum: coreGoSum}
	Docker = Provider{Name: "capd-manager", Module: CAPDModule, Version: CAPDVersion, Sum: CAPDSum,
		Package: CAPDModule + "/infrastructure/docker", Config: "infrastructure/docker/config/default", GoMod: capdGoMod, GoSum: capdGoSum}
)

// All is the providers in the order clusterctl installs them.
var All = []Provider{Core, KubeadmBootstrap, KubeadmControlPlane, Docker}

// Image is the provider's image name, tagged with its version.
func (p Provider) Image() string { return ImageRepository + "/" + p.Name + ":" + p.Version }

// Path is where the manager is cached:
// <cacheDir>/cluster-api/<name>-<version>/<name>.
func (p Provider) Path(cacheDir string) string {
	return filepath.Join(cacheDir, "cluster-api", p.Name+"-"+p.Version, p.Name)
}

// goEnv is the environment of the proxy builds: modfetch's (module mode,
// caches in cacheDir, the machine's go), static for linux/amd64, with the
// caller's GOFLAGS (-p=1 on a shared machine) after -mod=mod and the
// caller's GOCACHE when it sets one (a throwaway cache).
func goEnv(cacheDir string) []string {
	env := append([]string{"CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64"}, modfetch.Env(cacheDir)...)
	if f := os.Getenv("GOFLAGS"); f != "" {
		env = append(env, "GOFLAGS=-mod=mod "+f)
	}
	if c := os.Getenv("GOCACHE"); c != "" {
		env = append(env, "GOCACHE="+c)
	}
	return env
}

// Build builds the manager unless it is cached, checks that the binary
// embeds the pinned module and sum (go version -m), and returns its path.
// A failed build caches nothing and leaves no scratch directory.
func (p Provider) Build(ctx context.Context, cacheDir string, log io.Writer) (string, error) {
	bin := p.Path(cacheDir)
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	fmt.Fprintf(log, "building %s of %s %s from the Go module proxy\n", p.Package, p.Module, p.Version)
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		return "", err
	}
	work, err := os.MkdirTemp(filepath.Dir(bin), ".build-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(work)
	for name, data := range map[string]string{"go.mod": p.GoMod, "go.sum": p.GoSum} {
		if err := os.WriteFile(filepath.Join(work, name), []byte(data), 0o644); err != nil {
			return "", err
		}
	}
	out := filepath.Join(work, p.Name)
	minor := strings.Split(strings.TrimPrefix(CAPIVersion, "v"), ".")
	stamp := "-X sigs.k8s.io/cluster-api/version.gitVersion=" + p.Version + " -X sigs.k8s.io/cluster-api/version.gitTreeState=clean" +
		" -X sigs.k8s.io/cluster-api/version.gitMajor=" + minor[0] + " -X sigs.k8s.io/cluster-api/version.gitMinor=" + minor[1]
	c := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w "+stamp, "-o", out, p.Package)
	c.Dir, c.Log, c.Env = work, log, goEnv(cacheDir)
	if err := c.Run(ctx); err != nil {
		return "", fmt.Errorf("building %s %s: %w", p.Package, p.Version, err)
	}
	info, err := exec.Command("go", "version", "-m", out).Output(ctx)
	if err != nil {
		return "", err
	}
	// The module of the main package is a mod line, the others dep lines,
	// a replacement a => line: each with its version and sum.
	for _, want := range []string{CAPIModule + "\t" + CAPIVersion + "\t" + CAPISum, p.Module + "\t" + p.Version + "\t" + p.Sum, "CGO_ENABLED=0"} {
		if !strings.Contains(string(info), want) {
			return "", fmt.Errorf("the built %s lacks %q in go version -m:\n%s", p.Name, want, info)
		}
	}
	if err := os.Rename(out, bin); err != nil {
		return "", err
	}
	return bin, nil
}

// ExtensionPackage is the extension's main package, built from this module.
const ExtensionPackage = "github.com/kubelet-compat/kubelet-compat/deploy/cluster-api/cmd/kc-capi-extension"

// BuildExtension builds kc-capi-extension into out, static, from this
// module (the go command runs in the caller's directory, which must be in
// deploy/cluster-api, with the caller's toolchain), and returns its image
// tag: the first 12 hex digits of the binary's sha256, so that a changed
// extension is a new image to a node that keeps images IfNotPresent.
func BuildExtension(ctx context.Context, out string, log io.Writer) (string, error) {
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return "", err
	}
	c := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", out, ExtensionPackage)
	c.Env, c.Log = []string{"CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64"}, log
	if err := c.Run(ctx); err != nil {
		return "", fmt.Errorf("building kc-capi-extension: %w", err)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%x", sha256.Sum256(data))[:12], nil
}

// ExtensionImage is the extension's image name with tag.
func ExtensionImage(tag string) string { return ImageRepository + "/kc-capi-extension:" + tag }

// CACertificates is the system's CA bundle the images carry (Debian's
// ca-certificates), for a manager that talks to a cloud; CAPD and the
// kubeadm providers talk to clusters whose CAs they hold.
const CACertificates = "/etc/ssl/certs/ca-certificates.crt"

// passwd and group are the images' users: root, distroless's nonroot
// (65532, the user CAPI's Deployments run as) and nobody.
const (
	passwd = "root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n"
	group  = "root:x:0:\nnonroot:x:65532:\nnogroup:x:65534:\n"
)

// Image is a distroless-like image of one static binary at /<entry>: the
// binary, the CA bundle (caCerts, Debian's by default), /etc/passwd and
// /etc/group with root, nonroot and nobody, and /tmp; the binary is the
// entrypoint. CAPI's Deployments run /manager.
func Image(ref, entry, binary, caCerts string) (ocilayout.Image, error) {
	bin, err := os.ReadFile(binary)
	if err != nil {
		return ocilayout.Image{}, err
	}
	if caCerts == "" {
		caCerts = CACertificates
	}
	cas, err := os.ReadFile(caCerts)
	if err != nil {
		return ocilayout.Image{}, fmt.Errorf("reading the CA bundle (Debian package ca-certificates): %w", err)
	}
	files := []ocilayout.File{
		{Path: "etc", Dir: true}, {Path: "etc/ssl", Dir: true}, {Path: "etc/ssl/certs", Dir: true},
		{Path: "etc/ssl/certs/ca-certificates.crt", Mode: 0o644, Data: cas},
		{Path: "etc/passwd", Mode: 0o644, Data: []byte(passwd)}, {Path: "etc/group", Mode: 0o644, Data: []byte(group)},
		{Path: "tmp", Dir: true, Mode: 0o1777},
		{Path: entry, Mode: 0o755, Data: bin},
	}
	return ocilayout.Image{Ref: ref, Entrypoint: []string{"/" + entry}, Env: []string{"SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"}, Files: files}, nil
}
