package doclinks

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSlug(t *testing.T) {
	for in, want := range map[string]string{
		"Any chain of versions (`make e2e E2E=steps`)":                           "any-chain-of-versions-make-e2e-e2esteps",
		"In-place resize checkpoints at 1.32 -> 1.33 (API mode, `-resize-gate`)": "in-place-resize-checkpoints-at-132---133-api-mode--resize-gate",
		"The operators' flow: kubeadm clusters on kind":                          "the-operators-flow-kubeadm-clusters-on-kind",
		"The kubelet per era (`pkg/kubelet/era.go`)":                             "the-kubelet-per-era-pkgkubeleterago",
		"The fleet roll-out on kind (`make e2e E2E_PROVIDER=kind E2E=fleet`)":    "the-fleet-roll-out-on-kind-make-e2e-e2e_providerkind-e2efleet",
		"See [the docs](docs/x.md) **now**":                                      "see-the-docs-now",
	} {
		if got := Slug(in); got != want {
			t.Errorf("Slug(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestCheckFindsBrokenLinks(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("README.md", "# Top\n\n## A section\n\n## A section\n\n[ok](docs/d.md#why) [ok](#a-section-1) [ok](docs) [ok](https://example.com/x)\n"+
		"[bad](docs/none.md) [bad](docs/d.md#nope) [bad](../outside.md) `[code](not/checked.md)`\n```\n[fenced](not/checked.md)\n```\n")
	write("docs/d.md", "# D\n\n## Why\n\n[up](../README.md#top)\n")
	bad, err := Check(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"README.md:8: docs/none.md: no such file",
		"README.md:8: docs/d.md#nope: no heading with that anchor",
		"README.md:8: ../outside.md: points outside the repository",
	}
	if strings.Join(bad, "\n") != strings.Join(want, "\n") {
		t.Errorf("Check =\n%s\nwant\n%s", strings.Join(bad, "\n"), strings.Join(want, "\n"))
	}
}

// The repository's own Markdown: every relative link resolves, inside the
// repository.
func TestRepositoryLinks(t *testing.T) {
	bad, err := Check("../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bad {
		t.Error(b)
	}
}

// README.md is the door (issue 34): at most 200 lines, none over 400
// characters; the rest lives in docs/.
func TestREADMEIsShort(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	ls := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(ls) > 200 {
		t.Errorf("README.md has %d lines, more than 200: move detail to docs/", len(ls))
	}
	for i, l := range ls {
		if n := len([]rune(l)); n > 400 {
			t.Errorf("README.md:%d has %d characters, more than 400", i+1, n)
		}
	}
}
