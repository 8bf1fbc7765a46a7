// Package deb builds the side-by-side Kubernetes packages as Debian
// packages (.deb) with dpkg-deb, from the same description as the RPMs
// (pkg/layout): per version kubernetes-<ver>-node, -kubeadm, -client (and
// -master where the harness output has the control-plane binaries), and
// the architecture-independent kubernetes-unversioned. See rpm/README.md.
package deb

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/kubelet-compat/kubelet-compat/pkg/layout"
	"github.com/kubelet-compat/kubelet-compat/pkg/packaging"
	"github.com/kubelet-compat/kubelet-compat/pkg/runtimebuild"
)

// Defaults of Config.
const (
	DefaultArch               = "amd64"
	DefaultUnversionedVersion = packaging.DefaultUnversionedVersion
	Maintainer                = "kubelet-compat maintainers <kubelet-compat@users.noreply.github.com>"
	// DefaultCompression is dpkg-deb's -Z: xz, as Debian's own packages.
	DefaultCompression = "xz"
)

// meta is everything of one .deb besides the files of the description:
// the control member's files and the documentation Debian's policy wants.
type meta struct {
	Name    string
	Version string // Debian version: <ver>-<revision>
	Control string // DEBIAN/control without Installed-Size (added at build)
	Scripts map[string]string
	// Conffiles lists the package's conffiles (DEBIAN/conffiles).
	Conffiles []string
	// Docs are files under /usr/share/doc/<name> and the lintian
	// overrides, by absolute path.
	Docs map[string][]byte
}

// debVars are the description's fields in a .deb: the values themselves.
func debVars(l layout.Layout, g layout.Group, version string) layout.Vars {
	current := l.Current
	if current == "" {
		current = layout.CurrentDir
	}
	return layout.Vars{Version: version, KubeDir: g.VersionDir(version), Current: current, EnvFile: layout.EnvFile(layout.Deb)}
}

// removing is the prerm's condition for a removal (not an upgrade, not a
// deconfiguration): dpkg runs "prerm remove" before it removes the files,
// and keeps the package installed when it fails.
const removing = `[ "$1" = remove ]`

// packageMeta returns the meta of package p of group g. date is the
// changelog's date (SOURCE_DATE_EPOCH).
func packageMeta(l layout.Layout, g layout.Group, p layout.Package, version, debVersion, arch string, date time.Time) (meta, error) {
	name := g.PackageName(p, version)
	m := meta{Name: name, Version: debVersion, Scripts: map[string]string{}, Docs: map[string][]byte{}}
	vars := debVars(l, g, version)
	expand := func(s string) (string, error) { return layout.Expand(s, vars.Map(), nil) }
	summary, err := expand(p.Summary)
	if err != nil {
		return m, err
	}
	long, err := expand(p.Description)
	if err != nil {
		return m, err
	}
	var depends []string
	for _, d := range p.Depends {
		if d.Deb != "" && !contains(depends, d.Deb) {
			depends = append(depends, d.Deb)
		}
	}
	source := name
	switch {
	case g.Versioned && g.Prefix != "":
		source = strings.TrimSuffix(g.NamePrefix(), "-")
	case g.Versioned:
		source = "kubernetes-" + version
	}
	var c strings.Builder
	fmt.Fprintf(&c, "Package: %s\n", name)
	if source != name {
		fmt.Fprintf(&c, "Source: %s\n", source)
	}
	fmt.Fprintf(&c, "Version: %s\n", debVersion)
	if g.Versioned {
		fmt.Fprintf(&c, "Architecture: %s\n", arch)
	} else {
		c.WriteString("Architecture: all\n")
	}
	fmt.Fprintf(&c, "Maintainer: %s\n", Maintainer)
	c.WriteString("@INSTALLED_SIZE@")
	if len(depends) > 0 {
		fmt.Fprintf(&c, "Depends: %s\n", strings.Join(depends, ", "))
	}
	if p.Provides != "" {
		fmt.Fprintf(&c, "Provides: %s (= %s)\n", p.Provides, debVersion)
	}
	fmt.Fprintf(&c, "Section: admin\nPriority: optional\nHomepage: %s\n", g.Project().Homepage)
	fmt.Fprintf(&c, "Description: %s\n", summary)
	for i, para := range strings.Split(long, "\n\n") {
		if i > 0 {
			c.WriteString(" .\n")
		}
		for _, line := range wrap(para, 78) {
			fmt.Fprintf(&c, " %s\n", line)
		}
	}
	m.Control = c.String()

	for _, e := range g.Entries(p, version, layout.Deb) {
		if e.Config {
			m.Conffiles = append(m.Conffiles, e.Path)
		}
	}
	if p.Guard != nil {
		guard, err := l.GuardText(*p.Guard, vars, removing, nil)
		if err != nil {
			return m, err
		}
		m.Scripts["prerm"] = script(name, "prerm", "Refuses to remove the version that "+l.Selector+" made current (pkg/layout's\n# removal guard, as the RPM's %preun).", guard)
	}
	if len(p.EnableUnits) > 0 {
		postinst, prerm, postrm := unitScripts(p.EnableUnits)
		m.Scripts["postinst"] = script(name, "postinst", "Enables the units the Debian way (deb-systemd-helper), as the RPM's %post\n# presets them; starts only those, and only if enabled. Never the kubelet.", postinst)
		m.Scripts["prerm"] = script(name, "prerm", "Stops the units on removal, as the RPM's %preun.", prerm)
		m.Scripts["postrm"] = script(name, "postrm", "Disables the units on removal (masks them until purge, as debhelper does),\n# forgets them on purge; reloads systemd, as the RPM's %postun.", postrm)
	}

	doc := "/usr/share/doc/" + name
	m.Docs[doc+"/copyright"] = []byte(copyrightOf(g))
	entry := strings.Join(wrap(summary+", built by kubelet-compat from the description in pkg/layout.", 74), "\n    ")
	changelog, err := gzipMax([]byte(fmt.Sprintf("%s (%s) stable; urgency=medium\n\n  * %s\n\n -- %s  %s\n",
		source, debVersion, entry, Maintainer, date.UTC().Format(time.RFC1123Z))))
	if err != nil {
		return m, err
	}
	m.Docs[doc+"/changelog.Debian.gz"] = changelog
	m.Docs["/usr/share/lintian/overrides/"+name] = []byte(overrides(l, name, g, p))
	return m, nil
}

func script(pkg, name, why, body string) string {
	return fmt.Sprintf("#!/bin/sh\n# %s of %s, generated from pkg/layout by deb/.\n# %s\nset -e\n%s\nexit 0\n", name, pkg, why, strings.TrimRight(body, "\n"))
}

// unitScripts are debhelper's (dh_installsystemd) snippets for units that
// are enabled and started on install: deb-systemd-helper records the
// enablement, so an administrator's "systemctl disable" survives upgrades;
// deb-systemd-invoke starts a unit only if it is enabled and policy-rc.d
// allows it. The RPM starts them on first install only; so does this
// (no restart on upgrade: a timer has nothing to restart).
func unitScripts(units []string) (postinst, prerm, postrm string) {
	var pi, pr, po strings.Builder
	pi.WriteString(`if [ "$1" = configure ] || [ "$1" = abort-upgrade ] || [ "$1" = abort-deconfigure ] || [ "$1" = abort-remove ]; then` + "\n")
	for _, u := range units {
		fmt.Fprintf(&pi, `  # was-enabled is true on a first install: enable. On an upgrade it
  # keeps the administrator's choice.
  if deb-systemd-helper --quiet was-enabled '%[1]s'; then
    deb-systemd-helper enable '%[1]s' >/dev/null || true
  else
    deb-systemd-helper update-state '%[1]s' >/dev/null || true
  fi
`, u)
	}
	pi.WriteString("  if [ -d /run/systemd/system ]; then\n    systemctl --system daemon-reload >/dev/null || true\n")
	pi.WriteString("    if [ -z \"$2\" ]; then\n")
	for _, u := range units {
		fmt.Fprintf(&pi, "      deb-systemd-invoke start '%s' >/dev/null || true\n", u)
	}
	pi.WriteString("    fi\n  fi\nfi")
	pr.WriteString("if [ -d /run/systemd/system ] && [ \"$1\" = remove ]; then\n")
	for _, u := range units {
		fmt.Fprintf(&pr, "  deb-systemd-invoke stop '%s' >/dev/null || true\n", u)
	}
	pr.WriteString("fi")
	po.WriteString("if [ -d /run/systemd/system ] && [ \"$1\" = remove ]; then\n  systemctl --system daemon-reload >/dev/null || true\nfi\n")
	po.WriteString("if [ \"$1\" = remove ] && [ -x \"$(command -v deb-systemd-helper)\" ]; then\n")
	for _, u := range units {
		fmt.Fprintf(&po, "  deb-systemd-helper mask '%s' >/dev/null || true\n", u)
	}
	po.WriteString("fi\nif [ \"$1\" = purge ] && [ -x \"$(command -v deb-systemd-helper)\" ]; then\n")
	for _, u := range units {
		fmt.Fprintf(&po, "  deb-systemd-helper purge '%[1]s' >/dev/null || true\n  deb-systemd-helper unmask '%[1]s' >/dev/null || true\n", u)
	}
	po.WriteString("fi")
	return pi.String(), pr.String(), po.String()
}

// copyrightOf is the copyright file of a group's packages: copyright for
// Kubernetes, the same text with the upstream's name, source and authors
// for the runtime's.
func copyrightOf(g layout.Group) string {
	u := g.Project()
	if u == layout.Kubernetes {
		return copyright
	}
	return fmt.Sprintf(`Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: %s
Source: %s
Comment: %s built from the Go module proxy by kubelet-compat (make runtime),
 and the kubelet-compat packaging, in the side-by-side runtime layout.

Files: *
Copyright: %s
 2026 The kubelet-compat authors
License: Apache-2.0
 Licensed under the Apache License, Version 2.0 (the "License"); you may not
 use this file except in compliance with the License.
 .
 On Debian systems, the full text of the Apache License, Version 2.0 can be
 found in the file /usr/share/common-licenses/Apache-2.0.
`, u.Name, u.Homepage, u.Name, u.Copyright)
}

const copyright = `Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: Kubernetes
Source: https://kubernetes.io
Comment: Kubernetes binaries built with the kubelet-compat patches, and the
 kubelet-compat CLI and packaging, in the side-by-side layout.

Files: *
Copyright: 2014 The Kubernetes Authors
 2026 The kubelet-compat authors
License: Apache-2.0
 Licensed under the Apache License, Version 2.0 (the "License"); you may not
 use this file except in compliance with the License.
 .
 On Debian systems, the full text of the Apache License, Version 2.0 can be
 found in the file /usr/share/common-licenses/Apache-2.0.
`

// overrides are the lintian tags the layout raises by design, each with
// the reason (lintian prints the comment with the override).
func overrides(l layout.Layout, name string, g layout.Group, p layout.Package) string {
	var b strings.Builder
	root := layout.KubeRoot
	if l.Set == layout.SetRuntime {
		root = layout.RuntimeRoot
		b.WriteString("# The side-by-side runtime layout: every version of a runtime component lives\n# under /usr/local/runtime/<component>/<version> so that versions install side\n# by side, and runtime-unversioned owns the selection points there.\n")
	} else {
		b.WriteString("# The StarlingX layout: every Kubernetes version lives under\n# /usr/local/kubernetes/<version> so that versions install side by side, and\n# kubernetes-unversioned owns the selection points there.\n")
	}
	rel := strings.TrimPrefix(root, "/")
	fmt.Fprintf(&b, "%s: dir-in-usr-local [%s/*]\n", name, rel)
	b.WriteString("# Not an upload to Debian's archive: no ITP bug to close.\n")
	fmt.Fprintf(&b, "%s: initial-upload-closes-no-bugs *\n", name)
	hasFiles := false
	for _, e := range g.Entries(p, "x", layout.Deb) {
		if e.Type != layout.Dir && strings.HasPrefix(e.Path, root+"/") {
			hasFiles = true
		}
	}
	if hasFiles {
		fmt.Fprintf(&b, "%s: file-in-usr-local [%s/*]\n", name, rel)
		fmt.Fprintf(&b, "%s: file-in-unusual-dir [%s/*]\n", name, rel)
	}
	for _, f := range p.Files {
		if f.Type == layout.Symlink && strings.HasPrefix(f.Path, "/usr/bin/") || f.Type == layout.Regular && strings.HasPrefix(f.Path, "/usr/bin/") {
			b.WriteString("# Kubernetes and kubelet-compat ship no manual pages (upstream's packages have none\n# either); every command documents itself with --help.\n")
			fmt.Fprintf(&b, "%s: no-manual-page [usr/bin/*]\n", name)
			break
		}
	}
	binaries := false
	for _, f := range p.Files {
		if f.Type == layout.Regular && (f.Source.Kind == layout.Harness || f.Source.Kind == layout.CLI) {
			binaries = true
		}
	}
	if binaries && !built(g.Component, usesCGO) {
		b.WriteString("# Go binaries, shipped exactly as the harness built them (as the RPMs ship\n# them): statically linked, without manual pages.\n")
		fmt.Fprintf(&b, "%s: statically-linked-binary [%s/*]\n", name, rel)
	}
	if binaries && built(g.Component, unstripped) {
		b.WriteString("# Shipped exactly as make runtime built them with the project's own build flags,\n# which do not strip (pkg/runtimebuild): the build checks each binary against the\n# sha256 that make runtime recorded, which stripping here would break.\n")
		fmt.Fprintf(&b, "%s: unstripped-binary-or-object [%s/*]\n", name, rel)
	}
	return b.String()
}

// wrap reflows text into lines of at most width characters.
func wrap(text string, width int) []string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(text) {
		if line != "" && len(line)+1+len(w) > width {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}

func gzipMax(b []byte) ([]byte, error) {
	var out bytes.Buffer
	w, err := gzip.NewWriterLevel(&out, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	if _, err := w.Write(b); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// built tells whether make runtime builds component (a runtime group's;
// "" for Kubernetes: false) as is says: without -s -w, with cgo (runc: a
// dynamic PIE, so no statically-linked override).
func built(component string, is func(runtimebuild.Component) bool) bool {
	for _, c := range runtimebuild.Components {
		if c.Name == component && component != "" {
			return is(c)
		}
	}
	return false
}

func usesCGO(c runtimebuild.Component) bool {
	return slices.ContainsFunc(c.Binaries, func(b runtimebuild.Binary) bool { return b.CGO })
}

func unstripped(c runtimebuild.Component) bool { return !c.Strip }
