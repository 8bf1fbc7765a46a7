package nodeimage

import (
	"context"
	"fmt"
	"sort"
	"strings"
)

// The components kubeadm lists with `config images list`.
const (
	compAPIServer  = "kube-apiserver"
	compController = "kube-controller-manager"
	compScheduler  = "kube-scheduler"
	compProxy      = "kube-proxy"
	compPause      = "pause"
	compEtcd       = "etcd"
	compCoreDNS    = "coredns"
)

var knownComponents = []string{compAPIServer, compController, compScheduler, compProxy, compPause, compEtcd, compCoreDNS}

// imageList maps a component to the image reference kubeadm wants for it.
type imageList map[string]string

// parseImageList reads `kubeadm config images list` output: one reference
// per line, each naming a known component exactly once.
func parseImageList(out string) (imageList, error) {
	l := imageList{}
	for _, line := range strings.Split(out, "\n") {
		ref := strings.TrimSpace(line)
		if ref == "" {
			continue
		}
		repo, tag, ok := splitRef(ref)
		if !ok {
			return nil, fmt.Errorf("kubeadm listed %q, not an image reference with a tag", ref)
		}
		name := repo[strings.LastIndex(repo, "/")+1:]
		known := false
		for _, c := range knownComponents {
			known = known || c == name
		}
		if !known {
			return nil, fmt.Errorf("kubeadm listed %q: unknown component %q", ref, name)
		}
		if _, dup := l[name]; dup {
			return nil, fmt.Errorf("kubeadm listed %s twice", name)
		}
		_ = tag
		l[name] = ref
	}
	for _, c := range knownComponents {
		if _, ok := l[c]; !ok {
			return nil, fmt.Errorf("kubeadm listed no %s image", c)
		}
	}
	return l, nil
}

// splitRef splits repo:tag; a registry port (host:5000/x) is not a tag.
func splitRef(ref string) (repo, tag string, ok bool) {
	i := strings.LastIndex(ref, ":")
	if i <= 0 || strings.Contains(ref[i+1:], "/") || strings.ContainsAny(ref, " \t@") || i == len(ref)-1 {
		return "", "", false
	}
	return ref[:i], ref[i+1:], true
}

// tag returns the tag of component's image.
func (l imageList) tag(component string) string {
	_, t, _ := splitRef(l[component])
	return t
}

// refs returns every reference, sorted.
func (l imageList) refs() []string {
	var r []string
	for _, ref := range l {
		r = append(r, ref)
	}
	sort.Strings(r)
	return r
}

// coreDNSModuleVersion is the Go module version of a CoreDNS image tag:
// kubeadm 1.20 names 1.7.0, 1.21 names v1.8.0.
func coreDNSModuleVersion(tag string) (string, error) {
	v := tag
	if !strings.HasPrefix(v, "v") {
		v = "v" + v
	}
	if !versionPattern.MatchString(strings.TrimPrefix(v, "v")) {
		return "", fmt.Errorf("CoreDNS tag %q is not a release version", tag)
	}
	return v, nil
}

// LeftBehind are the images of version v's kubeadm that version next's
// does not list, but the sandbox image (pause): a node rolled from v to
// next runs none of them. containerd's configured sandbox image may be any
// pause a node ever had, and without a registry a node cannot pull it back.
func LeftBehind(ctx context.Context, outputDir, v, next string) ([]string, error) {
	old, err := kubeadmImages(ctx, outputDir, v)
	if err != nil {
		return nil, err
	}
	keep, err := kubeadmImages(ctx, outputDir, next)
	if err != nil {
		return nil, err
	}
	return leftBehind(old, keep), nil
}

func leftBehind(old, keep imageList) []string {
	kept := map[string]bool{}
	for _, ref := range keep {
		kept[ref] = true
	}
	var out []string
	for _, ref := range old.refs() {
		if !kept[ref] && ref != old[compPause] {
			out = append(out, ref)
		}
	}
	return out
}
