package deb

import (
	"context"
	"flag"

	"github.com/kubelet-compat/kubelet-compat/pkg/hostdeps"
	"github.com/kubelet-compat/kubelet-compat/pkg/packaging"
)

// Packager is the Debian format for cmd/build-packages: its flags set the
// Debian settings of Config, Build adds the shared options.
type Packager struct{ Config Config }

var _ packaging.Packager = (*Packager)(nil)

// Format is "deb".
func (*Packager) Format() string { return "deb" }

// Host is the path of dpkg-deb (and of lintian, for make deb-lint).
func (*Packager) Host() hostdeps.Path { return hostdeps.Deb }

// DefaultOutput is make deb's DEB_OUTPUT.
func (*Packager) DefaultOutput() string { return "_output/debs" }

// AddFlags registers the Debian settings.
func (p *Packager) AddFlags(fs *flag.FlagSet) {
	c := &p.Config
	fs.StringVar(&c.Revision, "revision", "", "Debian revision of the versioned .debs; default: deb/releases.txt's, for content it recorded")
	fs.StringVar(&c.UnversionedRevision, "unversioned-revision", "", "Debian revision of kubernetes-unversioned; default: deb/releases.txt's, for content it recorded")
	fs.StringVar(&c.Arch, "deb-arch", DefaultArch, "Debian architecture of the binaries")
	fs.StringVar(&c.Compression, "compression", DefaultCompression, "dpkg-deb -Z of the .debs")
}

// Build builds the .debs (Build) with the shared options o.
func (p *Packager) Build(ctx context.Context, o packaging.Options) ([]string, error) {
	cfg := p.Config
	cfg.Options = o
	return Build(ctx, cfg)
}
