package kubeletcompat

import "strings"

// normalizeImage expands a Docker-style image reference the way container
// runtimes report it: busybox -> docker.io/library/busybox:latest.
func normalizeImage(ref string) string {
	name, suffix := ref, ""
	if i := strings.IndexByte(name, '@'); i >= 0 {
		name, suffix = name[:i], name[i:]
	}
	if i := strings.LastIndexByte(name, ':'); i > strings.LastIndexByte(name, '/') {
		name, suffix = name[:i], name[i:]+suffix
	}
	if suffix == "" {
		suffix = ":latest"
	}
	first := name
	if i := strings.IndexByte(name, '/'); i >= 0 {
		first = name[:i]
	}
	hasDomain := strings.ContainsAny(first, ".:") || first == "localhost"
	if !hasDomain || first == "index.docker.io" {
		if hasDomain {
			name = name[len(first)+1:]
		}
		if !strings.Contains(name, "/") {
			name = "library/" + name
		}
		name = "docker.io/" + name
	}
	return name + suffix
}
