// kstatus: what Flux's `wait: true` and health checks (sigs.k8s.io/cli-utils kstatus) make of
// Kubernetes objects. Reads JSON or YAML objects (or Lists) on stdin and prints one JSON line
// per object: {"kind","namespace","name","status","message"}. The test kit builds it from this
// module into its cache; nothing here is vendored.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

type result struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	Status    string `json:"status"`
	Message   string `json:"message"`
}

func main() {
	if err := run(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "kstatus:", err)
		os.Exit(1)
	}
}

func run(in io.Reader, out io.Writer) error {
	dec := utilyaml.NewYAMLOrJSONDecoder(bufio.NewReader(in), 4096)
	enc := json.NewEncoder(out)
	for {
		// Raw JSON (YAML is converted), then the apimachinery decoder: numbers stay int64, as
		// kstatus's generation accessors need.
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if len(raw) == 0 || string(raw) == "null" {
			continue
		}
		decoded, _, err := unstructured.UnstructuredJSONScheme.Decode(raw, nil, nil)
		if err != nil {
			return err
		}
		var objects []unstructured.Unstructured
		switch o := decoded.(type) {
		case *unstructured.UnstructuredList:
			objects = o.Items
		case *unstructured.Unstructured:
			objects = []unstructured.Unstructured{*o}
		default:
			return fmt.Errorf("unexpected object %T", decoded)
		}
		for i := range objects {
			o := &objects[i]
			res, err := status.Compute(o)
			if err != nil {
				return fmt.Errorf("%s %s/%s: %w", o.GetKind(), o.GetNamespace(), o.GetName(), err)
			}
			if err := enc.Encode(result{
				Kind:      o.GetKind(),
				Namespace: o.GetNamespace(),
				Name:      o.GetName(),
				Status:    res.Status.String(),
				Message:   res.Message,
			}); err != nil {
				return err
			}
		}
	}
}
