//go:build pyhpa_harness

package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/pyhpa/pyhpa/tools/kube/internal/podautoscaler"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	scalefake "k8s.io/client-go/scale/fake"
	core "k8s.io/client-go/testing"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	_ "k8s.io/kubernetes/pkg/apis/autoscaling/install" // the API server's defaulting of autoscaling/v2
	metricsclient "k8s.io/kubernetes/pkg/controller/podautoscaler/metrics"
	cmapi "k8s.io/metrics/pkg/apis/custom_metrics/v1beta2"
	emapi "k8s.io/metrics/pkg/apis/external_metrics/v1beta1"
	metricsapi "k8s.io/metrics/pkg/apis/metrics/v1beta1"
	resourceclient "k8s.io/metrics/pkg/client/clientset/versioned/typed/metrics/v1beta1"
	cmfake "k8s.io/metrics/pkg/client/custom_metrics/fake"
	emfake "k8s.io/metrics/pkg/client/external_metrics/fake"
)

// The keys of `pyhpa explain -o json` that hpa-decide prints.
type decision struct {
	Name             string      `json:"name"`
	DesiredReplicas  int32       `json:"desiredReplicas"`
	Proposals        []proposal  `json:"proposals"`
	Conditions       []condition `json:"conditions"`
	EmulationVersion string      `json:"emulationVersion,omitempty"`
	// the whole status the sync leaves (what it wrote, else the object as the sync changed it); none for a
	// normalization alone
	Status *autoscalingv2.HorizontalPodAutoscalerStatus `json:"status,omitempty"`
	// every event the controller's recorder was given during the sync, in order
	Events []event `json:"events"`
}

type event struct {
	Type    string `json:"type"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

type proposal struct {
	Replicas    *int32  `json:"replicas"`
	Utilization *int32  `json:"utilization"`
	RawValue    *string `json:"rawValue"`
	Error       *string `json:"error"`
}

type condition struct {
	Type    string `json:"type"`
	Status  string `json:"status"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// The resync period kube-controller-manager's --horizontal-pod-autoscaler-sync-period defaults to; one sync
// is run, so it only sets when the worker would requeue the HPA.
const syncPeriod = 15 * time.Second

// bubbleStart is where a testing/synctest bubble's fake clock starts.
var bubbleStart = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// failedCall is the error text of a metrics API call the snapshot lists in metrics.errors (pyhpa's text).
const failedCall = "the metrics API call failed (listed in the snapshot's metrics.errors)"

// decide runs upstream's controller on one snapshot; it must run inside a synctest bubble.
func decide(t *testing.T, s *snapshot) (*decision, error) {
	emulation, err := setGates(t, s.Flags.FeatureGates)
	if err != nil {
		return nil, err
	}
	// the clock: the bubble's fake clock moves by exactly the time slept
	start := time.Now()
	if !start.Equal(bubbleStart) {
		return nil, fmt.Errorf("the synctest clock starts at %s, not %s", start, bubbleStart)
	}
	if s.Now.Before(bubbleStart) {
		return nil, fmt.Errorf("now %s is before %s, where the fake clock starts", s.Now.Format(time.RFC3339Nano), bubbleStart.Format(time.RFC3339))
	}
	time.Sleep(s.Now.Sub(bubbleStart))
	if got := time.Now(); !got.Equal(s.Now) {
		return nil, fmt.Errorf("the fake clock reads %s, not now %s", got.Format(time.RFC3339Nano), s.Now.Format(time.RFC3339Nano))
	}

	hpa := s.HPA.DeepCopy()
	if hpa.Namespace == "" {
		hpa.Namespace = metav1.NamespaceDefault
	}
	legacyscheme.Scheme.Default(hpa) // what the API server stores: spec.behavior's rules, minReplicas, a cpu metric
	key := hpa.Namespace + "/" + hpa.Name

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var written *autoscalingv2.HorizontalPodAutoscaler
	kube := &fake.Clientset{}
	kube.AddReactor("update", "horizontalpodautoscalers", func(action core.Action) (bool, runtime.Object, error) {
		obj := action.(core.UpdateAction).GetObject().(*autoscalingv2.HorizontalPodAutoscaler)
		written = obj.DeepCopy()
		return true, obj, nil
	})
	kube.AddReactor("create", "events", func(action core.Action) (bool, runtime.Object, error) {
		return true, action.(core.CreateAction).GetObject(), nil
	})
	factory := informers.NewSharedInformerFactory(kube, 0)
	hpaInformer := factory.Autoscaling().V2().HorizontalPodAutoscalers()
	podInformer := factory.Core().V1().Pods()
	if err := hpaInformer.Informer().GetIndexer().Add(hpa); err != nil {
		return nil, err
	}
	for _, p := range s.Pods {
		pod := p.DeepCopy()
		if pod.Namespace == "" { // FORMAT.md: a pod without a namespace is in the HPA's
			pod.Namespace = hpa.Namespace
		}
		if err := podInformer.Informer().GetIndexer().Add(pod); err != nil {
			return nil, err
		}
	}

	scales := &scalefake.FakeScaleClient{}
	scales.AddReactor("get", "*", func(action core.Action) (bool, runtime.Object, error) {
		sc := s.Scale.DeepCopy()
		sc.Namespace, sc.Name = hpa.Namespace, hpa.Spec.ScaleTargetRef.Name
		return true, sc, nil
	})
	scales.AddReactor("update", "*", func(action core.Action) (bool, runtime.Object, error) {
		return true, action.(core.UpdateAction).GetObject(), nil
	})
	// the API server's discovery, for the one kind the HPA targets (upstream's tests use a static mapper)
	var mapper meta.RESTMapper = meta.NewDefaultRESTMapper(nil)
	if gv, err := schema.ParseGroupVersion(hpa.Spec.ScaleTargetRef.APIVersion); err == nil {
		m := meta.NewDefaultRESTMapper([]schema.GroupVersion{gv})
		m.Add(gv.WithKind(hpa.Spec.ScaleTargetRef.Kind), meta.RESTScopeNamespace)
		mapper = m
	}

	metrics := metricsclient.NewRESTMetricsClient(&resourceMetrics{s: s}, customMetrics(s), externalMetrics(s))
	a := podautoscaler.NewHorizontalController(ctx, kube.CoreV1(), scales, kube.AutoscalingV2(), mapper, metrics,
		hpaInformer, podInformer, syncPeriod, s.Flags.DownscaleWindow, s.Flags.Tolerance,
		s.Flags.CPUInitializationPeriod, s.Flags.InitialReadinessDelay)
	defer a.PyhpaShutDown()
	recorded := a.PyhpaRecordEvents()
	previous := podautoscaler.PyhpaSetScaleUpLimitFactor(s.Flags.ScaleUpLimitFactor)
	defer podautoscaler.PyhpaSetScaleUpLimitFactor(previous)
	if h := s.History; h != nil {
		var recs []podautoscaler.PyhpaRecommendation
		if h.Recommendations != nil {
			recs = make([]podautoscaler.PyhpaRecommendation, 0, len(h.Recommendations))
			for _, r := range h.Recommendations {
				recs = append(recs, podautoscaler.PyhpaRecommendation{Replicas: r.Replicas, Timestamp: r.Timestamp.Time})
			}
		}
		a.PyhpaSetMemory(key, recs, events(h.ScaleUpEvents), events(h.ScaleDownEvents))
	}

	out := &decision{Name: s.Name, Proposals: []proposal{}, Conditions: []condition{}, EmulationVersion: emulation,
		Events: []event{}}
	if s.Level == "behavior" && s.Prenormalized != nil {
		// a recommendation given, not computed: normalization alone, as upstream's normalization tests run it
		h := hpa.DeepCopy()
		out.DesiredReplicas = a.PyhpaNormalize(h, key, s.Scale.Spec.Replicas, *s.Prenormalized)
		out.Conditions = conditions(h.Status.Conditions)
		return out, nil
	}
	// each metric's proposal, as the sync computes it (kept only when the sync computes the metrics)
	proposals := make([]proposal, 0, len(hpa.Spec.Metrics))
	for i := range hpa.Spec.Metrics {
		replicas, status, err := a.PyhpaMetric(ctx, hpa.DeepCopy(), s.Scale, i)
		proposals = append(proposals, metricProposal(replicas, status, err))
	}
	if got := time.Now(); !got.Equal(s.Now) {
		return nil, fmt.Errorf("the fake clock moved to %s before the sync", got.Format(time.RFC3339Nano))
	}
	*recorded = (*recorded)[:0] // the proposals' own calls above record too: only the sync's events are the sync's
	computed := a.PyhpaSync(ctx, hpa)
	if got := time.Now(); !got.Equal(s.Now) {
		return nil, fmt.Errorf("the fake clock moved to %s during the sync", got.Format(time.RFC3339Nano))
	}
	final := hpa
	if written != nil {
		final = written
	}
	out.DesiredReplicas = final.Status.DesiredReplicas
	out.Conditions = conditions(final.Status.Conditions)
	out.Status = final.Status.DeepCopy()
	for _, e := range *recorded {
		out.Events = append(out.Events, event{e.Type, e.Reason, e.Message})
	}
	if computed > 0 {
		out.Proposals = proposals
	}
	return out, nil
}

func events(in []rawEvent) []podautoscaler.PyhpaScaleEvent {
	if in == nil {
		return nil
	}
	out := make([]podautoscaler.PyhpaScaleEvent, 0, len(in))
	for _, e := range in {
		out = append(out, podautoscaler.PyhpaScaleEvent{ReplicaChange: e.ReplicaChange, Timestamp: e.Timestamp.Time})
	}
	return out
}

func conditions(in []autoscalingv2.HorizontalPodAutoscalerCondition) []condition {
	out := make([]condition, 0, len(in))
	for _, c := range in {
		out = append(out, condition{string(c.Type), string(c.Status), c.Reason, c.Message})
	}
	return out
}

// metricProposal is one metric's line: the replicas it proposes, and from the status the sync writes for
// it the utilization (Utilization targets) and the raw value (current.averageValue, else current.value).
func metricProposal(replicas int32, status autoscalingv2.MetricStatus, err error) proposal {
	if err != nil {
		msg := err.Error()
		return proposal{Error: &msg}
	}
	p := proposal{Replicas: &replicas}
	var cur *autoscalingv2.MetricValueStatus
	switch {
	case status.Resource != nil:
		cur = &status.Resource.Current
	case status.ContainerResource != nil:
		cur = &status.ContainerResource.Current
	case status.Pods != nil:
		cur = &status.Pods.Current
	case status.Object != nil:
		cur = &status.Object.Current
	case status.External != nil:
		cur = &status.External.Current
	}
	if cur != nil {
		p.Utilization = cur.AverageUtilization
		q := cur.AverageValue
		if q == nil {
			q = cur.Value
		}
		if q != nil {
			text := q.String()
			p.RawValue = &text
		}
	}
	return p
}

// listed reports whether the snapshot lists this metrics API call as failed.
func listed(s *snapshot, call string) bool { return slices.Contains(s.Metrics.Errors, call) }

// resourceMetrics answers metrics.k8s.io with the snapshot's PodMetricsList, as given (the fake clientset
// would filter the items by the pods' labels; FORMAT.md: the answers are used as given).
type resourceMetrics struct {
	resourceclient.PodMetricsInterface // Get and Watch: never called by the HPA
	s                                  *snapshot
}

func (r *resourceMetrics) PodMetricses(namespace string) resourceclient.PodMetricsInterface { return r }

func (r *resourceMetrics) List(ctx context.Context, opts metav1.ListOptions) (*metricsapi.PodMetricsList, error) {
	if listed(r.s, "resource") {
		return nil, errors.New(failedCall)
	}
	list := &metricsapi.PodMetricsList{}
	if len(r.s.Metrics.Resource) == 0 {
		return list, nil
	}
	if err := utiljson.Unmarshal(r.s.Metrics.Resource, list); err != nil {
		return nil, fmt.Errorf("metrics.resource: %v", err)
	}
	return list, nil
}

// customMetrics answers custom.metrics.k8s.io: a Pods metric with metrics.pods.<name>, an Object metric
// with metrics.object.<name> (a MetricValue, or a MetricValueList).
func customMetrics(s *snapshot) *cmfake.FakeCustomMetricsClient {
	c := &cmfake.FakeCustomMetricsClient{}
	c.AddReactor("get", "*", func(action core.Action) (bool, runtime.Object, error) {
		get := action.(cmfake.GetForAction)
		name := get.GetMetricName()
		kind, answers := "object", s.Metrics.Object
		if get.GetName() == "*" { // GetForObjects: the pods of the selector
			kind, answers = "pods", s.Metrics.Pods
		}
		if listed(s, kind+":"+name) {
			return true, nil, errors.New(failedCall)
		}
		raw, ok := answers[name]
		if !ok {
			return true, nil, fmt.Errorf("no %s metric '%s' in the snapshot", kind, name)
		}
		list := &cmapi.MetricValueList{}
		var probe struct {
			Items *[]cmapi.MetricValue `json:"items"`
		}
		if err := utiljson.Unmarshal(raw, &probe); err != nil {
			return true, nil, fmt.Errorf("metrics.%s.%s: %v", kind, name, err)
		}
		if probe.Items != nil {
			list.Items = *probe.Items
		} else {
			var one cmapi.MetricValue
			if err := utiljson.Unmarshal(raw, &one); err != nil {
				return true, nil, fmt.Errorf("metrics.%s.%s: %v", kind, name, err)
			}
			list.Items = []cmapi.MetricValue{one}
		}
		return true, list, nil
	})
	return c
}

// externalMetrics answers external.metrics.k8s.io with metrics.external.<name>, as given.
func externalMetrics(s *snapshot) *emfake.FakeExternalMetricsClient {
	c := &emfake.FakeExternalMetricsClient{}
	c.AddReactor("list", "*", func(action core.Action) (bool, runtime.Object, error) {
		name := action.(core.ListAction).GetResource().Resource
		if listed(s, "external:"+name) {
			return true, nil, errors.New(failedCall)
		}
		raw, ok := s.Metrics.External[name]
		if !ok {
			return true, nil, fmt.Errorf("no external metric '%s' in the snapshot", name)
		}
		list := &emapi.ExternalMetricValueList{}
		if err := utiljson.Unmarshal(raw, list); err != nil {
			return true, nil, fmt.Errorf("metrics.external.%s: %v", name, err)
		}
		return true, list, nil
	})
	return c
}
