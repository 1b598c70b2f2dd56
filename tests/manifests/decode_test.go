package manifests

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/nexovue/otelcol-nexovue/tests/testenv"
)

// object is one decoded Kubernetes document.
type object struct {
	File string // relative to the repository root
	Kind string
	Name string
	Obj  any
}

// newTyped returns an empty object of the k8s.io/api type for apiVersion and
// kind, or nil for a kind these manifests are not expected to hold.
func newTyped(apiVersion, kind string) any {
	switch apiVersion + "/" + kind {
	case "v1/Namespace":
		return &corev1.Namespace{}
	case "v1/ServiceAccount":
		return &corev1.ServiceAccount{}
	case "v1/ConfigMap":
		return &corev1.ConfigMap{}
	case "v1/Service":
		return &corev1.Service{}
	case "v1/Secret":
		return &corev1.Secret{}
	case "apps/v1/DaemonSet":
		return &appsv1.DaemonSet{}
	case "apps/v1/Deployment":
		return &appsv1.Deployment{}
	case "rbac.authorization.k8s.io/v1/ClusterRole":
		return &rbacv1.ClusterRole{}
	case "rbac.authorization.k8s.io/v1/ClusterRoleBinding":
		return &rbacv1.ClusterRoleBinding{}
	case "scheduling.k8s.io/v1/PriorityClass":
		return &schedulingv1.PriorityClass{}
	case "autoscaling/v2/HorizontalPodAutoscaler":
		return &autoscalingv2.HorizontalPodAutoscaler{}
	case "policy/v1/PodDisruptionBudget":
		return &policyv1.PodDisruptionBudget{}
	case "networking.k8s.io/v1/NetworkPolicy":
		return &networkingv1.NetworkPolicy{}
	}
	return nil
}

var docSeparator = regexp.MustCompile(`(?m)^---[ \t]*$`)

// strictJSON decodes JSON into v as the API server does: field names match
// case-sensitively (encoding/json alone would take hostPid for hostPID), and
// unknown or duplicate fields are errors.
func strictJSON(data []byte, v any) error {
	strictErrs, err := kjson.UnmarshalStrict(data, v)
	if err != nil {
		return err
	}
	return errors.Join(strictErrs...)
}

// decodeDocuments decodes every document of a multi-document YAML stream
// strictly: duplicate keys, unknown fields and unknown kinds are errors.
func decodeDocuments(name string, data []byte) ([]object, error) {
	var out []object
	for i, doc := range docSeparator.Split(string(data), -1) {
		js, err := yaml.YAMLToJSONStrict([]byte(doc))
		if err != nil {
			return nil, fmt.Errorf("%s document %d: %w", name, i, err)
		}
		if string(js) == "null" {
			continue // empty document (comments only)
		}
		var tm metav1.TypeMeta
		if err := json.Unmarshal(js, &tm); err != nil {
			return nil, fmt.Errorf("%s document %d: %w", name, i, err)
		}
		typed := newTyped(tm.APIVersion, tm.Kind)
		if typed == nil {
			return nil, fmt.Errorf("%s document %d: unexpected kind %s/%s", name, i, tm.APIVersion, tm.Kind)
		}
		if err := strictJSON(js, typed); err != nil {
			return nil, fmt.Errorf("%s document %d (%s): %w", name, i, tm.Kind, err)
		}
		meta, ok := typed.(metav1.Object)
		if !ok || meta.GetName() == "" {
			return nil, fmt.Errorf("%s document %d (%s): no metadata.name", name, i, tm.Kind)
		}
		out = append(out, object{File: name, Kind: tm.Kind, Name: meta.GetName(), Obj: typed})
	}
	return out, nil
}

// kustomization is the part of kustomize's Kustomization these manifests
// use; anything else in a kustomization.yaml is an error.
type kustomization struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Resources  []string `json:"resources"`
	Patches    []struct {
		Path   string `json:"path,omitempty"`
		Patch  string `json:"patch,omitempty"`
		Target *struct {
			Group   string `json:"group,omitempty"`
			Version string `json:"version,omitempty"`
			Kind    string `json:"kind,omitempty"`
			Name    string `json:"name,omitempty"`
		} `json:"target,omitempty"`
	} `json:"patches"`
}

func readKustomization(t *testing.T, path string) kustomization {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	js, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var k kustomization
	if err := strictJSON(js, &k); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if k.APIVersion != "kustomize.config.k8s.io/v1beta1" || k.Kind != "Kustomization" {
		t.Fatalf("%s: apiVersion/kind = %s/%s", path, k.APIVersion, k.Kind)
	}
	return k
}

// manifests decodes every Kubernetes manifest under distributions/kubernetes
// (all *.yaml but kustomization.yaml and the chart's values.yaml), failing
// the test on any error.
func manifests(t *testing.T) []object {
	t.Helper()
	root := testenv.RepoRoot(t)
	var all []object
	err := filepath.WalkDir(filepath.Join(root, "distributions", "kubernetes"), func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".yaml") || d.Name() == "kustomization.yaml" || d.Name() == "values.yaml" {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		objs, err := decodeDocuments(filepath.ToSlash(rel), data)
		if err != nil {
			return err
		}
		if len(objs) == 0 {
			return fmt.Errorf("%s holds no manifest", rel)
		}
		all = append(all, objs...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return all
}

// find returns the one object of kind and name from file (any file if "").
func find[T any](t *testing.T, objs []object, file, kind, name string) *T {
	t.Helper()
	var found []*T
	for _, o := range objs {
		if o.Kind == kind && o.Name == name && (file == "" || o.File == file) {
			found = append(found, o.Obj.(*T))
		}
	}
	if len(found) != 1 {
		t.Fatalf("want exactly one %s %q in %q, found %d", kind, name, file, len(found))
	}
	return found[0]
}
