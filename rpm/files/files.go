// Package files holds the files both formats ship (the units, the drop-in,
// the kubelet's environment file, the preset, kubernetes-select) for the
// Debian build, which must not depend on the RPM build's package (nor on
// rpmbuild). rpm.Sources embeds the same directory as files/.
package files

import "embed"

// Shipped holds the shipped files by name.
//
//go:embed *.conf *.preset *.service *.timer *.sysconfig kubernetes-select
var Shipped embed.FS
