package roll

// Where the roll keeps what it keeps on the node (the previous release's
// Job's paths), as the node sees them.
const (
	// RollDir holds the roll's state, under its lock.
	RollDir = "/var/lib/kubelet-compat/roll"
	// LockFile is the roll's lock: every run holds it (flock) while it runs.
	LockFile = RollDir + "/lock"
	// StateFile is the roll's State; StateFile.new is written, synced and
	// renamed over it.
	StateFile = RollDir + "/state"
	// LastRollFile is the state of the node's previous roll.
	LastRollFile = RollDir + "/last-roll"
	// PictureFile is kubelet-compat picture's, the gate's reference.
	PictureFile = RollDir + "/picture.json"
	// BeforeFile lists the pods the runtime ran at the picture:
	// "pod NAMESPACE/NAME UID ID,ID,...".
	BeforeFile = RollDir + "/before"
	// ReadyBeforeFile lists those Ready at the picture, with their
	// readiness-probed containers: "NAMESPACE/NAME UID C,C,...|-".
	ReadyBeforeFile = RollDir + "/ready-before"
	// ProbesBaseFile is the kubelet's readiness probe counters right
	// before the runtime swap: "POD-UID CONTAINER RESULT COUNT".
	ProbesBaseFile = RollDir + "/probes-base"
	// BackupDir holds what kubeadm upgrade rewrites, saved before it ran
	// (BackupDir.new while it is written).
	BackupDir = RollDir + "/backup"

	// StagingDir is where the Job stages the target's packages
	// (StagingDir/TARGET/) and the marker of a failed gate
	// (StagingDir/TARGET.gate-failed).
	StagingDir = "/var/lib/kubelet-compat/upgrade"
	// ManifestsDir holds the static pods' manifests kubeadm rewrites.
	ManifestsDir = "/etc/kubernetes/manifests"
)

// KubeletFiles are the kubelet's configuration kubeadm upgrade rewrites.
var KubeletFiles = []string{"/var/lib/kubelet/config.yaml", "/var/lib/kubelet/kubeadm-flags.env"}

// gateFailedMarker is the marker of a failed gate for target.
func gateFailedMarker(target string) string { return StagingDir + "/" + target + ".gate-failed" }
