package harness

import (
	"path/filepath"
	"testing"

	"gotest.tools/v3/assert"
)

// TestOpenAPIHeader: the header file of each era's openapi-gen run. The
// 1.26 .. 1.29 form failed first: the proxy's code-generator v0.28.15 has
// no hack/boilerplate.go.txt, which the build passed there.
func TestOpenAPIHeader(t *testing.T) {
	tree := "/src/1.28.15"
	codegen := "/mod/k8s.io/code-generator@v0.21.14/hack/boilerplate.go.txt"
	own := filepath.Join(tree, "hack", "boilerplate", "boilerplate.generatego.txt")
	for _, tt := range []struct {
		name          string
		updateCodegen string
		want          string
	}{
		{name: "1.18 .. 1.25: Makefile.generated_files, code-generator's header", updateCodegen: "codegen::protobuf\ngen_deepcopy\n", want: codegen},
		{name: "1.26 .. 1.29: update-codegen.sh runs openapi-gen (gengo v1)", updateCodegen: "BOILERPLATE_FILENAME=\"hack/boilerplate/boilerplate.generatego.txt\"\n  k8s.io/code-generator/cmd/openapi-gen\n  -h \"${BOILERPLATE_FILENAME}\"\n", want: own},
		{name: "1.30 on: gengo v2", updateCodegen: "k8s.io/kube-openapi/cmd/openapi-gen\n  --output-pkg \"${output_pkg}\"\n", want: own},
		{name: "no update-codegen.sh", want: codegen},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := openAPIHeader([]byte(tt.updateCodegen), tree, codegen); got != tt.want {
				t.Errorf("openAPIHeader = %s, want %s", got, tt.want)
			}
		})
	}
}

// TestOpenAPIGenArgs: the flags of openapi-gen before gengo v2 (1.29 and
// older) and from it (1.30), and where each writes the file.
func TestOpenAPIGenArgs(t *testing.T) {
	args, file := openAPIGenArgs(false, []string{"k8s.io/api/core/v1", "k8s.io/apimachinery/pkg/apis/meta/v1"}, "/h.txt", "/tmp/r", "/tmp/out")
	assert.DeepEqual(t, args, []string{"--logtostderr", "-i", "k8s.io/api/core/v1,k8s.io/apimachinery/pkg/apis/meta/v1",
		"-p", "k8s.io/kubernetes/pkg/generated/openapi", "-O", "zz_generated.openapi", "-h", "/h.txt", "-r", "/tmp/r", "-o", "/tmp/out"})
	assert.Equal(t, file, "/tmp/out/k8s.io/kubernetes/pkg/generated/openapi/zz_generated.openapi.go")
	args, file = openAPIGenArgs(true, []string{"k8s.io/api/core/v1"}, "/h.txt", "/tmp/r", "/tmp/out")
	assert.DeepEqual(t, args, []string{"--go-header-file", "/h.txt", "--output-file", "zz_generated.openapi.go", "--output-dir", "/tmp/out",
		"--output-pkg", "k8s.io/kubernetes/pkg/generated/openapi", "--report-filename", "/tmp/r", "k8s.io/api/core/v1"})
	assert.Equal(t, file, "/tmp/out/zz_generated.openapi.go")
}
