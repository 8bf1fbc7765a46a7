package matrix

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func TestEmbeddedMatrixIsValid(t *testing.T) {
	rows, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := rows[0].Minor(), "1.16"; got != want {
		t.Errorf("first minor = %s, want %s", got, want)
	}
	if got, want := rows[len(rows)-1].Minor(), "1.38"; got != want {
		t.Errorf("last minor = %s, want %s", got, want)
	}
	if got, want := len(rows), 38-16+1; got != want {
		t.Errorf("%d rows, want one per minor: %d", got, want)
	}
}

func TestSets(t *testing.T) {
	for _, tc := range []struct {
		names []string
		want  []string
	}{
		{names: []string{"default"}, want: []string{"1.18.19", "1.19.16", "1.20.15", "1.21.14"}},
		{names: []string{"1.22", "default"}, want: []string{"1.22", "1.18.19", "1.19.16", "1.20.15", "1.21.14"}},
	} {
		got, err := ExpandSets(tc.names)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ExpandSets(%v) = %v, want %v", tc.names, got, tc.want)
		}
	}
	all, err := ExpandSets([]string{AllSet})
	if err != nil {
		t.Fatal(err)
	}
	rows, err := Build()
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != len(rows) || all[0] != "1.18.19" {
		t.Errorf("all = %v, want every build row (%d)", all, len(rows))
	}
	for _, bad := range []string{
		`{"sets": {"all": ["1.18.19"]}, "rows": [` + validRow("1.18.19", true) + `]}`,
		`{"sets": {"x": ["1.17"]}, "rows": [` + validRow("1.18.19", true) + `]}`,
		`{"sets": {"x": ["1.18"]}, "rows": [` + validRow("1.18.19", false) + `]}`,
	} {
		if _, err := Parse([]byte(bad)); err == nil {
			t.Errorf("Parse accepted %s", bad)
		}
	}
}

func validRow(v string, build bool) string {
	return fmt.Sprintf(`{"kubernetes": %q, "go": "1.13.15", "sourceSum": "h1:JNIbOrzvNRcGO07TVvTosW5ubMwc5LfuQdu7cy104Dg=", "toolchainSum": "h1:0YIfmYlhMe0yUYdbupupU89br9R11dmf/VOP2nfew9s=", "build": %t}`, v, build)
}

func TestBuildRowsUseUpstreamGo(t *testing.T) {
	want := map[string]string{"1.18": "1.13.15", "1.19": "1.15.15", "1.20": "1.15.15", "1.21": "1.16.15"}
	for minor, goVersion := range want {
		r, err := Lookup(minor)
		if err != nil {
			t.Fatal(err)
		}
		if r.Go != goVersion {
			t.Errorf("%s: go %s, want %s", minor, r.Go, goVersion)
		}
	}
}

func TestLookup(t *testing.T) {
	tests := []struct {
		in      string
		want    string
		wantErr bool
	}{
		{in: "1.18.19", want: "1.18.19"},
		{in: "v1.18.19", want: "1.18.19"},
		{in: "1.21", want: "1.21.14"},
		{in: "1.18.20", wantErr: true},
		{in: "1.2", wantErr: true},
	}
	for _, tt := range tests {
		r, err := Lookup(tt.in)
		if (err != nil) != tt.wantErr {
			t.Errorf("Lookup(%q) error = %v, wantErr %v", tt.in, err, tt.wantErr)
			continue
		}
		if err == nil && r.Kubernetes != tt.want {
			t.Errorf("Lookup(%q) = %s, want %s", tt.in, r.Kubernetes, tt.want)
		}
	}
}

func TestRowHelpers(t *testing.T) {
	r := Row{Kubernetes: "1.31.14", Go: "1.24.9", Overrides: map[string]string{"k8s.io/kube-scheduler": "v0.31.13"}}
	if got := r.Tag(); got != "v1.31.14" {
		t.Errorf("Tag = %s", got)
	}
	if got := r.Minor(); got != "1.31" {
		t.Errorf("Minor = %s", got)
	}
	if got := r.ModuleVersion("k8s.io/api"); got != "v0.31.14" {
		t.Errorf("ModuleVersion(api) = %s", got)
	}
	if got := r.ModuleVersion("k8s.io/kube-scheduler"); got != "v0.31.13" {
		t.Errorf("ModuleVersion(kube-scheduler) = %s", got)
	}
	if got := r.ToolchainModule(); got != "golang.org/toolchain@v0.0.1-go1.24.9.linux-amd64" {
		t.Errorf("ToolchainModule = %s", got)
	}
}

func TestPreRelease(t *testing.T) {
	for _, tt := range []struct {
		release, pre, minor, staging string
	}{
		{"1.38.0-beta.0", "beta.0", "1.38", "v0.38.0-beta.0"},
		{"1.38.0-rc.1", "rc.1", "1.38", "v0.38.0-rc.1"},
		{"1.38.0-alpha.2", "alpha.2", "1.38", "v0.38.0-alpha.2"},
		{"1.38.0", "", "1.38", "v0.38.0"},
	} {
		r := Row{Kubernetes: tt.release}
		if got := r.PreRelease(); got != tt.pre {
			t.Errorf("%s: PreRelease = %q, want %q", tt.release, got, tt.pre)
		}
		if got := r.Minor(); got != tt.minor {
			t.Errorf("%s: Minor = %q, want %q", tt.release, got, tt.minor)
		}
		if got := r.StagingVersion(); got != tt.staging {
			t.Errorf("%s: StagingVersion = %q, want %q", tt.release, got, tt.staging)
		}
		if got := r.Tag(); got != "v"+tt.release {
			t.Errorf("%s: Tag = %q", tt.release, got)
		}
	}
	const sum = "h1:0YIfmYlhMe0yUYdbupupU89br9R11dmf/VOP2nfew9s="
	r := Row{Kubernetes: "1.38.0-beta.0", Go: "1.27.3", SourceSum: sum, ToolchainSum: sum, Build: true}
	if err := r.Validate(); err != nil {
		t.Errorf("Validate(%s) = %v", r.Kubernetes, err)
	}
}

func TestParseRejects(t *testing.T) {
	const sum = "h1:0YIfmYlhMe0yUYdbupupU89br9R11dmf/VOP2nfew9s="
	row := func(k8s, goV, src, tc string, extra string) string {
		return `{"kubernetes":"` + k8s + `","go":"` + goV + `","sourceSum":"` + src + `","toolchainSum":"` + tc + `","build":false` + extra + `}`
	}
	tests := []struct {
		name string
		doc  string
		want string
	}{
		{"no rows", `{"rows":[]}`, "no rows"},
		{"unknown field", `{"rows":[` + row("1.18.19", "1.13.15", sum, sum, `,"colour":"red"`) + `]}`, "unknown field"},
		{"bad version", `{"rows":[` + row("v1.18.19", "1.13.15", sum, sum, "") + `]}`, "kubernetes must"},
		{"bad go", `{"rows":[` + row("1.18.19", "go1.13", sum, sum, "") + `]}`, "go \"go1.13\""},
		{"bad source sum", `{"rows":[` + row("1.18.19", "1.13.15", "h1:abc", sum, "") + `]}`, "sourceSum"},
		{"bad toolchain sum", `{"rows":[` + row("1.18.19", "1.13.15", sum, "sha256:x", "") + `]}`, "toolchainSum"},
		{"bad override", `{"rows":[` + row("1.18.19", "1.13.15", sum, sum, `,"overrides":{"k8s.io/api":"0.18.18"}`) + `]}`, "bad override"},
		{"stub and override", `{"rows":[` + row("1.18.19", "1.13.15", sum, sum, `,"stubs":["k8s.io/api"],"overrides":{"k8s.io/api":"v0.18.18"}`) + `]}`, "both"},
		{"control-plane module stubbed", `{"rows":[` + row("1.25.16", "1.20.14", sum, sum, `,"stubs":["k8s.io/kube-controller-manager"]`) + `]}`, "kube-controller-manager imports it"},
		{"out of order", `{"rows":[` + row("1.19.16", "1.15.15", sum, sum, "") + `,` + row("1.18.19", "1.13.15", sum, sum, "") + `]}`, "ascending"},
		{"two of a minor", `{"rows":[` + row("1.18.18", "1.13.15", sum, sum, "") + `,` + row("1.18.19", "1.13.15", sum, sum, "") + `]}`, "ascending"},
		{"unknown pre-release", `{"rows":[` + row("1.38.0-gamma.1", "1.27.3", sum, sum, "") + `]}`, "kubernetes must"},
		{"pre-release not the newest minor", `{"rows":[` + row("1.37.0-rc.1", "1.26.10", sum, sum, "") + `,` + row("1.38.0", "1.27.3", sum, sum, "") + `]}`, "pre-release 1.37.0-rc.1 must be the newest row"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.doc))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Parse error = %v, want it to mention %q", err, tt.want)
			}
		})
	}
}

func TestSelect(t *testing.T) {
	rows, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	got, err := Select(rows, []string{"1.21.14", "1.18"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Kubernetes != "1.18.19" || got[1].Kubernetes != "1.21.14" {
		t.Errorf("Select = %+v, want 1.18.19 and 1.21.14 in matrix order", got)
	}
	if _, err := Select(rows, []string{"1.99"}); err == nil {
		t.Error("Select of an unknown version succeeded")
	}
}
