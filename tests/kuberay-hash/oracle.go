package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"github.com/ray-project/kuberay/ray-operator/controllers/ray/utils"
	"sigs.k8s.io/yaml"
)

// object is the part of a manifest the oracle looks at.
type object struct {
	Kind     string `json:"kind"`
	Metadata struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec json.RawMessage `json:"spec"`
}

// hashFiles prints `file kind name v17-hash v162-hash` for every RayCluster and RayService in files. The
// spec is the one KubeRay hashes: a RayCluster's after the reconciler's defaulting (nil rayStartParams
// become empty maps), a RayService's rayClusterConfig with `suspend` cleared. v17-hash is KubeRay's
// GenerateJsonHash over the v1.7 shape (v17.go) muted as GenerateHashWithoutReplicasAndWorkersToDelete
// mutes it; v162-hash is that function itself, which only knows v1.6.2's fields.
func hashFiles(w io.Writer, files []string) error {
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		for _, doc := range splitDocuments(data) {
			var obj object
			if err := yaml.Unmarshal(doc, &obj); err != nil {
				return fmt.Errorf("%s: %w", file, err)
			}
			spec, ok, err := clusterSpec(obj)
			if err != nil {
				return fmt.Errorf("%s %s: %w", file, obj.Metadata.Name, err)
			}
			if !ok {
				continue
			}
			v17, v162, err := hashes(spec, obj.Kind == "RayCluster")
			if err != nil {
				return fmt.Errorf("%s %s: %w", file, obj.Metadata.Name, err)
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", file, obj.Kind, obj.Metadata.Name, v17, v162)
		}
	}
	return nil
}

func splitDocuments(data []byte) [][]byte {
	var docs [][]byte
	for _, doc := range bytes.Split(append([]byte("\n"), data...), []byte("\n---")) {
		if len(bytes.TrimSpace(doc)) > 0 {
			docs = append(docs, doc)
		}
	}
	return docs
}

// clusterSpec is the JSON of the RayClusterSpec an object carries, if it is a RayCluster or a RayService.
func clusterSpec(obj object) (json.RawMessage, bool, error) {
	switch obj.Kind {
	case "RayCluster":
		return obj.Spec, true, nil
	case "RayService":
		var spec struct {
			RayClusterConfig json.RawMessage `json:"rayClusterConfig"`
		}
		if err := json.Unmarshal(obj.Spec, &spec); err != nil {
			return nil, false, err
		}
		return spec.RayClusterConfig, true, nil
	}
	return nil, false, nil
}

func hashes(raw json.RawMessage, defaults bool) (string, string, error) {
	var v17 v17RayClusterSpec
	if err := json.Unmarshal(raw, &v17); err != nil {
		return "", "", err
	}
	var v162 rayv1.RayClusterSpec
	if err := json.Unmarshal(raw, &v162); err != nil {
		return "", "", err
	}
	if defaults {
		setDefaults(&v17, &v162)
	} else {
		v17.Suspend = nil
		v162.Suspend = nil
	}
	clearV17(&v17)
	a, err := utils.GenerateJsonHash(v17)
	if err != nil {
		return "", "", err
	}
	b, err := utils.GenerateHashWithoutReplicasAndWorkersToDelete(v162)
	return a, b, err
}

// setDefaults is what the RayCluster reconciler does to the spec before it hashes it.
func setDefaults(v17 *v17RayClusterSpec, v162 *rayv1.RayClusterSpec) {
	if v17.HeadGroupSpec.RayStartParams == nil {
		v17.HeadGroupSpec.RayStartParams = map[string]string{}
		v162.HeadGroupSpec.RayStartParams = map[string]string{}
	}
	for i := range v17.WorkerGroupSpecs {
		if v17.WorkerGroupSpecs[i].RayStartParams == nil {
			v17.WorkerGroupSpecs[i].RayStartParams = map[string]string{}
			v162.WorkerGroupSpecs[i].RayStartParams = map[string]string{}
		}
	}
}
