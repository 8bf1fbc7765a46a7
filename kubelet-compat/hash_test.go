package kubeletcompat

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"gotest.tools/v3/golden"
	v1 "k8s.io/api/core/v1"
)

// TestContainerHashGoldens checks the library's hash of every corpus
// container for every minor against testdata/hashes.golden, which
// hack/gen-hash-goldens fills with the output of the REAL
// kubecontainer.HashContainer compiled inside each upstream tree. The golden
// is never written from this test.
func TestContainerHashGoldens(t *testing.T) {
	corpus := loadCorpus(t)
	byName := map[string]*v1.Container{}
	for i := range corpus {
		byName[corpus[i].Name] = &corpus[i].Container
	}
	seen := map[string]bool{}
	minors := map[int]bool{}
	for i, line := range strings.Split(string(golden.Get(t, "hashes.golden")), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) != 3 {
			t.Fatalf("hashes.golden:%d: want 'minor item hash', got %q", i+1, line)
		}
		minor, err := strconv.Atoi(strings.TrimPrefix(fields[0], "1."))
		if err != nil {
			t.Fatalf("hashes.golden:%d: bad minor %q", i+1, fields[0])
		}
		want, err := strconv.ParseUint(fields[2], 16, 64)
		if err != nil {
			t.Fatalf("hashes.golden:%d: bad hash %q", i+1, fields[2])
		}
		container, ok := byName[fields[1]]
		if !ok {
			t.Fatalf("hashes.golden:%d: %q is not in the corpus (stale golden?)", i+1, fields[1])
		}
		minors[minor] = true
		seen[fmt.Sprintf("%d %s", minor, fields[1])] = true
		got, err := ContainerHash(Version{Major: 1, Minor: minor}, container)
		if err != nil {
			t.Errorf("1.%d %s: %v", minor, fields[1], err)
			continue
		}
		if got != want {
			t.Errorf("1.%d %s: library hash %x, upstream %x", minor, fields[1], got, want)
		}
	}
	// Every era the library implements must be covered for every container.
	for minor := firstJSONMinor; minor <= lastKnownMinor; minor++ {
		if !minors[minor] {
			t.Errorf("hashes.golden has no hashes of 1.%d", minor)
			continue
		}
		for _, item := range corpus {
			if !seen[fmt.Sprintf("%d %s", minor, item.Name)] {
				t.Errorf("hashes.golden lacks 1.%d %s", minor, item.Name)
			}
		}
	}
}

// TestHashContainerUpstreamPin is upstream's own TestHashContainer case,
// pinned at 0x3c42280f from 1.16 to 1.30.
func TestHashContainerUpstreamPin(t *testing.T) {
	c := &v1.Container{
		Name:  "test_container",
		Image: "foo/image:v1",
		Args:  []string{"/bin/sh", "-c", "echo abc"},
		Ports: []v1.ContainerPort{{ContainerPort: 8001}},
	}
	for minor := firstJSONMinor; minor <= lastJSONMinor; minor++ {
		got, err := ContainerHash(Version{Major: 1, Minor: minor}, c)
		if err != nil {
			t.Fatal(err)
		}
		if got != 0x3c42280f {
			t.Errorf("1.%d: hash %x, want 3c42280f", minor, got)
		}
	}
}

func TestContainerHashErrors(t *testing.T) {
	c := &v1.Container{Name: "a", Image: "b"}
	for _, v := range []Version{{Major: 1, Minor: 15}, {Major: 1, Minor: lastKnownMinor + 1}, {Major: 2, Minor: 0}} {
		if _, err := ContainerHash(v, c); err == nil {
			t.Errorf("ContainerHash(%s) succeeded", v)
		}
	}
}

func TestEraOf(t *testing.T) {
	for _, tt := range []struct {
		v    Version
		want HashEra
	}{
		{Version{Major: 1, Minor: 10}, EraGoStruct},
		{Version{Major: 1, Minor: 15}, EraGoStruct},
		{Version{Major: 1, Minor: 16}, EraJSON},
		{Version{Major: 1, Minor: 30}, EraJSON},
		{Version{Major: 1, Minor: 31}, EraNameImage},
		{Version{Major: 1, Minor: 37}, EraNameImage},
		{Version{Major: 1, Minor: 38}, EraNameImage},
		{Version{Major: 1, Minor: 39}, EraUnknown},
		{Version{Major: 0, Minor: 9}, EraUnknown},
		{Version{Major: 2, Minor: 0}, EraUnknown},
	} {
		if got := EraOf(tt.v); got != tt.want {
			t.Errorf("EraOf(%s) = %s, want %s", tt.v, got, tt.want)
		}
	}
}

// TestPruneMissingAlwaysField: a field an old version always wrote cannot be
// reproduced from JSON that lacks it, so no hash is claimed.
func TestPruneMissingAlwaysField(t *testing.T) {
	s, err := schemaFor(18)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.prune([]byte(`{"image":"x"}`)); err == nil || !strings.Contains(err.Error(), "Container.name") {
		t.Fatalf("prune without name = %v", err)
	}
	got, err := s.prune([]byte(`{"name":"a","unknownField":{"x":1},"securityContext":{"seccompProfile":{"type":"RuntimeDefault"},"privileged":true},"resources":{}}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"name":"a","resources":{},"securityContext":{"privileged":true}}`; string(got) != want {
		t.Errorf("prune = %s, want %s", got, want)
	}
}

func TestSchemasParse(t *testing.T) {
	for minor := range containerSchemas {
		if _, err := schemaFor(minor); err != nil {
			t.Errorf("schema 1.%d: %v", minor, err)
		}
	}
	for minor := firstJSONMinor; minor <= lastJSONMinor; minor++ {
		if _, ok := containerSchemas[minor]; !ok {
			t.Errorf("no schema for JSON-era minor 1.%d", minor)
		}
	}
}

func TestUnknownFields(t *testing.T) {
	c := seccompContainer()
	c.Ports = []v1.ContainerPort{{ContainerPort: 80}}
	tests := []struct {
		version string
		want    string
	}{
		{"v1.18.19", "livenessProbe.terminationGracePeriodSeconds securityContext.seccompProfile"},
		{"v1.20.15", "livenessProbe.terminationGracePeriodSeconds"},
		{"v1.21.14", ""},
	}
	for _, tt := range tests {
		v, _ := ParseVersion(tt.version)
		got, err := UnknownFields(v, c)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Join(got, " ") != tt.want {
			t.Errorf("UnknownFields(%s) = %q, want %q", tt.version, got, tt.want)
		}
	}
	if _, err := UnknownFields(Version{Major: 1, Minor: 15}, c); err == nil {
		t.Error("UnknownFields(1.15) succeeded")
	}
}

// TestNewFields: what a rollback from newer to older hides from the older
// kubelet.
func TestNewFields(t *testing.T) {
	c := seccompContainer()
	c.Resources.Claims = []v1.ResourceClaim{{Name: "gpu", Request: "one"}}
	tests := []struct {
		older, newer, want string
	}{
		{"v1.20.15", "v1.21.14", "livenessProbe.terminationGracePeriodSeconds"},
		{"v1.18.19", "v1.21.14", "livenessProbe.terminationGracePeriodSeconds securityContext.seccompProfile"},
		{"v1.30.14", "v1.31.14", "resources.claims[0].request"},
		// resources.claims is new in 1.26: 1.25 does not see the claim at all.
		{"v1.25.16", "v1.31.14", "resources.claims"},
		{"v1.31.14", "v1.37.2", ""},
	}
	for _, tt := range tests {
		older, _ := ParseVersion(tt.older)
		newer, _ := ParseVersion(tt.newer)
		got, err := NewFields(older, newer, c)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Join(got, " ") != tt.want {
			t.Errorf("NewFields(%s, %s) = %q, want %q", tt.older, tt.newer, got, tt.want)
		}
	}
}

// TestLegacyHashCache: a cached hash is the computed one, per minor and spec.
func TestLegacyHashCache(t *testing.T) {
	legacyHashes.mu.Lock()
	legacyHashes.entries = map[legacyHashKey]uint64{}
	legacyHashes.mu.Unlock()
	c := &v1.Container{Name: "a", Image: "b", SecurityContext: &v1.SecurityContext{SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeRuntimeDefault}}}
	v18, v19 := Version{Major: 1, Minor: 18}, Version{Major: 1, Minor: 19}
	first18, err := ContainerHash(v18, c)
	if err != nil {
		t.Fatal(err)
	}
	first19, _ := ContainerHash(v19, c)
	if first18 == first19 {
		t.Fatal("1.18 and 1.19 must differ for a seccompProfile container")
	}
	for i := 0; i < 3; i++ {
		if h, _ := ContainerHash(v18, c); h != first18 {
			t.Errorf("cached 1.18 hash %x, want %x", h, first18)
		}
		if h, _ := ContainerHash(v19, c); h != first19 {
			t.Errorf("cached 1.19 hash %x, want %x", h, first19)
		}
	}
	changed := c.DeepCopy()
	changed.Image = "c"
	if h, _ := ContainerHash(v18, changed); h == first18 {
		t.Error("a changed spec got the cached hash")
	}
	// specHashAs shares the cache, keyed by the reader's minor too: 1.18
	// reading the spec drops the seccompProfile 1.19 hashes.
	seen18, _ := specHashAs(v19, v18, c)
	for i := 0; i < 3; i++ {
		if h, _ := specHashAs(v19, v19, c); h != first19 {
			t.Errorf("specHashAs(1.19, 1.19) = %x, want the 1.19 hash %x", h, first19)
		}
		if h, _ := specHashAs(v19, v18, c); h != seen18 || h == first19 {
			t.Errorf("specHashAs(1.19, 1.18) = %x, want %x (not the 1.19 hash of the whole spec %x)", h, seen18, first19)
		}
	}
	for i := 0; i < maxLegacyHashes+10; i++ {
		changed.Args = []string{fmt.Sprint(i)}
		ContainerHash(v18, changed)
	}
	legacyHashes.mu.Lock()
	n := len(legacyHashes.entries)
	legacyHashes.mu.Unlock()
	if n > maxLegacyHashes {
		t.Errorf("cache holds %d entries, at most %d", n, maxLegacyHashes)
	}
}
