//go:build pyhpa_harness

// The one file of ours in this package. controlplane/build.py builds the package out of upstream's own files of
// k8s.io/kubernetes v1.37.2's pkg/controller/podautoscaler (horizontal.go, replica_calculator.go, ...), which a
// `go build -overlay` places here unchanged from the module cache, and this file, only for
// tools/kube/cmd/hpa-decide (the `pyhpa_harness` build tag). It changes nothing of upstream's code: it is a door
// into the package's unexported state, as upstream's own horizontal_test.go uses it (the controller memory, the
// scale-up limit factor, one worker step), so that hpa-decide can set up what a snapshot describes and run
// upstream's sync on it.

package podautoscaler

import (
	"context"
	"fmt"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/kubernetes/pkg/controller/podautoscaler/monitor"
)

// PyhpaRecommendation is one entry of the controller's recommendation memory of an HPA.
type PyhpaRecommendation struct {
	Replicas  int32
	Timestamp time.Time
}

// PyhpaScaleEvent is one remembered rescale: the replica change (absolute) and when.
type PyhpaScaleEvent struct {
	ReplicaChange int32
	Timestamp     time.Time
}

// PyhpaSetMemory seeds the controller's memory of the HPA `key` ("namespace/name") as a snapshot's
// history gives it. `recommendations` nil: no memory yet (the sync seeds it with the current replica
// count, recordInitialRecommendation); an empty non-nil slice: memory that exists and is empty.
func (a *HorizontalController) PyhpaSetMemory(key string, recommendations []PyhpaRecommendation, up, down []PyhpaScaleEvent) {
	a.recommendationsLock.Lock()
	if recommendations != nil {
		recs := make([]timestampedRecommendation, 0, len(recommendations))
		for _, r := range recommendations {
			recs = append(recs, timestampedRecommendation{r.Replicas, r.Timestamp})
		}
		a.recommendations[key] = recs
	}
	a.recommendationsLock.Unlock()
	events := func(in []PyhpaScaleEvent) []timestampedScaleEvent {
		if in == nil {
			return nil
		}
		out := make([]timestampedScaleEvent, 0, len(in))
		for _, e := range in {
			out = append(out, timestampedScaleEvent{e.ReplicaChange, e.Timestamp, false})
		}
		return out
	}
	a.scaleUpEventsLock.Lock()
	if e := events(up); e != nil {
		a.scaleUpEvents[key] = e
	}
	a.scaleUpEventsLock.Unlock()
	a.scaleDownEventsLock.Lock()
	if e := events(down); e != nil {
		a.scaleDownEvents[key] = e
	}
	a.scaleDownEventsLock.Unlock()
}

// PyhpaSetScaleUpLimitFactor sets the package's scaleUpLimitFactor (the scale-up cap without
// spec.behavior, max(factor*current, 4)), as upstream's tests do; it returns the previous value.
func PyhpaSetScaleUpLimitFactor(factor float64) float64 {
	previous := scaleUpLimitFactor
	scaleUpLimitFactor = factor
	return previous
}

// countingMonitor counts the metric computations of a sync (upstream's monitor is still called).
type countingMonitor struct {
	monitor.Monitor
	metricComputations int
}

func (m *countingMonitor) ObserveMetricComputationResult(action monitor.ActionLabel, err monitor.ErrorLabel, d time.Duration, t autoscalingv2.MetricSourceType) {
	m.metricComputations++
	m.Monitor.ObserveMetricComputationResult(action, err, d, t)
}

// PyhpaSync runs one worker step on `hpa` (already in the HPA informer's store): enqueueHPA, as the
// informer's add handler calls it, then processNextWorkItem, the worker loop's body (reconcileKey,
// reconcileAutoscaler, the rescale and the status write through the clients the controller was built
// with). It returns how many metrics the sync computed (0 when it did not reach the metrics).
func (a *HorizontalController) PyhpaSync(ctx context.Context, hpa *autoscalingv2.HorizontalPodAutoscaler) int {
	counting := &countingMonitor{Monitor: a.monitor}
	a.monitor = counting
	defer func() { a.monitor = counting.Monitor }()
	a.enqueueHPA(hpa)
	a.processNextWorkItem(ctx)
	return counting.metricComputations
}

// PyhpaMetric computes one metric of `hpa` as the sync does (computeReplicasForMetric with the scale's
// spec and status replicas and its parsed selector): the replica proposal, the metric status the sync
// writes, and the error. The sync keeps only the highest proposal; this gives each one.
func (a *HorizontalController) PyhpaMetric(ctx context.Context, hpa *autoscalingv2.HorizontalPodAutoscaler, scale *autoscalingv1.Scale, i int) (int32, autoscalingv2.MetricStatus, error) {
	selector, err := labels.Parse(scale.Status.Selector)
	if err != nil {
		return 0, autoscalingv2.MetricStatus{}, err
	}
	var status autoscalingv2.MetricStatus
	replicas, _, _, _, err := a.computeReplicasForMetric(ctx, hpa, hpa.Spec.Metrics[i], scale.Spec.Replicas, scale.Status.Replicas, selector, &status)
	return replicas, status, err
}

// PyhpaNormalize normalizes a given recommendation as the sync does after computing the metrics
// (normalizeDesiredReplicas without spec.behavior, normalizeDesiredReplicasWithBehaviors with it),
// setting AbleToScale and ScalingLimited on `hpa`; what upstream's normalization tests call.
func (a *HorizontalController) PyhpaNormalize(hpa *autoscalingv2.HorizontalPodAutoscaler, key string, currentReplicas, prenormalized int32) int32 {
	minReplicas := int32(1)
	if hpa.Spec.MinReplicas != nil {
		minReplicas = *hpa.Spec.MinReplicas
	}
	a.recordInitialRecommendation(currentReplicas, key)
	if hpa.Spec.Behavior == nil {
		return a.normalizeDesiredReplicas(hpa, key, currentReplicas, prenormalized, minReplicas)
	}
	return a.normalizeDesiredReplicasWithBehaviors(hpa, key, currentReplicas, prenormalized, minReplicas)
}

// PyhpaShutDown stops the controller's work queue (its delaying goroutine), as Run does on exit.
func (a *HorizontalController) PyhpaShutDown() {
	a.queue.ShutDown()
}

// PyhpaEvent is one Event the controller's recorder was given: its type (Normal, Warning), reason and message.
type PyhpaEvent struct {
	Type    string
	Reason  string
	Message string
}

// pyhpaRecorder keeps what the controller records, in order, as the broadcaster would send it (one Event per
// call; client-go's recorder then aggregates repeats into one Event whose count rises).
type pyhpaRecorder struct{ events *[]PyhpaEvent }

func (r pyhpaRecorder) Event(_ runtime.Object, eventtype, reason, message string) {
	*r.events = append(*r.events, PyhpaEvent{eventtype, reason, message})
}

func (r pyhpaRecorder) Eventf(_ runtime.Object, eventtype, reason, messageFmt string, args ...interface{}) {
	*r.events = append(*r.events, PyhpaEvent{eventtype, reason, fmt.Sprintf(messageFmt, args...)})
}

func (r pyhpaRecorder) AnnotatedEventf(_ runtime.Object, _ map[string]string, eventtype, reason, messageFmt string, args ...interface{}) {
	*r.events = append(*r.events, PyhpaEvent{eventtype, reason, fmt.Sprintf(messageFmt, args...)})
}

// PyhpaRecordEvents makes the controller's event recorder keep every event it is given (instead of sending them
// through the broadcaster, asynchronously); the slice returned fills as the sync records.
func (a *HorizontalController) PyhpaRecordEvents() *[]PyhpaEvent {
	events := &[]PyhpaEvent{}
	a.eventRecorder = pyhpaRecorder{events}
	return events
}
