package systemupgrade

import "github.com/kubelet-compat/kubelet-compat/deploy/system-upgrade/manifest"

// The manifests, the Plans and their names live in package manifest, which
// the Cluster API extension's module imports without this package's
// container runtime; these are their names here, for the commands, the
// simulation and the e2e.

const (
	Namespace             = manifest.Namespace
	ServiceAccount        = manifest.ServiceAccount
	ControlPlanePlan      = manifest.ControlPlanePlan
	WorkersPlan           = manifest.WorkersPlan
	ControllerImageRef    = manifest.ControllerImageRef
	UpgradeImageName      = manifest.UpgradeImageName
	NaiveControlPlanePlan = manifest.NaiveControlPlanePlan
	NaiveWorkersPlan      = manifest.NaiveWorkersPlan
	NaiveImageName        = manifest.NaiveImageName
	RetryAnnotation       = manifest.RetryAnnotation
	RollPath              = manifest.RollPath
)

type (
	Options       = manifest.Options
	Plan          = manifest.Plan
	PlanSpec      = manifest.PlanSpec
	ContainerSpec = manifest.ContainerSpec
)

var (
	DefaultOptions = manifest.DefaultOptions
	Plans          = manifest.Plans
	Controller     = manifest.Controller
	Render         = manifest.Render
	YAMLStream     = manifest.YAMLStream
)
