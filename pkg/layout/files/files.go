// Package files holds the files both formats ship (the units, the drop-in,
// the kubelet's environment file, the preset, kubernetes-select, runtime-select), beside
// the description of the packages (pkg/layout) that names them. The RPM
// and the Debian packager read them from here (Source.Name is the name of
// a file of this directory).
package files

import "embed"

// Shipped holds the shipped files by name.
//
//go:embed *.conf *.preset *.service *.timer *.sysconfig kubernetes-select runtime-select
var Shipped embed.FS
