package update

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/kubelet-compat/kubelet-compat/deploy/system-upgrade/manifest"
)

// The ExtensionConfig's settings the roll reads (CAPI hands them to every
// request): the Plans' Options a Machine's roll uses, by the generator's
// flag names. The rest of Options is CAPI's (which Machines, how many at a
// time) or not for CAPI (cordon: CAPI neither drains nor cordons for an
// in-place update; the naive roll has no gate).
const (
	SettingAllowLoss       = "allowLoss"
	SettingGateTimeout     = "gateTimeout"
	SettingJobDeadline     = "jobDeadline"
	SettingJobTTL          = "jobTTL"
	SettingRuntime         = "runtime"
	SettingEtcdBridgeImage = "etcdBridgeImage"
	SettingKubeadmArgs     = "kubeadmArgs"
)

// Options are the Options of a Machine's roll to version (1.31.14) with
// the upgrade image image (untagged, as the Plans name it) and the
// ExtensionConfig's settings, validated as the Plans validate them.
func Options(version, image string, settings map[string]string) (manifest.Options, error) {
	o := manifest.DefaultOptions(version)
	o.Image = image
	number := func(key, v string) (int64, error) {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("setting %s=%q: want a number of seconds", key, v)
		}
		return n, nil
	}
	keys := make([]string, 0, len(settings))
	for k := range settings {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := settings[k]
		var err error
		switch k {
		case SettingAllowLoss:
			if o.AllowLoss, err = strconv.ParseBool(v); err != nil {
				return o, fmt.Errorf("setting %s=%q: want true or false", k, v)
			}
		case SettingGateTimeout:
			var n int64
			n, err = number(k, v)
			o.GateTimeout = int(n)
		case SettingJobDeadline:
			o.JobDeadline, err = number(k, v)
		case SettingJobTTL:
			o.JobTTL, err = number(k, v)
		case SettingRuntime:
			o.Runtime = v
		case SettingEtcdBridgeImage:
			o.EtcdBridgeImage = v
		case SettingKubeadmArgs:
			o.KubeadmArgs = strings.Fields(v)
		default:
			return o, fmt.Errorf("setting %q: unknown (want %s)", k, strings.Join([]string{SettingAllowLoss, SettingGateTimeout,
				SettingJobDeadline, SettingJobTTL, SettingRuntime, SettingEtcdBridgeImage, SettingKubeadmArgs}, ", "))
		}
		if err != nil {
			return o, err
		}
	}
	if o.JobDeadline < 1 {
		return o, fmt.Errorf("setting %s=%d: want at least 1 second (kc-roll's lock waits as long)", SettingJobDeadline, o.JobDeadline)
	}
	if _, err := manifest.Plans(o); err != nil {
		return o, err
	}
	return o, nil
}
