package kubeletcompat

import "testing"

func TestParseVersion(t *testing.T) {
	tests := []struct {
		in      string
		want    string
		wantErr bool
	}{
		{in: "v1.18.19", want: "v1.18.19"},
		{in: "1.21.14", want: "v1.21.14"},
		{in: "v1.21.14+compat.1", want: "v1.21.14+compat.1"},
		{in: "v1.22.0-rc.1", want: "v1.22.0-rc.1"},
		{in: "v1.22.0-alpha.0.123+abcdef", want: "v1.22.0-alpha.0.123+abcdef"},
		{in: "v0.0.0-master+$Format:%h$", wantErr: true},
		{in: "v1.21", wantErr: true},
		{in: "v1.021.3", wantErr: true},
		{in: "v1.21.3-", wantErr: true},
		{in: "v1.21.3-rc.01", wantErr: true},
		{in: "v1.21.x", wantErr: true},
		{in: "", wantErr: true},
	}
	for _, tt := range tests {
		got, err := ParseVersion(tt.in)
		if (err != nil) != tt.wantErr {
			t.Errorf("ParseVersion(%q) error = %v, wantErr %v", tt.in, err, tt.wantErr)
			continue
		}
		if err == nil && got.String() != tt.want {
			t.Errorf("ParseVersion(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

func TestVersionCompare(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"v1.18.19", "v1.19.16", -1},
		{"v1.19.16", "v1.18.19", 1},
		{"v1.21.14", "v1.21.14+compat.1", 0}, // build metadata has no precedence
		{"v1.20.15+compat.1", "v1.21.14+compat.1", -1},
		{"v1.21.0-rc.1", "v1.21.0", -1},
		{"v1.21.0-alpha.2", "v1.21.0-alpha.10", -1},
		{"v1.21.0-alpha.2", "v1.21.0-beta.0", -1},
		{"v1.21.0-1", "v1.21.0-alpha", -1},
		{"v1.21.0-alpha", "v1.21.0-alpha.1", -1},
		{"v1.9.0", "v1.10.0", -1},
		// "-1" is an alphanumeric identifier (semver: digits only are numeric),
		// so it sorts after every numeric one.
		{"v1.21.0-rc.0", "v1.21.0-rc.-1", -1},
		// Numeric identifiers of any length compare as numbers, never overflow.
		{"v1.21.0-rc.9", "v1.21.0-rc.99999999999999999999999", -1},
		{"v1.21.0-rc.99999999999999999999998", "v1.21.0-rc.99999999999999999999999", -1},
		{"v1.21.0-rc.99999999999999999999999", "v1.21.0-rc.100000000000000000000000", -1},
		{"v1.21.0-rc.99999999999999999999999", "v1.21.0-rc.a", -1},
	}
	for _, tt := range tests {
		a, err := ParseVersion(tt.a)
		if err != nil {
			t.Fatal(err)
		}
		b, err := ParseVersion(tt.b)
		if err != nil {
			t.Fatal(err)
		}
		if got := a.Compare(b); got != tt.want {
			t.Errorf("%s.Compare(%s) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
		if got := b.Compare(a); got != -tt.want {
			t.Errorf("%s.Compare(%s) = %d, want %d", tt.b, tt.a, got, -tt.want)
		}
	}
}
