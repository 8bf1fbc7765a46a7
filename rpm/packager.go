package rpm

import (
	"context"
	"flag"

	"github.com/kubelet-compat/kubelet-compat/pkg/hostdeps"
	"github.com/kubelet-compat/kubelet-compat/pkg/packaging"
)

// Packager is the RPM format for cmd/build-packages: its flags set the
// RPM settings of Config, Build adds the shared options.
type Packager struct{ Config Config }

var _ packaging.Packager = (*Packager)(nil)

// Format is "rpm".
func (*Packager) Format() string { return "rpm" }

// Host is the path of rpmbuild (Debian's rpm package on Debian hosts).
func (*Packager) Host() hostdeps.Path { return hostdeps.RPM }

// DefaultOutput is make rpm's RPM_OUTPUT.
func (*Packager) DefaultOutput() string { return "_output/rpms" }

// AddFlags registers the RPM settings.
func (p *Packager) AddFlags(fs *flag.FlagSet) {
	c := &p.Config
	fs.StringVar(&c.Release, "release", "", "Release of the versioned RPMs (before %{dist}); default: rpm/releases.txt's, for content it recorded")
	fs.StringVar(&c.UnversionedRelease, "unversioned-release", "", "Release of the kubernetes-unversioned RPM; default: rpm/releases.txt's, for content it recorded")
	fs.StringVar(&c.Dist, "dist", DefaultDist, "%{dist} of the RPMs")
	fs.StringVar(&c.Arch, "rpm-arch", DefaultArch, "rpm arch of the binaries")
	fs.StringVar(&c.Payload, "payload", DefaultPayload, "%{_binary_payload} of the RPMs; EL7 reads gzdio and xzdio only")
}

// Build builds the RPMs (Build) with the shared options o.
func (p *Packager) Build(ctx context.Context, o packaging.Options) ([]string, error) {
	cfg := p.Config
	cfg.Options = o
	return Build(ctx, cfg)
}
