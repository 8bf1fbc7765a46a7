package harness

import (
	"path/filepath"
	"testing"
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
