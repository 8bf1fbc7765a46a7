package nodeimage

import (
	"testing"

	"gotest.tools/v3/assert"
)

func TestMirrorFor(t *testing.T) {
	for _, tc := range []struct{ name, content, want string }{
		{"deb822", "Types: deb\nURIs: http://deb.debian.org/debian\nSuites: bookworm bookworm-updates\nComponents: main\n", "http://deb.debian.org/debian"},
		{"deb822, security first", "Types: deb\nURIs: http://deb.debian.org/debian-security\nSuites: bookworm-security\n\nTypes: deb\n# comment\nURIs: http://mirror.example/debian\nSuites: bookworm\n", "http://mirror.example/debian"},
		{"deb822 deb-src only", "Types: deb-src\nURIs: http://deb.debian.org/debian\nSuites: bookworm\n", ""},
		{"one-line", "# x\ndeb http://ftp.de.debian.org/debian bookworm main\n", "http://ftp.de.debian.org/debian"},
		{"one-line with options", "deb [arch=amd64 signed-by=/k.gpg] http://m.example/debian bookworm main\n", "http://m.example/debian"},
		{"other suite", "deb https://packages.cloud.google.com/apt cloud-sdk-bookworm main\n", ""},
	} {
		assert.Equal(t, mirrorFor([]byte(tc.content), "bookworm"), tc.want, tc.name)
	}
}

func TestCheckVersion(t *testing.T) {
	for _, v := range []string{"1.20.15", "1.21.14"} {
		assert.NilError(t, checkVersion(v))
	}
	for _, v := range []string{"v1.20.15", "1.20", "1.20.15+compat.1", ""} {
		assert.Assert(t, checkVersion(v) != nil, v)
	}
}
