package systemupgrade

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/kubelet-compat/kubelet-compat/pkg/versions"
)

// TestRuntimeVersionMirrorsParseRef feeds upgrade.sh's runtime_version and
// Go's versions.ParseRef the same table: the shell must accept what Go
// reads as containerd@VERSION, print the same VERSION, and refuse the rest.
func TestRuntimeVersionMirrorsParseRef(t *testing.T) {
	fn := regexp.MustCompile(`(?ms)^runtime_version\(\) \{\n.*?^\}\n`).Find(Script)
	assert.Assert(t, fn != nil, "upgrade.sh has no runtime_version function")
	for _, in := range []string{
		"containerd@1.7.35", "containerd@2.4.2", "containerd@v2.4.2", "containerd@0.0.0", "containerd@10.20.30",
		"containerd@1.7", "containerd@1.7.35.1", "containerd@1.07.35", "containerd@1.7.x", "containerd@1..35",
		"containerd@1.7.35-rc.1", "containerd@vv1.7.35", "containerd@", "containerd", "containerd-1.7.35",
		"1.7.35", "@1.7.35", "runc@1.5.3", "crio@1.31.0", "containerd@1.7.35@2", "",
	} {
		r, err := versions.ParseRef(in)
		want := ""
		if err == nil && r.Name == "containerd" {
			want = r.Version.String()
		}
		for _, sh := range shells(t) {
			t.Run(sh.name+"/"+in, func(t *testing.T) {
				cmd := exec.Command("sh", "-c", string(fn)+`runtime_version "$1"`, "sh", in)
				if sh.path != "" {
					cmd = exec.Command(filepath.Join(sh.path, "sh"), "-c", string(fn)+`runtime_version "$1"`, "sh", in)
					cmd.Env = append(os.Environ(), "PATH="+sh.path)
				}
				out, err := cmd.Output()
				if want == "" {
					assert.Assert(t, err != nil, "runtime_version %q printed %q; Go refuses it", in, out)
					return
				}
				assert.NilError(t, err, "runtime_version %q; Go reads %s", in, want)
				assert.Equal(t, strings.TrimSpace(string(out)), want)
			})
		}
	}
}
