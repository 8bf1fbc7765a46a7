package rpm

import (
	"path"
	"strings"
	"testing"
)

func TestUnversionedLinksResolveIntoCurrent(t *testing.T) {
	for _, unitDir := range []string{DefaultUnitDir, "/lib/systemd/system"} {
		want := map[string]string{
			"/usr/bin/kubeadm":                               CurrentDir + "/stage1/usr/bin/kubeadm",
			"/usr/bin/kubelet":                               CurrentDir + "/stage2/usr/bin/kubelet",
			"/usr/bin/kubelet-compat":                        CurrentDir + "/stage2/usr/bin/kubelet-compat",
			"/usr/bin/kubectl":                               CurrentDir + "/stage2/usr/bin/kubectl",
			"/usr/share/bash-completion/completions/kubectl": CurrentDir + "/stage2/" + CompletionRel,
			unitDir + "/kubelet.service.d/10-kubeadm.conf":   CurrentDir + "/stage2/" + DropInRel,
		}
		links := UnversionedLinks(unitDir)
		if len(links) != len(want) {
			t.Fatalf("unit dir %s: %d links, want %d", unitDir, len(links), len(want))
		}
		for _, l := range links {
			if strings.HasPrefix(l.Target, "/") {
				t.Errorf("%s -> %s: want a relative link", l.Path, l.Target)
			}
			if got := path.Join(path.Dir(l.Path), l.Target); got != want[l.Path] {
				t.Errorf("%s -> %s resolves to %s, want %s", l.Path, l.Target, got, want[l.Path])
			}
		}
	}
}
