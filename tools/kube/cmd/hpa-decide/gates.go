//go:build pyhpa_harness

package main

import (
	"fmt"
	"sort"
	"sync"
	"testing"
	"testing/synctest"

	"k8s.io/apimachinery/pkg/util/version"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/featuregate"
	featuregatetesting "k8s.io/component-base/featuregate/testing"
)

// kubeVersion is the version whose gate defaults apply (the binary's own: DefaultKubeBinaryVersion).
var kubeVersion = version.MustParse("1.37")

// decisionGates are the gates whose value changes a decision of a snapshot; under an emulated version
// (a locked gate set to its other value) the ones a snapshot leaves unset keep their v1.37 defaults.
var decisionGates = []featuregate.Feature{"HPAScaleToZero", "HPAConfigurableTolerance", "PodLevelResources"}

// specAt is the gate's spec at version v: the last one introduced at or before v (nil: the gate does not
// exist at v).
func specAt(specs featuregate.VersionedSpecs, v *version.Version) *featuregate.FeatureSpec {
	var out *featuregate.FeatureSpec
	for i := range specs {
		if specs[i].Version == nil || !specs[i].Version.GreaterThan(v) {
			out = &specs[i]
		}
	}
	return out
}

// setGates applies a snapshot's controller.featureGates for the duration of the bubble's test. A gate
// locked to its default in v1.37 set to its other value needs an emulated version where it is not locked
// (what `kube-controller-manager --emulated-version` gives); that version is returned ("" without one).
func setGates(t *testing.T, want map[string]bool) (string, error) {
	if len(want) == 0 {
		return "", nil
	}
	gate := utilfeature.DefaultMutableFeatureGate
	known := gate.GetAllVersioned()
	overrides := featuregatetesting.FeatureOverrides{}
	lockedAt := func(v *version.Version) bool {
		for name, value := range want {
			if s := specAt(known[featuregate.Feature(name)], v); s != nil && s.LockToDefault && s.Default != value {
				return true
			}
		}
		return false
	}
	for name, value := range want {
		specs, ok := known[featuregate.Feature(name)]
		if !ok {
			return "", fmt.Errorf("controller.featureGates.%s: not a feature gate of Kubernetes v1.37.2", name)
		}
		if specAt(specs, kubeVersion) == nil {
			return "", fmt.Errorf("controller.featureGates.%s: not a feature gate of Kubernetes v1.37", name)
		}
		overrides[featuregate.Feature(name)] = value
	}
	emulation := ""
	if lockedAt(kubeVersion) {
		v := kubeVersion
		for lockedAt(v) {
			v = v.SubtractMinor(1)
		}
		for name := range want {
			if specAt(known[featuregate.Feature(name)], v) == nil {
				return "", fmt.Errorf("controller.featureGates.%s: the value asked for needs Kubernetes %s, where the gate does not exist", name, v)
			}
		}
		featuregatetesting.SetFeatureGateEmulationVersionDuringTest(t, gate, v)
		for _, f := range decisionGates {
			if _, set := overrides[f]; !set && specAt(known[f], v) != nil {
				overrides[f] = specAt(known[f], kubeVersion).Default
			}
		}
		emulation = v.String()
	}
	featuregatetesting.SetFeatureGatesDuringTest(t, gate, overrides)
	return emulation, nil
}

// recordingGate records the gates queried through utilfeature.DefaultFeatureGate.
type recordingGate struct {
	featuregate.MutableVersionedFeatureGate
	mu   sync.Mutex
	seen map[featuregate.Feature]bool
}

func (r *recordingGate) Enabled(f featuregate.Feature) bool {
	r.mu.Lock()
	r.seen[f] = true
	r.mu.Unlock()
	return r.MutableVersionedFeatureGate.Enabled(f)
}

// probe is a sync that reaches every gate read of the controller: the constructor, a Resource utilization
// metric (PodLevelResources), spec.behavior with a tolerance (HPAConfigurableTolerance), a rescale
// (HPAScaleToZero) and the status write (HPAGeneration).
const probe = `{"name": "gate-probe", "now": "2026-01-01T00:00:00Z",
 "hpa": {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "probe", "namespace": "default"},
  "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "probe"}, "minReplicas": 1, "maxReplicas": 10,
   "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}}],
   "behavior": {"scaleUp": {"tolerance": "0.05"}}}},
 "scale": {"spec": {"replicas": 1}, "status": {"replicas": 1, "selector": "app=probe"}},
 "pods": [{"metadata": {"name": "probe-0", "labels": {"app": "probe"}},
  "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]},
  "status": {"phase": "Running", "startTime": "2025-01-01T00:00:00Z",
   "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2025-01-01T00:00:00Z"}]}}],
 "metrics": {"resource": {"items": [{"metadata": {"name": "probe-0"}, "timestamp": "2026-01-01T00:00:00Z", "window": "1m0s",
  "containers": [{"name": "c", "usage": {"cpu": "900m"}}]}]}}}`

type gateRow struct {
	Name          string `json:"name"`
	Default       bool   `json:"default"`
	PreRelease    string `json:"preRelease"`
	LockToDefault bool   `json:"lockToDefault"`
	Since         string `json:"since"`
}

type gateTableOut struct {
	KubernetesVersion string    `json:"kubernetesVersion"`
	EmulationVersion  string    `json:"emulationVersion"`
	Gates             []gateRow `json:"gates"`
}

// gateTable runs the probe sync with a recording feature gate and returns every gate the controller read,
// with its spec at the binary's version.
func gateTable(t *testing.T) (*gateTableOut, error) {
	snaps, err := parseProbe()
	if err != nil {
		return nil, err
	}
	rec := &recordingGate{MutableVersionedFeatureGate: utilfeature.DefaultMutableFeatureGate, seen: map[featuregate.Feature]bool{}}
	var derr error
	var line *decision
	synctest.Test(t, func(t *testing.T) {
		saved := utilfeature.DefaultFeatureGate
		utilfeature.DefaultFeatureGate = rec
		defer func() { utilfeature.DefaultFeatureGate = saved }()
		line, derr = decide(t, snaps)
	})
	if derr != nil {
		return nil, derr
	}
	if line.DesiredReplicas != 2 {
		return nil, fmt.Errorf("the gate probe did not scale 1 -> 2 (got %d): it did not reach every gate", line.DesiredReplicas)
	}
	gate := utilfeature.DefaultMutableFeatureGate
	known := gate.GetAllVersioned()
	out := &gateTableOut{KubernetesVersion: "v1.37.2", EmulationVersion: gate.EmulationVersion().String(), Gates: []gateRow{}}
	for f := range rec.seen {
		s := specAt(known[f], gate.EmulationVersion())
		if s == nil {
			continue
		}
		stage := string(s.PreRelease)
		if s.PreRelease == featuregate.GA {
			stage = "GA"
		}
		out.Gates = append(out.Gates, gateRow{Name: string(f), Default: s.Default, PreRelease: stage,
			LockToDefault: s.LockToDefault, Since: s.Version.String()})
	}
	sort.Slice(out.Gates, func(i, j int) bool { return out.Gates[i].Name < out.Gates[j].Name })
	return out, nil
}

func parseProbe() (*snapshot, error) {
	s, err := parseSnapshot([]byte(probe))
	if err != nil {
		return nil, fmt.Errorf("the gate probe: %v", err)
	}
	s.file = "(probe)"
	return s, nil
}
