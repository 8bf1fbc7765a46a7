package preflight

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	kubeletcompat "github.com/kubelet-compat/kubelet-compat/kubelet-compat"
)

// ---- user-namespace range ----

// userNamespaceMinor is the first minor that finds its user through
// getent(1) (NSS accounts too, where 1.37's static build read /etc/passwd
// alone) and refuses a range that ends past the last mappable ID
// (pkg/kubelet/kubelet_pods.go getKubeletMappings, pkg/kubelet/userns
// MakeUserNsManager). Either stops the kubelet at its start.
const userNamespaceMinor = 38

// kubeletUser is the account whose subordinate IDs the kubelet maps pods to.
const kubeletUser = "kubelet"

// userNsUnit is the granularity of idsPerPod, and its default.
const userNsUnit = 65536

// SubIDs is what the node answers the kubelet's look-up of its user
// namespace range: `getent passwd kubelet` and, when it finds the user and
// getsubids is on PATH, `getsubids kubelet` and `getsubids -g kubelet`.
type SubIDs struct {
	UserFound bool   // getent exited 0
	LookupErr string // getent failed otherwise than "not found" (exit 2)
	GetSubIDs bool   // getsubids is on PATH
	UIDs      string // getsubids kubelet
	GIDs      string // getsubids -g kubelet
	RunErr    string // getsubids failed
}

// UserNamespaceRange is the target kubelet's check of its user namespace
// range at its start, from 1.38 on: a range it refuses keeps it from
// starting, patched or not. idsPerPod is the config's
// userNamespaces.idsPerPod (0: the default, 65536); lookup asks the node,
// for a target that checks only.
func UserNamespaceRange(to kubeletcompat.Version, idsPerPod int64, lookup func() SubIDs) []Finding {
	if to.Minor < userNamespaceMinor {
		return nil
	}
	if idsPerPod == 0 {
		idsPerPod = userNsUnit
	}
	why := userNamespaceRefusal(uint64(idsPerPod), lookup())
	if why == "" {
		return nil
	}
	return []Finding{{Pod: NodeRow, Check: CheckUserNamespaces, Unpatched: noStart, Patched: noStart,
		Why:           fmt.Sprintf("kubelet %s refuses the user namespace range: %s", to, why),
		PatchedReason: sameAsUpstream + ": fix the kubelet user's entries in /etc/subuid and /etc/subgid (or its NSS source) first"}}
}

// userNamespaceRefusal is the kubelet's error for the range, or "".
func userNamespaceRefusal(idsPerPod uint64, ids SubIDs) string {
	switch {
	case ids.LookupErr != "":
		return fmt.Sprintf("looking up user %q via getent: %s", kubeletUser, ids.LookupErr)
	case !ids.UserFound || !ids.GetSubIDs:
		return "" // the default range
	case ids.RunErr != "":
		return fmt.Sprintf("error retrieving additional uids for user %q: %s", kubeletUser, ids.RunErr)
	case ids.UIDs != ids.GIDs:
		return fmt.Sprintf("mismatched subuids and subgids for user %q", kubeletUser)
	}
	id, length, err := parseSubIDs(ids.UIDs)
	switch {
	case err != nil:
		return err.Error()
	case idsPerPod%userNsUnit != 0:
		return fmt.Sprintf("kubelet user namespace length %d is not a multiple of %d", idsPerPod, userNsUnit)
	case id%idsPerPod != 0:
		return fmt.Sprintf("kubelet user assigned ID %d is not a multiple of %d", id, idsPerPod)
	case id < idsPerPod:
		return fmt.Sprintf("kubelet user assigned ID %d must be greater or equal to %d", id, idsPerPod)
	case id+length > math.MaxUint32:
		return fmt.Sprintf("kubelet user assigned ID %d with assigned IDs length %d ends past the last mappable ID %d", id, length, uint64(math.MaxUint32)-1)
	}
	return ""
}

// parseSubIDs reads getsubids' one line "0: kubelet <first> <count>" as
// the kubelet does (parseGetSubIdsOutput).
func parseSubIDs(out string) (first, count uint64, err error) {
	lines := strings.Split(strings.Trim(out, "\n"), "\n")
	if len(lines) != 1 {
		return 0, 0, fmt.Errorf("error parsing line %q: it must contain only one line", out)
	}
	parts := strings.Fields(lines[0])
	if len(parts) != 4 {
		return 0, 0, fmt.Errorf("invalid line %q", out)
	}
	if first, err = strconv.ParseUint(parts[2], 10, 32); err != nil {
		return 0, 0, fmt.Errorf("error parsing line %q: %w", out, err)
	}
	if count, err = strconv.ParseUint(parts[3], 10, 32); err != nil {
		return 0, 0, fmt.Errorf("error parsing line %q: %w", out, err)
	}
	return first, count, nil
}
