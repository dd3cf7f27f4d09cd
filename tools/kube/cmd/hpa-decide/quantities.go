//go:build pyhpa_harness

package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/api/resource"
)

// quantityLine is what apimachinery (v0.37.2, the version k8s.io/kubernetes v1.37.2 requires) makes of one text:
// resource.ParseQuantity, then Quantity.String() (what kubectl prints) and Quantity.MilliValue() (what the HPA
// controller computes with). Error is ParseQuantity's, and the other fields are empty then.
type quantityLine struct {
	In     string `json:"in"`
	String string `json:"string,omitempty"`
	Milli  *int64 `json:"milli,omitempty"`
	Error  string `json:"error,omitempty"`
}

// quantities reads one JSON string per line from in (so any text, line breaks included, reaches ParseQuantity
// unchanged) and writes one quantityLine per line: pyhpa checks its ports of ParseQuantity, MilliValue and String
// (pyhpa.adapters.parse) against these on random texts (tests/test_upstream_decide.py).
func quantities(in io.Reader, out *bufio.Writer) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var text string
		if err := json.Unmarshal(sc.Bytes(), &text); err != nil {
			return fmt.Errorf("--quantities: a line is not a JSON string: %v", err)
		}
		line := quantityLine{In: text}
		q, err := resource.ParseQuantity(text)
		if err != nil {
			line.Error = err.Error()
		} else {
			milli := q.MilliValue()
			line.String, line.Milli = q.String(), &milli
		}
		writeJSON(out, line)
	}
	return sc.Err()
}
