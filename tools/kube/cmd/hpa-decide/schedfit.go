//go:build pyhpa_harness

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	resourcehelper "k8s.io/component-helpers/resource"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	plfeature "k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/noderesources"
	"k8s.io/kubernetes/pkg/scheduler/framework/runtime"
)

// schedCase is one placement question: a pod (its spec) and nodes (allocatable, and the specs of the pods bound
// to each), under a NodeResourcesFit scoring strategy (LeastAllocated or MostAllocated; cpu and memory, weight 1
// each, as kube-scheduler's default profile configures it).
type schedCase struct {
	Strategy string      `json:"strategy"`
	Pod      v1.PodSpec  `json:"pod"`
	Nodes    []schedNode `json:"nodes"`
}

type schedNode struct {
	Name        string          `json:"name"`
	Allocatable v1.ResourceList `json:"allocatable"`
	Pods        []v1.PodSpec    `json:"pods"`
}

// schedLine is what kube-scheduler v1.37.2's NodeResourcesFit plugin makes of a case: the pod's requests as the
// scheduler counts them (component-helpers' PodRequests: containers, init containers, sidecars, overhead,
// pod-level resources; cpu in millicores, memory in bytes) and, for each node, whether Filter passes (and its
// reasons when not) and Score (0-100; computed for every node, as if it had passed).
type schedLine struct {
	CPU    int64           `json:"cpu"`
	Memory int64           `json:"memory"`
	Nodes  []schedNodeLine `json:"nodes"`
	Error  string          `json:"error,omitempty"`
}

type schedNodeLine struct {
	Name    string   `json:"name"`
	Fits    bool     `json:"fits"`
	Reasons []string `json:"reasons,omitempty"`
	Score   int64    `json:"score"`
}

// schedFit reads one schedCase per line and writes one schedLine per line: pyhpa's scheduler (pyhpa/fleet) is
// checked against these on random nodes and pods (tests/test_fleet_scheduler.py). Upstream's plugin is called as
// its own tests call it (least_allocated_test.go): NewFit with a framework on a snapshot of the nodes and pods,
// then PreFilter, Filter, PreScore and Score; the feature gates are v1.37.2's defaults.
func schedFit(in io.Reader, out *bufio.Writer) error {
	ctx := context.Background()
	feats := plfeature.NewSchedulerFeaturesFromGates(utilfeature.DefaultFeatureGate)
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	enc := json.NewEncoder(out)
	for sc.Scan() {
		var c schedCase
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			return fmt.Errorf("--sched-fit: a line is not a case: %v", err)
		}
		line, err := schedOne(ctx, feats, &c)
		if err != nil {
			line = schedLine{Error: err.Error()}
		}
		if err := enc.Encode(line); err != nil {
			return err
		}
	}
	return sc.Err()
}

func schedOne(ctx context.Context, feats plfeature.Features, c *schedCase) (schedLine, error) {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "new", Namespace: "default", UID: "new"}, Spec: c.Pod}
	var nodes []*v1.Node
	var pods []*v1.Pod
	for _, n := range c.Nodes {
		nodes = append(nodes, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.Name},
			Status: v1.NodeStatus{Allocatable: n.Allocatable, Capacity: n.Allocatable}})
		for j, spec := range n.Pods {
			name := fmt.Sprintf("%s-%d", n.Name, j)
			p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name)},
				Spec: spec}
			p.Spec.NodeName = n.Name
			pods = append(pods, p)
		}
	}
	snapshot := cache.NewSnapshot(pods, nodes)
	fh, err := runtime.NewFramework(ctx, nil, nil, runtime.WithSnapshotSharedLister(snapshot))
	if err != nil {
		return schedLine{}, err
	}
	strategy := config.LeastAllocated
	if c.Strategy == string(config.MostAllocated) {
		strategy = config.MostAllocated
	} else if c.Strategy != string(config.LeastAllocated) {
		return schedLine{}, fmt.Errorf("unknown strategy %q", c.Strategy)
	}
	args := &config.NodeResourcesFitArgs{ScoringStrategy: &config.ScoringStrategy{Type: strategy,
		Resources: []config.ResourceSpec{{Name: string(v1.ResourceCPU), Weight: 1}, {Name: string(v1.ResourceMemory), Weight: 1}}}}
	p, err := noderesources.NewFit(ctx, args, fh, feats)
	if err != nil {
		return schedLine{}, err
	}
	infos, err := snapshot.NodeInfos().List()
	if err != nil {
		return schedLine{}, err
	}
	// the requests first, of a copy: PodRequests adds the overhead to the pod-level request it returns, and when
	// that quantity is held as an inf.Dec (1.5Gi) the Add changes the pod's own spec too, so a second call on the
	// same pod (PreFilter's) would count the overhead twice
	req := resourcehelper.PodRequests(pod.DeepCopy(), resourcehelper.PodResourcesOptions{
		SkipPodLevelResources: !feats.EnablePodLevelResources})
	state := framework.NewCycleState()
	if _, st := p.(fwk.PreFilterPlugin).PreFilter(ctx, state, pod, infos); !st.IsSuccess() {
		return schedLine{}, st.AsError()
	}
	if st := p.(fwk.PreScorePlugin).PreScore(ctx, state, pod, infos); !st.IsSuccess() {
		return schedLine{}, st.AsError()
	}
	line := schedLine{CPU: req.Cpu().MilliValue(), Memory: req.Memory().Value()}
	for _, n := range c.Nodes {
		info, err := snapshot.Get(n.Name)
		if err != nil {
			return schedLine{}, err
		}
		st := p.(fwk.FilterPlugin).Filter(ctx, state, pod, info)
		score, sst := p.(fwk.ScorePlugin).Score(ctx, state, pod, info)
		if !sst.IsSuccess() {
			return schedLine{}, sst.AsError()
		}
		nl := schedNodeLine{Name: n.Name, Fits: st.IsSuccess(), Score: score}
		if !st.IsSuccess() {
			nl.Reasons = st.Reasons()
		}
		line.Nodes = append(line.Nodes, nl)
	}
	return line, nil
}
