//go:build pyhpa_harness

// hpa-decide: upstream's HPA controller (k8s.io/kubernetes v1.37.2, pkg/controller/podautoscaler) decides
// snapshots in pyhpa's format (tests/data/conformance/FORMAT.md), one JSON line per snapshot with the keys
// `pyhpa explain -o json` prints: name, desiredReplicas, proposals[] (replicas, utilization, rawValue, error)
// and conditions[] (type, status, reason, message).
//
// Upstream's code is called, not re-written: NewHorizontalController with fake clients (as upstream's
// horizontal_test.go builds it), the snapshot's HPA and pods in its informers' stores, the snapshot's
// metrics answers behind upstream's REST metrics client, and one step of the worker (processNextWorkItem:
// reconcileKey, reconcileAutoscaler, its replica calculator and normalization, the rescale and the status
// write). The status the controller writes is the decision. controlplane/build.py compiles upstream's package
// files, read from the module cache by `go build -overlay`, as tools/kube/internal/podautoscaler, together with
// one file of ours there (zz_pyhpa_harness.go) that opens the package's unexported state: the controller
// memory a snapshot's history gives, the scale-up limit factor, the one worker step, and
// computeReplicasForMetric for the per-metric proposals the sync does not expose.
//
// The clock: upstream reads time.Now(). Each snapshot runs inside a testing/synctest bubble, whose clock is
// fake: it starts at 2000-01-01T00:00:00Z and moves only when every goroutine of the bubble is blocked;
// hpa-decide sleeps exactly `now - 2000-01-01` (nanoseconds) before the sync, so every time.Now() of the sync
// returns the snapshot's `now` to the nanosecond. synctest needs a *testing.T: hpa-decide runs as a one-test
// program through testing.Main (kept for "other systems that simulate go test").
//
// Usage: hpa-decide FILE...      decide every snapshot of each file (JSON or YAML; a snapshot, a list, or
//
//	{"cases": [...]}), one JSON line each, in order
//
// hpa-decide --gates             the feature gates the controller reads (recorded during a probe sync), with
//
//	their v1.37.2 default, stage and lock, as one JSON object
//
// hpa-decide --quantities        apimachinery's ParseQuantity, String and MilliValue of each text on stdin (one
//
//	JSON string a line), one JSON line each (quantities.go)
//
// hpa-decide --sched-fit         kube-scheduler's NodeResourcesFit plugin (Filter and Score) on each case on stdin
//
//	(a pod and nodes, one JSON object a line), one JSON line each (schedfit.go)
//
// Bad input: one line on stderr naming the file and snapshot, exit code 2.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"testing"
	"testing/synctest"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/klog/v2"
)

func usage() {
	fmt.Fprintln(os.Stderr, "usage: hpa-decide FILE...   (snapshots: tests/data/conformance/FORMAT.md)")
	fmt.Fprintln(os.Stderr, "       hpa-decide --gates    (the feature gates the HPA controller reads, v1.37.2 defaults)")
	fmt.Fprintln(os.Stderr, "       hpa-decide --quantities < TEXTS   (ParseQuantity, String, MilliValue of each JSON string line)")
	fmt.Fprintln(os.Stderr, "       hpa-decide --sched-fit < CASES    (kube-scheduler's NodeResourcesFit on each JSON case line)")
}

// inputError is bad input: reported as one line, exit code 2.
type inputError struct{ msg string }

func (e *inputError) Error() string { return e.msg }

func main() {
	args := os.Args[1:]
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		usage()
		if len(args) == 0 {
			os.Exit(2)
		}
		return
	}
	if len(args) == 1 && (args[0] == "--quantities" || args[0] == "--sched-fit") {
		out := bufio.NewWriterSize(os.Stdout, 1<<16)
		var err error
		if args[0] == "--quantities" {
			err = quantities(os.Stdin, out)
		} else {
			err = schedFit(os.Stdin, out)
		}
		out.Flush()
		if err != nil {
			fmt.Fprintf(os.Stderr, "hpa-decide: %v\n", err)
			os.Exit(2)
		}
		return
	}
	gates := len(args) == 1 && args[0] == "--gates"
	var snaps []*snapshot
	if !gates {
		for _, a := range args {
			if len(a) > 1 && a[0] == '-' {
				fmt.Fprintf(os.Stderr, "hpa-decide: unknown flag %s\n", a)
				usage()
				os.Exit(2)
			}
			got, err := readSnapshots(a)
			if err != nil {
				fmt.Fprintf(os.Stderr, "hpa-decide: %v\n", err)
				os.Exit(2)
			}
			snaps = append(snaps, got...)
		}
	}
	if os.Getenv("HPA_DECIDE_LOG") == "" { // upstream's klog lines (errors it handles, events) stay quiet
		fs := flag.NewFlagSet("klog", flag.ContinueOnError)
		klog.InitFlags(fs)
		_ = fs.Set("logtostderr", "false")
		_ = fs.Set("stderrthreshold", "FATAL")
		klog.SetOutput(io.Discard)
	}
	// utilruntime.HandleError's handlers: upstream's log one (quiet above) and a "rudimentary backoff" that sleeps
	// until 1 ms after the previous error, measured from the real clock at start: inside a fake-clock bubble that
	// sleep would jump the clock by the distance between the real and the snapshot's time. Only logging is kept.
	utilruntime.ErrorHandlers = []utilruntime.ErrorHandler{
		func(ctx context.Context, err error, msg string, keysAndValues ...interface{}) {
			klog.FromContext(ctx).Error(err, msg, keysAndValues...)
		},
	}
	out := bufio.NewWriterSize(os.Stdout, 1<<16)
	// testing.Main parses the testing flags from os.Args and prints PASS on stdout: give it neither.
	os.Args = os.Args[:1]
	devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		fmt.Fprintf(os.Stderr, "hpa-decide: %v\n", err)
		os.Exit(1)
	}
	os.Stdout = devnull
	run := func(t *testing.T) {
		os.Exit(runAll(t, out, gates, snaps))
	}
	testing.Main(matchAll, []testing.InternalTest{{Name: "HPADecide", F: run}}, nil, nil)
}

// runAll does the work inside the one test and returns the exit code (output flushed).
func runAll(t *testing.T, out *bufio.Writer, gates bool, snaps []*snapshot) int {
	defer out.Flush()
	if gates {
		table, err := gateTable(t)
		if err != nil {
			fmt.Fprintf(os.Stderr, "hpa-decide: %v\n", err)
			return 1
		}
		writeJSON(out, table)
		return 0
	}
	for _, s := range snaps {
		var line *decision
		var err error
		synctest.Test(t, func(t *testing.T) { line, err = decide(t, s) })
		if err != nil {
			out.Flush()
			fmt.Fprintf(os.Stderr, "hpa-decide: %s: snapshot %q: %v\n", s.file, s.Name, err)
			return 2
		}
		writeJSON(out, line)
	}
	return 0
}

var matchAll = func(pat, str string) (bool, error) { return regexp.MatchString(pat, str) }

func writeJSON(w *bufio.Writer, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	w.Write(b)
	w.WriteByte('\n')
}
