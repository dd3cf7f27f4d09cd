//go:build pyhpa_harness

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// snapshot is one parsed snapshot (tests/data/conformance/FORMAT.md).
type snapshot struct {
	file          string
	Name          string
	Level         string
	Now           time.Time
	Flags         controllerFlags
	HPA           *autoscalingv2.HorizontalPodAutoscaler
	Scale         *autoscalingv1.Scale
	Pods          []*v1.Pod
	Metrics       rawMetrics
	History       *history
	Prenormalized *int32
}

// controllerFlags are the snapshot's `controller` keys; omitted keys take kube-controller-manager's defaults.
type controllerFlags struct {
	Tolerance               float64
	CPUInitializationPeriod time.Duration
	InitialReadinessDelay   time.Duration
	DownscaleWindow         time.Duration
	ScaleUpLimitFactor      float64
	FeatureGates            map[string]bool
}

type rawSnapshot struct {
	Name       string            `json:"name"`
	Level      string            `json:"level"`
	Now        *string           `json:"now"`
	Controller *rawController    `json:"controller"`
	HPA        json.RawMessage   `json:"hpa"`
	Scale      json.RawMessage   `json:"scale"`
	Pods       []json.RawMessage `json:"pods"`
	Metrics    *rawMetrics       `json:"metrics"`
	History    *rawHistory       `json:"history"`
	Input      *struct {
		Prenormalized *int32 `json:"prenormalizedDesiredReplicas"`
	} `json:"input"`
}

type rawController struct {
	Tolerance                           *float64        `json:"tolerance"`
	CPUInitializationPeriodSeconds      *float64        `json:"cpuInitializationPeriodSeconds"`
	InitialReadinessDelaySeconds        *float64        `json:"initialReadinessDelaySeconds"`
	DownscaleStabilizationWindowSeconds *float64        `json:"downscaleStabilizationWindowSeconds"`
	ScaleUpLimitFactor                  *float64        `json:"scaleUpLimitFactor"`
	FeatureGates                        map[string]bool `json:"featureGates"`
}

// rawMetrics are the metrics APIs' answers, decoded when a client asks for them.
type rawMetrics struct {
	Resource   json.RawMessage            `json:"resource"`
	Pods       map[string]json.RawMessage `json:"pods"`
	Object     map[string]json.RawMessage `json:"object"`
	External   map[string]json.RawMessage `json:"external"`
	Prometheus map[string]json.RawMessage `json:"prometheus"`
	Errors     []string                   `json:"errors"`
}

type rawHistory struct {
	Recommendations json.RawMessage `json:"recommendations"`
	ScaleUpEvents   []rawEvent      `json:"scaleUpEvents"`
	ScaleDownEvents []rawEvent      `json:"scaleDownEvents"`
}

type rawRecommendation struct {
	Timestamp metav1.Time `json:"timestamp"`
	Replicas  int32       `json:"replicas"`
}

type rawEvent struct {
	Timestamp     metav1.Time `json:"timestamp"`
	ReplicaChange int32       `json:"replicaChange"`
}

// history is the controller memory of the snapshot; Recommendations nil: no memory yet.
type history struct {
	Recommendations []rawRecommendation
	ScaleUpEvents   []rawEvent
	ScaleDownEvents []rawEvent
}

// readSnapshots parses every snapshot of a file: one snapshot, a list, several YAML documents, or
// {"cases": [...]}.
func readSnapshots(path string) ([]*snapshot, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &inputError{fmt.Sprintf("%s: cannot read file: %v", path, err)}
	}
	var docs []json.RawMessage
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return nil, &inputError{path + ": the file is empty"}
	}
	if trimmed[0] == '{' || trimmed[0] == '[' {
		docs = []json.RawMessage{trimmed}
	} else {
		reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
		for {
			doc, err := reader.Read()
			if err == io.EOF {
				break
			}
			if err != nil {
				return nil, &inputError{fmt.Sprintf("%s: malformed YAML: %v", path, err)}
			}
			if len(bytes.TrimSpace(doc)) == 0 {
				continue
			}
			j, err := yaml.YAMLToJSON(doc)
			if err != nil {
				return nil, &inputError{fmt.Sprintf("%s: malformed YAML: %v", path, err)}
			}
			if string(j) != "null" {
				docs = append(docs, j)
			}
		}
	}
	var cases []json.RawMessage
	for _, d := range docs {
		if d[0] == '[' {
			var list []json.RawMessage
			if err := utiljson.Unmarshal(d, &list); err != nil {
				return nil, &inputError{fmt.Sprintf("%s: malformed JSON: %v", path, err)}
			}
			cases = append(cases, list...)
			continue
		}
		var top struct {
			Cases *[]json.RawMessage `json:"cases"`
		}
		if err := utiljson.Unmarshal(d, &top); err != nil {
			return nil, &inputError{fmt.Sprintf("%s: malformed JSON: %v", path, err)}
		}
		if top.Cases != nil {
			cases = append(cases, *top.Cases...)
		} else {
			cases = append(cases, d)
		}
	}
	if len(cases) == 0 {
		return nil, &inputError{path + ": no snapshots"}
	}
	out := make([]*snapshot, 0, len(cases))
	for i, c := range cases {
		s, err := parseSnapshot(c)
		if err != nil {
			return nil, &inputError{fmt.Sprintf("%s: snapshot #%d: %v", path, i, err)}
		}
		s.file = path
		if s.Name == "" {
			s.Name = fmt.Sprintf("snapshot #%d", i)
		}
		out = append(out, s)
	}
	return out, nil
}

func parseSnapshot(raw json.RawMessage) (*snapshot, error) {
	var r rawSnapshot
	if err := utiljson.Unmarshal(raw, &r); err != nil {
		return nil, err
	}
	s := &snapshot{Name: r.Name, Level: r.Level}
	if s.Level == "" {
		s.Level = "controller"
	}
	if r.Now == nil || len(r.HPA) == 0 || len(r.Scale) == 0 {
		return nil, fmt.Errorf("needs now, hpa and scale")
	}
	now, err := time.Parse(time.RFC3339Nano, *r.Now)
	if err != nil {
		return nil, fmt.Errorf("now: %v", err)
	}
	s.Now = now
	s.Flags = controllerFlags{
		Tolerance: 0.1, CPUInitializationPeriod: 5 * time.Minute, InitialReadinessDelay: 30 * time.Second,
		DownscaleWindow: 5 * time.Minute, ScaleUpLimitFactor: 2.0,
	}
	if c := r.Controller; c != nil {
		if c.Tolerance != nil {
			s.Flags.Tolerance = *c.Tolerance
		}
		for _, d := range []struct {
			v   *float64
			dst *time.Duration
		}{{c.CPUInitializationPeriodSeconds, &s.Flags.CPUInitializationPeriod},
			{c.InitialReadinessDelaySeconds, &s.Flags.InitialReadinessDelay},
			{c.DownscaleStabilizationWindowSeconds, &s.Flags.DownscaleWindow}} {
			if d.v != nil {
				*d.dst = time.Duration(math.Round(*d.v * float64(time.Second)))
			}
		}
		if c.ScaleUpLimitFactor != nil {
			s.Flags.ScaleUpLimitFactor = *c.ScaleUpLimitFactor
		}
		s.Flags.FeatureGates = c.FeatureGates
	}
	var tm metav1.TypeMeta
	if err := utiljson.Unmarshal(r.HPA, &tm); err != nil {
		return nil, fmt.Errorf("hpa: %v", err)
	}
	if tm.APIVersion != "autoscaling/v2" || tm.Kind != "HorizontalPodAutoscaler" {
		return nil, fmt.Errorf("hpa: upstream decides an autoscaling/v2 HorizontalPodAutoscaler, got %s %s (pyhpa's extensions are pyhpa's)", tm.APIVersion, tm.Kind)
	}
	s.HPA = &autoscalingv2.HorizontalPodAutoscaler{}
	if err := utiljson.Unmarshal(r.HPA, s.HPA); err != nil {
		return nil, fmt.Errorf("hpa: %v", err)
	}
	s.Scale = &autoscalingv1.Scale{}
	if err := utiljson.Unmarshal(r.Scale, s.Scale); err != nil {
		return nil, fmt.Errorf("scale: %v", err)
	}
	for i, p := range r.Pods {
		pod := &v1.Pod{}
		if err := utiljson.Unmarshal(p, pod); err != nil {
			return nil, fmt.Errorf("pods[%d]: %v", i, err)
		}
		s.Pods = append(s.Pods, pod)
	}
	if r.Metrics != nil {
		s.Metrics = *r.Metrics
		if len(s.Metrics.Prometheus) > 0 {
			return nil, fmt.Errorf("metrics.prometheus: PromQL metrics are pyhpa's, upstream has none")
		}
	}
	if h := r.History; h != nil {
		s.History = &history{ScaleUpEvents: h.ScaleUpEvents, ScaleDownEvents: h.ScaleDownEvents}
		if len(h.Recommendations) > 0 { // present: memory that exists (null or [] : empty)
			s.History.Recommendations = []rawRecommendation{}
			if err := utiljson.Unmarshal(h.Recommendations, &s.History.Recommendations); err != nil {
				return nil, fmt.Errorf("history.recommendations: %v", err)
			}
			if s.History.Recommendations == nil {
				s.History.Recommendations = []rawRecommendation{}
			}
		}
	}
	if r.Input != nil {
		s.Prenormalized = r.Input.Prenormalized
	}
	return s, nil
}
