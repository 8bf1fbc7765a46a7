package preflight

import (
	"strings"
	"testing"

	kubeletcompat "github.com/kubelet-compat/kubelet-compat/kubelet-compat"
)

func TestUserNamespaceRange(t *testing.T) {
	v137 := kubeletcompat.Version{Major: 1, Minor: 37}
	v138 := kubeletcompat.Version{Major: 1, Minor: 38}
	found := func(uids, gids string) SubIDs {
		return SubIDs{UserFound: true, GetSubIDs: true, UIDs: uids, GIDs: gids}
	}
	for _, tc := range []struct {
		name      string
		to        kubeletcompat.Version
		idsPerPod int64
		ids       SubIDs
		want      string // substring of the finding's Why; "" = none
	}{
		{"no kubelet user: the default range", v138, 0, SubIDs{}, ""},
		{"a range inside the mappable IDs", v138, 0, found("0: kubelet 65536 1073741824\n", "0: kubelet 65536 1073741824\n"), ""},
		{"a range past the last mappable ID", v138, 0, found("0: kubelet 4294901760 65536\n", "0: kubelet 4294901760 65536\n"),
			"ends past the last mappable ID 4294967294"},
		{"the same range under 1.37: not this check's", v137, 0, found("0: kubelet 4294901760 65536\n", "0: kubelet 4294901760 65536\n"), ""},
		{"subuids and subgids differ", v138, 0, found("0: kubelet 65536 65536\n", "0: kubelet 131072 65536\n"), "mismatched subuids and subgids"},
		{"a start not a multiple of idsPerPod", v138, 131072, found("0: kubelet 65536 1048576\n", "0: kubelet 65536 1048576\n"), "is not a multiple of 131072"},
		{"the start below idsPerPod", v138, 0, found("0: kubelet 0 65536\n", "0: kubelet 0 65536\n"), "must be greater or equal to 65536"},
		{"getsubids answers nothing", v138, 0, SubIDs{UserFound: true, GetSubIDs: true, RunErr: "exit status 1"}, "error retrieving additional uids"},
		{"getent fails", v138, 0, SubIDs{LookupErr: "exit status 3"}, "looking up user \"kubelet\" via getent"},
		{"a user only NSS knows, without getsubids: the default range", v138, 0, SubIDs{UserFound: true}, ""},
		{"two lines", v138, 0, found("0: kubelet 65536 65536\n1: kubelet 131072 65536\n", "0: kubelet 65536 65536\n1: kubelet 131072 65536\n"), "it must contain only one line"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			asked := false
			got := UserNamespaceRange(tc.to, tc.idsPerPod, func() SubIDs { asked = true; return tc.ids })
			if asked != (tc.to.Minor >= 38) {
				t.Errorf("the node was asked: %v, want only for 1.38 and later", asked)
			}
			if tc.want == "" {
				if len(got) != 0 {
					t.Fatalf("findings %+v, want none", got)
				}
				return
			}
			if len(got) != 1 || !strings.Contains(got[0].Why, tc.want) || got[0].Pod != NodeRow || got[0].Check != CheckUserNamespaces {
				t.Fatalf("findings %+v, want one node finding saying %q", got, tc.want)
			}
		})
	}
}
